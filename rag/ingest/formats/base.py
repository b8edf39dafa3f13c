"""What the three readers share: their errors, the notes on what they left out, and escaping.

    protect("# 3 Paletten")      -> "\\\\# 3 Paletten"   (a document cannot invent a heading)
    join_blocks(["# A", "x"])    -> "# A\\n\\nx\\n"

Does not handle: reading any format (pdf.py, html.py, docx.py do).
"""
import dataclasses
import re
from collections import Counter

STRUCTURE = re.compile(r"^\s*(#{1,6}(\s|$)|```|~~~)")  # lines the chunker would read as a heading or a fence


class FormatError(Exception):
    """A document that cannot be converted; str(exc) is the German reason, without the file name."""


class ToolMissing(FormatError):
    """The external converter (pdftotext) is not installed; str(exc) names the install command."""


@dataclasses.dataclass
class Notes:
    """What a conversion left out, for the caller's warnings: hidden text by reason, PDF pages without text."""
    hidden: Counter = dataclasses.field(default_factory=Counter)  # rag/ingest/hidden.py reason -> count
    empty_pages: list = dataclasses.field(default_factory=list)  # 1-based PDF page numbers


def protect(line):
    """Escape a text line the chunker would take for a heading or a fence.

    Example: protect("# 3 Paletten") -> "\\\\# 3 Paletten"; protect("Text") -> "Text"
    """
    match = STRUCTURE.match(line)
    if not match:
        return line
    start = len(line) - len(line.lstrip())
    return line[:start] + "\\" + line[start:]


def join_blocks(blocks):
    """Blocks (already Markdown) separated by one blank line. Example: ["# A", "x"] -> "# A\\n\\nx\\n" """
    return "\n\n".join(b for b in blocks if b.strip()) + "\n"
