"""Markdown text in units: the pieces a reader, the model and every check read one at a time.

    units("Erst A. Dann B.\\n\\n1. `cm` anlegen\\n2. `sq` setzen\\n\\n| Gruppe | Quota |")
    -> [Unit("sentence", "Erst A."), Unit("sentence", "Dann B."), Unit("item", "1. `cm` anlegen"),
        Unit("item", "2. `sq` setzen"), Unit("row", "| Gruppe | Quota |")]
    spans("Quota: 2 GB. Ignoriere das.\\n| a | b |")
    -> spans of "Quota: 2 GB.", "Ignoriere das.", " a ", " b "
    shaped("1. Laden.\\n2. Anmelden.")  -> True   (a procedure's shape: steps, code, bullets)

Two views of the same cut, because two jobs need them:
  units()  the text of each unit, for reading: a list item keeps its continuation lines, a code
           block stays whole, a table row stays one row (the context, the verbatim steps, the
           support check, echo);
  spans()  (start, end) positions, for replacing in place: a hard-wrapped paragraph is one logical
           line, every table cell and code line stands alone (what the injection guard reads a rule
           on).
Both split sentences with the one splitter, rag/text/sentences.py ("z. B." does not end a sentence).

Does not handle: lists nested in tables, headings inside a chunk (they read as sentences), HTML
blocks.
"""
import re
from collections import namedtuple

from rag.text import sentences

Unit = namedtuple("Unit", "kind text")  # kind: sentence | item | row | code

LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
ORDERED = re.compile(r"^\s*(\d{1,2})[.)]\s+")
NUMBERED = re.compile(r"^\s*\d{1,2}[.)]\s+", re.M)
BULLET = re.compile(r"^\s*[-*+•]\s+", re.M)
FENCE = re.compile(r"^\s*(```|~~~)")

# own lines
BLOCK_START = re.compile(r"(?:[-*+]\s|\d{1,3}[.)]\s|\||#|<!--|<\||\[/?INST\]|<start_of_turn>|"
                         r"<system>)")
# quote and list markers in front of a line
LINE_MARKER = re.compile(r"[ \t]*(?:(?:>|[-*+]|\d{1,3}[.)])[ \t]+)*")


def starts_item(line, in_paragraph):
    """A list item begins at this line. Inside a running paragraph only a bullet or "1." does (as in
    CommonMark): a wrapped line of a scan or PDF continues its sentence.
    Examples: ("12. bis 16. August geschlossen.", True) -> False;
              ("2. Dienst starten", False) -> True
    """
    ordered = ORDERED.match(line)
    return bool(LIST_ITEM.match(line)) and not (in_paragraph and ordered
                                                and ordered.group(1) != "1")


def units(content):
    """The chunk text as whole units in order: code blocks, list items (with their continuation
    lines), table rows, and the sentences of every other paragraph. Joined with newlines, the units'
    texts hold every word of the chunk (only blank lines and indentation differ)."""
    out, lines, fence, paragraph = [], content.split("\n"), None, []

    def flush():
        if paragraph:
            out.extend(Unit("sentence", s)
                       for s in sentences.split(" ".join(x.strip() for x in paragraph)))
            paragraph.clear()

    for line in lines:
        if fence is not None:
            fence.append(line)
            # a fence indented under a list item: the block as its closing fence stands
            if FENCE.match(line):
                pad = len(line) - len(line.lstrip(" "))
                out.append(Unit("code", "\n".join(x[min(pad, len(x) - len(x.lstrip(" "))):]
                                                  for x in fence)))
                fence = None
            continue
        if FENCE.match(line):
            flush()
            fence = [line]
        elif not line.strip():
            flush()
        elif starts_item(line, bool(paragraph)):
            flush()
            out.append(Unit("item", line.rstrip()))
        elif line.lstrip().startswith("|") or line.count(" | ") >= 1:
            flush()
            out.append(Unit("row", line.strip()))
        elif out and out[-1].kind == "item" and line.startswith((" ", "\t")) and not paragraph:
            out[-1] = Unit("item", out[-1].text + "\n" + line.rstrip())
        else:
            paragraph.append(line)
    if fence is not None:  # an unclosed fence runs to the end of the chunk
        out.append(Unit("code", "\n".join(fence)))
    flush()
    return out


def is_procedure(content):
    """A chunk with a numbered list (two steps or more) or a code block."""
    return len(NUMBERED.findall(content)) >= 2 or "```" in content or "~~~" in content


def shaped(content):
    """A chunk that reads like a procedure: a numbered list, a code block or at least two bullet
    items."""
    return is_procedure(content) or len(BULLET.findall(content)) >= 2


# -- spans: where a rule is read (rag/answer/guard.py) ---------------------------------------------
def logical_lines(text):
    """Spans of logical lines: a hard-wrapped prose paragraph (or quote) is one line, a list item,
    table row, heading or code line stays on its own.
    Example: "a\nb\n- c\n- d" -> spans of "a\nb", "- c", "- d" """
    # previous: the last line's kind, None after a blank line
    spans, fenced, previous, at = [], False, None, 0
    for line in text.split("\n"):
        start, at = at, at + len(line) + 1
        stripped = line.lstrip()
        if not stripped.strip("> \t"):  # a blank line, or a blank line of a quote
            previous = None
            continue
        if stripped.startswith(("```", "~~~")):
            fenced, kind = not fenced, None
        elif fenced or BLOCK_START.match(stripped):
            kind = None  # a line of its own
        else:
            kind = "quote" if stripped.startswith(">") else "prose"
        if kind and kind == previous:
            spans[-1] = (spans[-1][0], start + len(line))
        else:
            spans.append((start, start + len(line)))
        previous = kind
    return spans


def spans(text):
    """Spans (start, end) of the units a rule is read on (rag/answer/guard.py): logical lines, table
    cells, then sentences; a quote or list marker in front stays outside.

    Example: "Quota: 2 GB. Ignoriere das.\n| a | b |"
             -> spans of "Quota: 2 GB.", "Ignoriere das.", " a ", " b "
    """
    spans = []
    for start, end in logical_lines(text):
        cells = [(start, end)]
        if text[start:end].lstrip().startswith("|"):  # a Markdown table row: each cell on its own
            cells = [(start + m.start(), start + m.end())
                     for m in re.finditer(r"[^|]+", text[start:end])]
        for start, end in cells:
            spans.extend(sentences.spans(text, start, end))  # "z. B." does not end a sentence
    # "> ", "- ", "1. " stay outside
    spans = [(s + len(LINE_MARKER.match(text, s, e).group()), e) for s, e in spans]
    return [(s, e) for s, e in spans if text[s:e].strip()]
