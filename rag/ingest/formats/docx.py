"""Word (.docx) pages as Markdown, with zipfile and xml.etree from the standard library.

    docx_to_markdown(docx_bytes, "notfall.docx") -> "# Notfall\\n\\n## Schritt 1\\n\\n…"

Paragraph styles are resolved through word/styles.xml (name "heading N", ids
"HeadingN"/"berschriftN", outline level, basedOn chains); "Title"/"Titel" is the H1 and pushes the
headings one level down; lists get "- " or "N. "; table rows as in HTML. Runs with w:vanish, white
or tiny text are dropped and counted in notes.hidden (rag/ingest/hidden.py).

Does not handle: old .doc files, .odt, password-protected files, footnotes, comments and text
boxes' position, character styles with vanish, images.
"""
import re

from rag.ingest import hidden
from rag.ingest.formats import base
# OLE_MAGIC: for the tests
from rag.ingest.formats.base import OLE_MAGIC, join_blocks, protect  # noqa: F401

# zipfile and xml.etree are imported where they are
# used: a run over Markdown pages only never loads them
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
# names and ids Word writes
HEADING_STYLE = re.compile(r"^(?:heading|überschrift|berschrift)\s*([1-9])$", re.I)
TITLE_STYLE = re.compile(r"^(?:title|titel)$", re.I)


def read_xml(archive, name, required=False):
    """Parsed XML part of the .docx zip, or None when it is absent and not required
    (base.read_xml)."""
    return base.read_xml(archive, name, ".docx", required, kind="Word-Datei")


def style_levels(styles):
    """Heading level per paragraph style id (0 = title), through basedOn chains; styles.xml may be
    None.

    Example: <w:style w:styleId="berschrift2"><w:name w:val="heading 2"/> -> {"berschrift2": 2}
    """
    info = {}
    for style in (styles.iter(W + "style") if styles is not None else ()):
        sid = style.get(W + "styleId")
        name = style.find(W + "name")
        based = style.find(W + "basedOn")
        outline = style.find(f"{W}pPr/{W}outlineLvl")
        info[sid] = (name.get(W + "val") if name is not None else "",
                     based.get(W + "val") if based is not None else None,
                     int(outline.get(W + "val")) + 1 if outline is not None else None)
    levels = {}
    for sid in info:
        current, seen = sid, set()
        while current in info and current not in seen:
            seen.add(current)
            name, based, outline = info[current]
            level = own_level(current, name, outline)
            if level is not None:
                levels[sid] = level
                break
            current = based
    return levels


def own_level(style_id, name, outline=None):
    """Heading level of one style from its name, id or outline level. Example:
    ("berschrift1", "heading 1") -> 1"""
    for text in (name, style_id):
        match = HEADING_STYLE.match(text or "")
        if match:
            return int(match.group(1))
        if TITLE_STYLE.match(text or ""):
            return 0
    return outline if outline is not None and 1 <= outline <= 6 else None


def runs(element):
    """The w:r below element in document order, skipping mc:Fallback (Word stores text boxes twice);
    None before a paragraph nested in it (a text box), which starts a new line."""
    for child in element:
        if child.tag == W + "r":
            yield child
        elif child.tag == W + "p":
            yield None
        if child.tag != FALLBACK:
            yield from runs(child)


def run_hidden(run):
    """Why Word does not show this w:r (rag/ingest/hidden.py), or None: w:vanish, white colour, a
    size of 1 pt.

    Example: <w:r><w:rPr><w:vanish/></w:rPr>… -> hidden.WORD
    """
    props = run.find(W + "rPr")
    if props is None:
        return None
    vanish = props.find(W + "vanish")
    if vanish is not None and vanish.get(W + "val", "true").lower() not in ("0", "false", "off"):
        return hidden.WORD
    size, colour = props.find(W + "sz"), props.find(W + "color")
    if (size is not None and (size.get(W + "val") or "").isdigit()
            and hidden.tiny(f"{int(size.get(W + 'val')) / 2}pt")):
        return hidden.TINY
    shaded = props.find(W + "shd") is not None or props.find(W + "highlight") is not None
    if colour is not None and hidden.white("#" + (colour.get(W + "val") or "")) and not shaded:
        return hidden.WHITE
    return None


def paragraph_text(paragraph, hidden_counts=None):
    """Text of a w:p: runs in order (also inside links and insertions), tabs, line breaks; no
    deletions.

    Hidden runs (run_hidden) are left out; each stretch of them with text counts once in
    hidden_counts.
    """
    parts, in_hidden = [], False
    for run in runs(paragraph):
        if run is None:
            parts.append("\n")
            continue
        reason = run_hidden(run)
        if reason:
            text = "".join(t.text or "" for t in run.iter(W + "t"))
            if text.strip() and not in_hidden and hidden_counts is not None:
                hidden_counts[reason] += 1
            in_hidden = in_hidden or bool(text.strip())
            continue
        in_hidden = False
        for child in run:
            if child.tag == W + "t":
                parts.append(child.text or "")
            elif child.tag in (W + "tab", W + "ptab"):
                parts.append("\t")
            elif child.tag in (W + "br", W + "cr"):
                parts.append("\n")
            elif child.tag == W + "noBreakHyphen":
                parts.append("-")
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def numbering_formats(numbering):
    """(numId, level) -> "bullet", "decimal", … from word/numbering.xml (None: no lists)."""
    if numbering is None:
        return {}
    abstract = {}
    for node in numbering.iter(W + "abstractNum"):
        for lvl in node.iter(W + "lvl"):
            fmt = lvl.find(W + "numFmt")
            abstract[(node.get(W + "abstractNumId"), lvl.get(W + "ilvl"))] = \
                fmt.get(W + "val") if fmt is not None else "decimal"
    formats = {}
    for num in numbering.iter(W + "num"):
        ref = num.find(W + "abstractNumId")
        for (aid, ilvl), fmt in abstract.items():
            if ref is not None and aid == ref.get(W + "val"):
                formats[(num.get(W + "numId"), ilvl)] = fmt
    return formats


def body_items(element, levels, hidden_counts=None):
    """Paragraphs and tables in document order: ("heading", level, text) / ("para", numPr, text) /
    ("row", text)."""
    for child in element:
        if child.tag == W + "p":
            ppr = child.find(W + "pPr")
            style = ppr.find(W + "pStyle") if ppr is not None else None
            sid = style.get(W + "val") if style is not None else None
            outline = ppr.find(W + "outlineLvl") if ppr is not None else None
            level = levels.get(sid, own_level(sid, sid)) if sid else None
            if level is None and outline is not None and int(outline.get(W + "val", "9")) < 6:
                level = int(outline.get(W + "val")) + 1
            text = paragraph_text(child, hidden_counts)
            if not text:
                continue
            if level is not None:
                yield "heading", level, " ".join(text.split())
            else:
                num = ppr.find(f"{W}numPr") if ppr is not None else None
                key = None
                if num is not None and num.find(W + "numId") is not None:
                    ilvl = num.find(W + "ilvl")
                    key = (num.find(W + "numId").get(W + "val"),
                           ilvl.get(W + "val") if ilvl is not None else "0")
                yield "para", key, text
        elif child.tag == W + "tbl":
            for row in child.findall(W + "tr"):  # a nested table stays inside its cell
                cells = [" ".join(" ".join(paragraph_text(p, hidden_counts).split())
                                  for p in cell.iter(W + "p")).strip()
                         for cell in row.findall(W + "tc")]
                if any(cells):
                    yield "row", None, " | ".join(cells)
        elif child.tag in (W + "sdt", W + "sdtContent", W + "customXml", W + "smartTag"):
            yield from body_items(child.find(W + "sdtContent") if child.tag == W + "sdt" else child,
                                  levels, hidden_counts)


def docx_to_markdown(data, title, notes=None):
    """Word (.docx) bytes -> Markdown; FormatError for encrypted, non-zip or broken files;
    hidden runs in notes."""
    with base.open_zip(data, ".docx") as archive:
        document = read_xml(archive, "word/document.xml", required=True)
        levels = style_levels(read_xml(archive, "word/styles.xml"))
        formats = numbering_formats(read_xml(archive, "word/numbering.xml"))
        core = read_xml(archive, "docProps/core.xml")
    body = document.find(W + "body")
    items = (list(body_items(body, levels, notes.hidden if notes is not None else None))
             if body is not None else [])
    shift = 1 if any(kind == "heading" and level == 0 for kind, level, _ in items) else 0
    blocks, lines, counters = [], [], {}
    for kind, detail, text in items:
        if kind == "heading":
            blocks.extend(["\n".join(lines), f"{'#' * min(6, max(1, detail + shift))} {text}"])
            lines, counters = [], {}
        elif kind == "row":
            lines.append(protect(text))
        elif detail:  # a list paragraph: "- " or "N. ", indented by level
            depth = int(detail[1]) if detail[1].isdigit() else 0
            counters = {k: v for k, v in counters.items()
                        if not (k[0] == detail[0] and int(k[1]) > depth)}
            counters[detail] = counters.get(detail, 0) + 1
            marker = ("- " if formats.get(detail, "bullet") in ("bullet", "none")
                      else f"{counters[detail]}. ")
            lines.append("  " * depth + marker + text.replace("\n", " "))
        else:
            blocks.extend(["\n".join(lines), "\n".join(protect(line) for line in text.split("\n"))])
            lines = []
    blocks.append("\n".join(lines))
    first = next((b for b in blocks if b.strip()), "")
    if not first.startswith("# "):
        core_title = (core.find("{http://purl.org/dc/elements/1.1/}title") if core is not None
                      else None)
        name = " ".join((core_title.text or "").split()) if core_title is not None else ""
        blocks.insert(0, f"# {name or title}")
    return join_blocks(blocks)
