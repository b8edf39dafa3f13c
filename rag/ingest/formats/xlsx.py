"""Excel workbooks (.xlsx) as Markdown, with zipfile and xml.etree: one section per sheet, one unit
per row.

    xlsx_to_markdown(xlsx_bytes, "telefon.xlsx")
    -> "# telefon.xlsx\\n\\n## Telefonliste\\n\\nSpalten: Name | Durchwahl
        \\n\\n### Zeile 2\\n\\nName: Meier | Durchwahl: 4711\\n…"

Each visible sheet becomes "## sheet name"; its first row with text holds the column headers, every
later row becomes "### Zeile N" with "Header: value | …" (base.sheet_blocks), so a question about
one row finds that row and the citation names sheet and row (`telefon.xlsx › Telefonliste ›
Zeile 17`). Formulas give the value Excel or LibreOffice cached (<v>); shared strings, inline
strings, booleans (WAHR/FALSCH), errors (#DIV/0!) and dates (by the cell's number format, as
TT.MM.JJJJ) are read. Hidden sheets (state="hidden"/"veryHidden"), rows and columns (hidden="1" or
"true") are dropped and counted in notes.hidden (rag/ingest/hidden.py). Sheets are read with
iterparse, so 10,000 rows stay fast.

Does not handle: old .xls files, password-protected files, formulas without a cached value (empty),
number formats other than dates (numbers as stored, decimal comma), merged cells, charts, comments,
rows filtered by an AutoFilter that are not marked hidden.
"""
import datetime
import re

from rag.ingest import hidden
from rag.ingest.formats import base
from rag.ingest.formats.base import FormatError, join_blocks

S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PR = "{http://schemas.openxmlformats.org/package/2006/relationships}"
DATE_FORMATS = set(range(14, 23)) | {45, 46, 47}  # Excel's built-in date and time number formats
# a custom format with day/month/year letters (after quotes and [..])
DATE_CODE = re.compile(r"[dmyjt]", re.I)
CELL_REF = re.compile(r"^([A-Z]+)(\d+)$")
EPOCH = datetime.datetime(1899, 12, 30)  # Excel's day 0 (with its 1900 leap year bug folded in)


def flag(value):
    """Is an OOXML boolean attribute set? Excel writes "1", LibreOffice "true". Example: "true"
    -> True"""
    return (value or "").strip().lower() in ("1", "true")


def column_index(letters):
    """Spreadsheet letters -> 0-based index. Example: "A" -> 0, "AB" -> 27"""
    index = 0
    for letter in letters:
        index = index * 26 + ord(letter) - 64
    return index - 1


def shared_strings(root):
    """The shared string table; rich text runs joined, phonetic guides (rPh) left out."""
    if root is None:
        return []
    out = []
    for item in root.iter(S + "si"):
        out.append("".join(t.text or "" for child in item if child.tag != S + "rPh"
                           for t in child.iter(S + "t")))
    return out


def date_styles(styles):
    """Indexes of the cell formats (cellXfs) that show a date. Example: xf numFmtId="14" at index 3
    -> {3}"""
    if styles is None:
        return set()
    custom = set()
    for fmt in styles.iter(S + "numFmt"):
        code = re.sub(r'"[^"]*"|\[[^\]]*\]|\\.', "", fmt.get("formatCode") or "")
        if DATE_CODE.search(code):
            custom.add(int(fmt.get("numFmtId", "0")))
    xfs = styles.find(S + "cellXfs")
    return {i for i, xf in enumerate(xfs if xfs is not None else [])
            if int(xf.get("numFmtId", "0")) in DATE_FORMATS | custom}


def number_text(value, is_date=False):
    """A stored number as a German reader sees it. Example: "3.5" -> "3,5"; "45292", date
    -> "01.01.2024" """
    try:
        number = float(value)
    except ValueError:
        return value
    if is_date and 0 < number < 2958466:
        moment = EPOCH + datetime.timedelta(days=number)
        return moment.strftime("%d.%m.%Y" + (" %H:%M" if number % 1 else ""))
    return f"{number:.15g}".replace(".", ",")


def cell_text(cell, strings, dates):
    """The text a cell shows: cached value of a formula, shared or inline string, WAHR/FALSCH,
    error, number."""
    kind = cell.get("t", "n")
    if kind == "inlineStr":
        return "".join(t.text or "" for t in cell.iter(S + "t"))
    value = cell.find(S + "v")
    value = value.text if value is not None and value.text is not None else ""
    if not value:
        return ""
    if kind == "s":
        return strings[int(value)] if value.isdigit() and int(value) < len(strings) else ""
    if kind == "b":
        return "WAHR" if value.strip() == "1" else "FALSCH"
    if kind in ("str", "e", "d"):
        return value
    return number_text(value, int(cell.get("s", "0") or 0) in dates)


def sheet_rows(data, strings, dates, counts):
    """[(row number, [cell texts])] of one sheet's XML bytes, hidden rows and columns left out and
    counted."""
    import io
    from xml.etree import ElementTree
    rows, hidden_columns, hidden_with_text = [], set(), set()
    try:
        for _, element in ElementTree.iterparse(io.BytesIO(data)):
            if element.tag == S + "col" and flag(element.get("hidden")):
                hidden_columns.update(range(int(element.get("min", "1")) - 1,
                                            int(element.get("max", "1"))))
            elif element.tag == S + "row":
                number = int(element.get("r") or len(rows) + 1)
                cells = {}
                for position, cell in enumerate(element.iter(S + "c")):
                    match = CELL_REF.match(cell.get("r") or "")
                    cells[column_index(match.group(1)) if match else position] = (
                        cell_text(cell, strings, dates))
                if flag(element.get("hidden")):
                    counts[hidden.ROW] += any(v.strip() for v in cells.values())
                else:
                    hidden_with_text.update(i for i in hidden_columns if cells.get(i, "").strip())
                    width = max(cells, default=-1) + 1
                    rows.append((number,
                                 ["" if i in hidden_columns else cells.get(i, "")
                                  for i in range(width)]))
                element.clear()
    except (ElementTree.ParseError, ValueError) as exc:
        raise FormatError(f"defekt (Tabellenblatt: {exc}) – als .xlsx neu speichern")
    counts[hidden.COLUMN] += len(hidden_with_text)
    return rows


def sheet_paths(workbook, rels):
    """[(sheet name, zip path, hidden?)] in the workbook's order."""
    targets = {}
    for rel in (rels.iter(PR + "Relationship") if rels is not None else ()):
        target = rel.get("Target") or ""
        targets[rel.get("Id")] = target.lstrip("/") if target.startswith("/") else "xl/" + target
    out = []
    for sheet in workbook.iter(S + "sheet"):
        path = targets.get(sheet.get(R + "id"))
        if path:
            out.append((sheet.get("name") or "", path,
                        (sheet.get("state") or "visible") != "visible"))
    return out


def xlsx_to_markdown(data, title, notes=None):
    """Excel (.xlsx) bytes -> Markdown; FormatError for encrypted, non-zip or broken files;
    hidden parts in notes."""
    counts = notes.hidden if notes is not None else hidden.Counter()
    blocks = []
    with base.open_zip(data, ".xlsx") as archive:
        workbook = base.read_xml(archive, "xl/workbook.xml", ".xlsx", required=True,
                                 kind="Excel-Datei")
        rels = base.read_xml(archive, "xl/_rels/workbook.xml.rels", ".xlsx")
        strings = shared_strings(base.read_xml(archive, "xl/sharedStrings.xml", ".xlsx"))
        dates = date_styles(base.read_xml(archive, "xl/styles.xml", ".xlsx"))
        core = base.read_xml(archive, "docProps/core.xml", ".xlsx")
        for name, path, is_hidden in sheet_paths(workbook, rels):
            if is_hidden:
                counts[hidden.SHEET] += 1
                continue
            try:
                info = archive.getinfo(path)
            except KeyError:
                raise FormatError(f"defekt ({path} fehlt) – als .xlsx neu speichern")
            blocks.extend(base.sheet_blocks(
                name, sheet_rows(base.read_part(archive, info, ".xlsx"), strings, dates, counts)))
    return join_blocks([f"# {base.document_title(core, title)}"] + blocks)

