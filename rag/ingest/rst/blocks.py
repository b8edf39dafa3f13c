"""reST body elements as Markdown lines: titles, paragraphs, literal blocks, lists, line blocks.

    convert(["Quota", "=====", "", "Befehl::", "", "   quota -s", "", "#. eins", "#. zwei"], page)
    -> ["# Quota", "", "Befehl:", "```", "quota -s", "```", "", "1. eins", "2. zwei"]

One reader per element, tried in order at each line; indented blocks (quotes, list item bodies)
are read with convert() again, so elements nest. Explicit markup (".. …") goes to directives.py,
tables to tables.py, inline markup to inline.py. A paragraph ending in "::" is followed by a
literal block (a ``` fence); an indented block after a paragraph line is its definition (or a
quote), dedented. A list item is one paragraph with its code, so a step keeps its command.

Does not handle: option lists, quoted literal blocks ("> " without indentation), doctest blocks,
letter and roman enumerators other than "a)" and "(a)".
"""
import re

from rag.ingest import markup
from rag.ingest.formats.base import protect
from rag.ingest.rst import directives, tables
from rag.ingest.rst.headings import adornment, heading_at
from rag.ingest.rst.inline import inline

BULLET = re.compile(r"^([-*+•‣⁃])(?: +(.*)|$)")
ENUM = re.compile(r"^(?:(\d+|#)([.)])|([a-z])\)|\((\d+|#|[a-z])\))(?: +(.*)|$)")  # 1. #. a) (a)
FIELD = re.compile(r"^:([^:\s`][^:`]*):(?: +(.*)|$)")  # :Autor: Meier (a field, not a :role:`…`)
EXPLICIT = re.compile(r"^\.\.(?: |$)")
GRID = re.compile(r"^\+[-=+]+\+\s*$")
SIMPLE = re.compile(r"^=+(?: +=+)+\s*$")
PAGE_FIELDS = {"orphan", "tocdepth", "nocomments", "nosearch", "hide-toc"}  # page settings, no text


def indent(line):
    return len(line) - len(line.lstrip(" "))


def dedent(lines):
    """Lines less their common indentation. Example: ["  a", "", "    b"] -> ["a", "", "  b"]"""
    width = min((indent(line) for line in lines if line.strip()), default=0)
    return [line[width:] for line in lines]


def block_end(lines, start):
    """Index after the indented lines from `start` (blank lines inside kept, trailing ones not)."""
    end = start
    for i in range(start, len(lines)):
        if lines[i].strip() and not lines[i][0].isspace():
            break
        if lines[i].strip():
            end = i + 1
    return end


def nested(lines, page):
    """An indented block's lines read as a document of their own (quote, directive content)."""
    return convert(dedent(lines), page)


# -- the readers: each returns (Markdown lines, index after the element) or None -----------------
def read_heading(lines, i, page):
    found = heading_at(lines, i)
    if not found:
        return None
    title, style, end = found
    return ["#" * page.styles.level(style) + " " + inline(title, page)], end


def read_explicit(lines, i, page):
    if not EXPLICIT.match(lines[i]):
        return None
    end = block_end(lines, i + 1)
    body = dedent(lines[i + 1:end])
    return directives.explicit(lines[i], body, page, lambda inner: nested(inner, page)), end


def read_table(lines, i, page):
    if GRID.match(lines[i]):
        end = i
        while end < len(lines) and lines[end].strip() and lines[end][0] in "+|":
            end += 1
        return tables.grid(lines[i:end], lambda cell: inline(cell, page)), end
    if SIMPLE.match(lines[i]):
        end = tables.simple_end(lines, i)
        return tables.simple(lines[i:end], lambda cell: inline(cell, page)), end
    return None


def read_line_block(lines, i, page):
    if not (lines[i] == "|" or lines[i].startswith("| ")):
        return None
    out = []
    while i < len(lines) and lines[i].strip():
        if lines[i].startswith("|"):
            out.append(lines[i][1:].strip())
        elif lines[i][0].isspace() and out:
            out[-1] += " " + lines[i].strip()
        else:
            break
        i += 1
    return [protect(inline(line, page)) for line in out], i


def read_indented(lines, i, page):
    if not lines[i][0].isspace():
        return None
    end = block_end(lines, i)
    return nested(lines[i:end], page), end


def read_transition(lines, i, page):
    return ([], i + 1) if adornment(lines[i]) else None


def read_field(lines, i, page):
    field = FIELD.match(lines[i])
    if not field:
        return None
    end = block_end(lines, i + 1)
    value = " ".join([field.group(2) or ""] + [line.strip() for line in lines[i + 1:end]]).strip()
    if field.group(1).strip().lower() in PAGE_FIELDS:
        return [], end
    return [protect(inline(f"{field.group(1).strip()}: {value}", page))], end


def item_marker(line):
    """(kind, marker, text) of a list item line, else None.

    Example: "#. eins" -> ("#.", "#.", "eins"); "- a" -> ("-", "-", "a");
             "3. drei" -> ("1.", "3.", "drei")
    """
    bullet = BULLET.match(line)
    if bullet:
        return bullet.group(1), "-", bullet.group(2) or ""
    enum = ENUM.match(line)
    if not enum:
        return None
    text = enum.group(5) or ""
    if enum.group(1):
        kind = ("#" if enum.group(1) == "#" else "1") + enum.group(2)
        return kind, enum.group(1) + enum.group(2), text
    if enum.group(3):
        return "a)", enum.group(3) + ")", text
    return "(a)", f"({enum.group(4)})", text


def item_body(lines, i, end, text):
    """An item's lines as a document of their own: the text after its marker, then its indented
    lines less the column that text starts at (deeper lines stay indented: a nested list or quote).

    Example: (["* Admins:", "     * root"], 0, 2, "Admins:") -> ["Admins:", "   * root"]
    """
    rest = lines[i + 1:end]
    if text:
        column = len(lines[i]) - len(text)
    else:
        column = min((indent(line) for line in rest if line.strip()), default=0)
    return [text] + [line[min(column, indent(line)):] for line in rest]


def same_list(line, kind):
    """Does this line start an item of the list of `kind` ("-", "1.", "#.", "a)" …)?"""
    found = item_marker(line)
    return bool(found) and found[0].strip("#1") == kind.strip("#1")


def read_list(lines, i, page):
    first = item_marker(lines[i])
    if not first:
        return None
    kind, out, number = first[0], [], 0
    while i < len(lines) and same_list(lines[i], kind):
        _, marker, text = item_marker(lines[i])
        end = block_end(lines, i + 1)
        number = int(marker[:-1]) if marker[:-1].isdigit() else number + 1
        marker = f"{number}{marker[-1]}" if marker[0] == "#" else marker
        body = markup.one_paragraph(convert(item_body(lines, i, end, text), page))  # with its code
        if body:
            pad = " " * (len(marker) + 1)
            out += [f"{marker} {body[0]}"] + [pad + line if line else "" for line in body[1:]]
        i, loose = end, end < len(lines) and not lines[end].strip()
        while i < len(lines) and not lines[i].strip():
            i += 1
        if loose and i < len(lines) and item_marker(lines[i]):
            out.append("")
    return out, i


def read_paragraph(lines, i, page):
    start = i
    while i < len(lines) and lines[i].strip() and not lines[i][0].isspace():
        if i > start and (EXPLICIT.match(lines[i]) or heading_at(lines, i)):
            break
        i += 1
    text = inline("\n".join(line.rstrip() for line in lines[start:i]), page)
    out = [protect(line) for line in literal_marker(text).split("\n") if line.strip()]
    if not text.endswith("::"):
        return out, i
    after = i
    while after < len(lines) and not lines[after].strip():
        after += 1
    if after < len(lines) and lines[after][0].isspace():
        end = block_end(lines, after)
        out += directives.fence(lines[after:end])
        i = end
    return out, i


def literal_marker(text):
    """A paragraph's closing "::" as Sphinx shows it.

    Example: "Befehl::" -> "Befehl:"; "Befehl ::" -> "Befehl"; "::" -> ""
    """
    if not text.endswith("::"):
        return text
    if text.strip() == "::":
        return ""
    return text[:-3].rstrip() if text[-3].isspace() else text[:-1]


READERS = (read_heading, read_explicit, read_table, read_line_block, read_indented, read_transition,
           read_list, read_field, read_paragraph)


def convert(lines, page):
    """Markdown lines of reST `lines` (tabs expanded, no common indentation), blocks apart by one
    blank line."""
    out, i = [], 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        for reader in READERS:
            found = reader(lines, i, page)
            if found:
                break
        produced, i = found
        while produced and not produced[-1].strip():
            produced = produced[:-1]
        while produced and not produced[0].strip():
            produced = produced[1:]
        if produced:
            out += ([""] if out else []) + produced
    return out
