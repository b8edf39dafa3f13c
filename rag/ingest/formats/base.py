"""What the readers share: their errors, the notes on what they left out, escaping, zip parts, table
rows.

    protect("# 3 Paletten")      -> "\\\\# 3 Paletten"   (a document cannot invent a heading)
    join_blocks(["# A", "x"])    -> "# A\\n\\nx\\n"
    row_unit(["Name", "Raum"], ["Meier", "B2"]) -> "Name: Meier | Raum: B2"

Does not handle: reading any format (pdf.py, html.py, docx.py, odf.py, xlsx.py, pptx.py, eml.py,
ocr.py do).
"""
import dataclasses
import io
import re
from collections import Counter

# lines the chunker would read as a heading or a fence
STRUCTURE = re.compile(r"^\s*(#{1,6}(\s|$)|```|~~~)")


class FormatError(Exception):
    """A document that cannot be converted; str(exc) is the German reason, without the file name."""


class ToolMissing(FormatError):
    """The external converter (pdftotext, tesseract) is not installed; str(exc) names the install
    command."""


@dataclasses.dataclass
class Notes:
    """What a conversion left out, for the caller's warnings: hidden text by reason, PDF pages
    without text."""
    # rag/ingest/hidden.py reason -> count
    hidden: Counter = dataclasses.field(default_factory=Counter)
    empty_pages: list = dataclasses.field(default_factory=list)  # 1-based PDF page numbers
    # page number (1 for an image) -> mean word confidence
    ocr: dict = dataclasses.field(default_factory=dict)
    # pages read by OCR below ocr.LOW_CONFIDENCE
    low_confidence: list = dataclasses.field(default_factory=list)
    # German lines on parts left out (e-mail attachments)
    messages: list = dataclasses.field(default_factory=list)
    # the German warning when tesseract is missing and pages were skipped for it
    ocr_missing: str = ""


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
    """Blocks (already Markdown) separated by one blank line. Example: ["# A", "x"]
    -> "# A\\n\\nx\\n" """
    return "\n\n".join(b for b in blocks if b.strip()) + "\n"


MAX_XML_BYTES = 64 * 1024 * 1024  # an uncompressed XML part larger than this is refused (zip bomb)
# an encrypted Office file (or an old .doc/.xls/.ppt) is an OLE file
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def open_zip(data, suffix):
    """The zip archive of an Office file; FormatError for an encrypted or old-format file and for
    non-zips.

    Example: open_zip(b"kein zip", ".xlsx") raises FormatError("keine gültige .xlsx-Datei (kein
             ZIP-Archiv) – …")
    """
    import zipfile
    if data.startswith(OLE_MAGIC):
        raise FormatError("verschlüsselt (Passwortschutz) oder altes Format – ohne Passwort "
                          f"als {suffix} speichern")
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise FormatError(f"keine gültige {suffix}-Datei (kein ZIP-Archiv) – neu speichern")


def read_xml(archive, name, suffix, required=False, kind="Datei"):
    """Parsed XML part of an Office zip, or None when it is absent and not required; FormatError
    when broken."""
    from xml.etree import ElementTree
    try:
        info = archive.getinfo(name)
    except KeyError:
        if required:
            raise FormatError(f"keine {kind} ({name} fehlt) – als {suffix} neu speichern")
        return None
    data = read_part(archive, info, suffix)
    try:
        return ElementTree.fromstring(data)
    except (ElementTree.ParseError, ValueError) as exc:
        raise FormatError(f"defekt ({name}: {exc}) – als {suffix} neu speichern")


def read_part(archive, info, suffix):
    """The bytes of one zip member; FormatError when it is too large unpacked (zip bomb) or
    damaged."""
    import zipfile
    if info.file_size > MAX_XML_BYTES:
        raise FormatError(f"{info.filename} entpackt größer als {MAX_XML_BYTES // 2**20} MB – "
                          "übersprungen")
    try:
        return archive.read(info)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, ValueError,
            OSError) as exc:
        raise FormatError(f"defekt ({info.filename}: {exc}) – als {suffix} neu speichern")


def document_title(meta, fallback):
    """dc:title of docProps/core.xml or meta.xml (parsed, or None), else the fallback (the file
    name)."""
    node = (next(meta.iter("{http://purl.org/dc/elements/1.1/}title"), None) if meta is not None
            else None)
    return (" ".join((node.text or "").split()) if node is not None and (node.text or "").strip()
            else fallback)


def row_unit(headers, cells):
    """One table row as a unit that carries its column headers; empty cells left out.

    Example: row_unit(["Name", "", "Raum"], ["Meier", "x", ""]) -> "Name: Meier | Spalte B: x"
    """
    parts = []
    for number, value in enumerate(cells):
        value = " ".join(str(value).split())
        if value:
            header = " ".join(str(headers[number]).split()) if number < len(headers) else ""
            parts.append(f"{header or 'Spalte ' + column_letters(number)}: {value}")
    return " | ".join(parts)


def column_letters(index):
    """0-based column index -> spreadsheet letters. Example: 0 -> "A", 27 -> "AB" """
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


ROW = "Zeile"  # a spreadsheet row's own heading: "Zeile 17" (sheet_blocks)
SHEETS = (".xlsx", ".ods")  # the files whose sheets sheet_blocks writes


def is_row(path, heading):
    """Is this the heading sheet_blocks gives a spreadsheet row?
    Example: ("t.xlsx", "Zeile 17") -> True; ("t.md", "Zeile 17") -> False"""
    return path.lower().endswith(SHEETS) and re.fullmatch(ROW + r" \d+", heading) is not None


def sheet_blocks(sheet, rows):
    """A sheet's Markdown blocks: "## sheet", then one "### Zeile N" section per row under the
    header row.

    rows: [(row number, [cell texts])] of the visible rows; the first row with text holds the column
    headers.
    Example: sheet_blocks("Telefon", [(1, ["Name", "Tel"]), (2, ["Meier", "4711"])])
             -> ["## Telefon", "Spalten: Name | Tel", "### Zeile 2", "Name: Meier | Tel: 4711"]
    """
    blocks, headers = [f"## {' '.join(sheet.split()) or 'Tabelle'}"], None
    for number, cells in rows:
        if not any(str(c).strip() for c in cells):
            continue
        if headers is None:
            headers = [" ".join(str(c).split()) for c in cells]
            blocks.append(protect("Spalten: " + " | ".join(h for h in headers if h)))
            continue
        blocks.extend([f"### {ROW} {number}", protect(row_unit(headers, cells))])
    return blocks
