"""OpenDocument (.odt, .ods, .odp) as Markdown, with zipfile and xml.etree, as Word is read.

    odf_to_markdown(odt_bytes, "notfall.odt")
    -> "# Notfall\\n\\n## Ablauf\\n\\n1. Ruhe bewahren\\n…"
    odf_to_markdown(ods_bytes, "telefon.ods")
    -> "# telefon.ods\\n\\n## Tabelle1\\n\\n…\\n\\n### Zeile 2\\n\\nName: Meier | …"
    odf_to_markdown(odp_bytes, "kurs.odp")
    -> "# kurs.odp\\n\\n## Folie 1: Start\\n\\n…\\n\\nNotizen: …"

Text (.odt): text:h gives the heading level (text:outline-level), a paragraph in the style "Title"
is the H1 and pushes the headings one level down; lists get "- " or "N. " (by their list style);
table rows are "cell | cell". Spreadsheets (.ods): one section per sheet, one "### Zeile N" unit per
row with its column headers (base.sheet_blocks); repeated rows and cells are expanded (empty ones
only counted). Presentations (.odp): "## Folie N: title", the text frames, then "Notizen: …".
Hidden text is dropped and counted in notes.hidden (rag/ingest/hidden.py): hidden-text and
hidden-paragraph fields, sections with text:display="none", spans whose style says display none,
white or tiny text, hidden sheets (table:display="false"), rows and columns (table:visibility
"collapse" or "filter"), hidden slides (presentation:visibility="hidden") with their notes.

Does not handle: flat XML files (.fodt, .fods, .fodp), password-protected files, footnotes and
comments (dropped), tracked deletions (dropped), styles from styles.xml for hidden text (automatic
styles only), number formats (a cell's shown text is used), drawings and frames inside text.
"""
from rag.ingest import hidden
from rag.ingest.formats import base
from rag.ingest.formats.base import FormatError, join_blocks, protect

NS = {"office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
      "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
      "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
      "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
      "fo": "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0",
      "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
      "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"}
# a row or cell with text repeated more often than this is cut here (LibreOffice repeats empties)
MAX_REPEAT = 1000
# dropped silently inside text (comments, footnotes, deletions)
SKIP = {"office:annotation", "office:annotation-end", "text:note", "text:tracked-changes",
        "text:bookmark-ref", "draw:frame", "text:sequence-decls"}
HIDDEN_FIELDS = {"text:hidden-text", "text:hidden-paragraph"}
HIDDEN_ROWS = ("collapse", "filter")


def q(name):
    """"text:p" -> "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}p" """
    prefix, local = name.split(":")
    return f"{{{NS[prefix]}}}{local}"


def attr(node, name, default=None):
    return node.get(q(name), default)


def style_info(content):
    """{style name: (hidden reason or None, parent, table/page hidden?)} from the automatic styles;
    list styles -> ordered? as {"list:" + name: True/False}."""
    info = {}
    styles = content.find(q("office:automatic-styles"))
    for style in (styles if styles is not None else ()):
        name = attr(style, "style:name")
        if style.tag == q("text:list-style"):
            first = next(iter(style), None)
            info["list:" + (name or "")] = (first is not None
                                            and first.tag == q("text:list-level-style-number"))
            continue
        reason, shown = None, True
        for props in style:
            if props.tag == q("style:text-properties"):
                reason = text_hidden(props)
            elif props.tag == q("style:table-properties"):
                shown = attr(props, "table:display", "true") != "false"
            elif props.tag == q("style:drawing-page-properties"):
                shown = attr(props, "presentation:visibility", "visible") != "hidden"
        info[name] = (reason, attr(style, "style:parent-style-name"), shown)
    return info


def text_hidden(props):
    """Why text with these style:text-properties is not shown: display none, tiny size, white (no
    background)."""
    if attr(props, "text:display") in ("none", "condition"):
        return hidden.OFFICE
    if hidden.tiny((attr(props, "fo:font-size") or "").replace(" ", "")):
        return hidden.TINY
    if (hidden.white(attr(props, "fo:color"))
            and attr(props, "fo:background-color") in (None, "transparent")):
        return hidden.WHITE
    return None


class Reader:
    """Walks one content.xml; hidden counts go to `counts`, style facts come from style_info."""

    def __init__(self, content, counts):
        self.styles, self.counts = style_info(content), counts

    def style(self, node, family="text:style-name"):
        return self.styles.get(attr(node, family) or "", (None, None, True))

    def is_title(self, node):
        name = attr(node, "text:style-name") or ""
        return name == "Title" or self.style(node)[1] == "Title"

    def inline(self, node, out, in_hidden=None):
        """Append the text of node's children to out: spans, spaces, tabs, line breaks; hidden runs
        counted."""
        for child in node:
            tag = short(child.tag)
            reason = (hidden.OFFICE if tag in HIDDEN_FIELDS else self.style(child)[0]
                      if tag == "text:span" else None)
            if tag in SKIP:
                pass
            elif reason:
                if "".join(child.itertext()).strip() or attr(child, "text:string-value"):
                    self.counts[reason] += 1
            elif tag == "text:s":
                out.append(" " * int(attr(child, "text:c", "1")))
            elif tag == "text:tab":
                out.append("\t")
            elif tag == "text:line-break":
                out.append("\n")
            else:
                out.append(child.text or "")
                self.inline(child, out)
            out.append(child.tail or "")

    def text(self, node):
        """A paragraph's text, spaces collapsed per line; "" when its own style hides it
        (counted)."""
        reason = self.style(node)[0] or (hidden.OFFICE if any(
            attr(f, "text:is-hidden", "true") != "false"
            for f in node.iter(q("text:hidden-paragraph"))) else None)
        if reason:
            self.counts[reason] += bool("".join(node.itertext()).strip())
            return ""
        out = [node.text or ""]
        self.inline(node, out)
        lines = (" ".join(line.split()) for line in "".join(out).split("\n"))
        return "\n".join(line for line in lines if line)

    def items(self, element, depth=0, ordered=False):
        """("heading", level, text) / ("line", None, text) / ("block", None, text) of a text body,
        in order."""
        counter = 0
        for child in element:
            tag = short(child.tag)
            if tag == "text:h":
                text = self.text(child)
                if text:
                    yield ("heading", int(attr(child, "text:outline-level", "1") or 1),
                           " ".join(text.split()))
            elif tag == "text:p":
                text = self.text(child)
                if text and self.is_title(child):
                    yield "heading", 0, " ".join(text.split())
                elif text:
                    yield "block", None, "\n".join(protect(line) for line in text.split("\n"))
            elif tag == "text:list":
                ordered_here = self.styles.get("list:" + (attr(child, "text:style-name") or ""),
                                               ordered)
                yield from self.items(child, depth + 1, ordered_here)
            elif tag in ("text:list-item", "text:list-header"):
                counter += 1
                for n, (kind, level, text) in enumerate(self.items(child, depth, ordered)):
                    if kind == "block" and not n:
                        marker = f"{counter}. " if ordered else "- "
                        yield "line", None, "  " * (depth - 1) + marker + text.replace("\n", " ")
                    else:
                        yield kind, level, text
            elif tag == "table:table":
                for cells in self.table_rows(child, hidden_ok=True):
                    if any(cells):
                        yield "line", None, protect(" | ".join(cells))
            elif tag == "text:section" and attr(child, "text:display") in ("none", "condition"):
                self.counts[hidden.OFFICE] += bool("".join(child.itertext()).strip())
            elif tag in HIDDEN_FIELDS:
                self.counts[hidden.OFFICE] += bool("".join(child.itertext()).strip())
            elif tag in ("text:section", "text:index-body", "office:text", "draw:text-box",
                         "text:soft-page-break"):
                yield from self.items(child, depth, ordered)

    def cells(self, row):
        """The shown texts of a table row's cells, repeated cells expanded (empty repeats as one
        "")."""
        out = []
        for cell in row:
            if short(cell.tag) not in ("table:table-cell", "table:covered-table-cell"):
                continue
            text = " ".join(" ".join(self.text(p).split()) for p in cell.iter(q("text:p"))).strip()
            repeat = int(attr(cell, "table:number-columns-repeated", "1") or 1)
            out.extend([text] * (min(repeat, MAX_REPEAT) if text else min(repeat, 1)))
        return out

    def table_rows(self, table, hidden_ok=False):
        """Rows of a table as cell lists; with hidden_ok False, (row number, cells) of the visible
        rows only, hidden rows and columns counted."""
        columns = []
        for col in table.iter(q("table:table-column")):
            repeat = min(int(attr(col, "table:number-columns-repeated", "1") or 1), MAX_REPEAT * 16)
            columns.extend([attr(col, "table:visibility", "visible") in HIDDEN_ROWS] * repeat)
        number, hidden_columns = 0, set()
        for row in table.iter(q("table:table-row")):
            cells = self.cells(row)
            repeat = int(attr(row, "table:number-rows-repeated", "1") or 1)
            if not any(cells):
                number += repeat
                continue
            for _ in range(min(repeat, MAX_REPEAT)):
                number += 1
                if hidden_ok:
                    yield cells
                elif attr(row, "table:visibility", "visible") in HIDDEN_ROWS:
                    self.counts[hidden.ROW] += 1
                else:
                    hidden_columns.update(i for i, c in enumerate(cells) if c and i < len(columns)
                                          and columns[i])
                    yield number, ["" if i < len(columns) and columns[i] else c
                                   for i, c in enumerate(cells)]
        if hidden_columns:
            self.counts[hidden.COLUMN] += len(hidden_columns)

    def sheets(self, body):
        blocks = []
        for table in body.iter(q("table:table")):
            if not self.style(table, "table:style-name")[2]:
                self.counts[hidden.SHEET] += 1
                continue
            blocks.extend(base.sheet_blocks(attr(table, "table:name", ""),
                                            list(self.table_rows(table))))
        return blocks

    def slides(self, body):
        blocks = []
        for number, page in enumerate(body.iter(q("draw:page")), 1):
            if not self.style(page, "draw:style-name")[2]:
                self.counts[hidden.SLIDE] += 1
                continue
            title, lines, said = "", [], []
            for frame in page.iter(q("draw:frame")):
                kind = attr(frame, "presentation:class", "")
                box = frame.find(q("draw:text-box"))
                texts = [text for _, _, text in self.items(box)] if box is not None else []
                tables = [protect(" | ".join(c)) for t in frame.iter(q("table:table"))
                          for c in self.table_rows(t, hidden_ok=True) if any(c)]
                if kind == "title" and not title:
                    title = " ".join(" ".join(texts).split())
                elif kind == "notes":
                    said.extend(texts)
                elif kind not in ("page", "page-number", "date-time", "footer", "header"):
                    lines.extend(texts + tables)
            blocks += [f"## Folie {number}: {title}" if title else f"## Folie {number}",
                       "\n".join(lines)]
            if said:
                blocks.append(protect("Notizen: " + " ".join(" ".join(said).split())))
        return blocks


def short(tag):
    """"{urn:…:text:1.0}p" -> "text:p" (tags outside NS stay as they are)."""
    for prefix, uri in NS.items():
        if tag.startswith("{" + uri + "}"):
            return f"{prefix}:{tag[len(uri) + 2:]}"
    return tag


def text_blocks(items):
    """Markdown blocks of a text document's items; a "Title" paragraph (level 0) pushes headings
    down."""
    shift = 1 if any(kind == "heading" and level == 0 for kind, level, _ in items) else 0
    blocks, lines = [], []
    for kind, level, text in items:
        if kind == "heading":
            blocks.extend(["\n".join(lines), f"{'#' * min(6, max(1, level + shift))} {text}"])
            lines = []
        elif kind == "line":
            lines.append(text)
        else:
            blocks.extend(["\n".join(lines), text])
            lines = []
    return blocks + ["\n".join(lines)]


def odf_to_markdown(data, title, notes=None, suffix=".odt"):
    """OpenDocument bytes -> Markdown; FormatError for encrypted, non-zip or broken files;
    hidden text in notes."""
    counts = notes.hidden if notes is not None else hidden.Counter()
    with base.open_zip(data, suffix) as archive:
        if any(info.filename == "META-INF/manifest.xml"
               and b"encryption-data" in base.read_part(archive, info, suffix)
               for info in archive.infolist()):
            raise FormatError(f"verschlüsselt (Passwortschutz) – ohne Passwort als {suffix} "
                              "speichern")
        content = base.read_xml(archive, "content.xml", suffix, required=True,
                                kind="OpenDocument-Datei")
        meta = base.read_xml(archive, "meta.xml", suffix)
    reader = Reader(content, counts)
    body = content.find(q("office:body"))
    if body is None:
        raise FormatError(f"defekt (content.xml ohne office:body) – als {suffix} neu speichern")
    kind = next((short(child.tag) for child in body), "")
    if kind == "office:spreadsheet":
        blocks = reader.sheets(body)
    elif kind == "office:presentation":
        blocks = reader.slides(body)
    else:
        blocks = text_blocks(list(reader.items(body)))
    first = next((b for b in blocks if b.strip()), "")
    if not first.startswith("# "):
        blocks.insert(0, f"# {base.document_title(meta, title)}")
    return join_blocks(blocks)

