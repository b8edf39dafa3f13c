"""Office documents, scans and e-mails as the Markdown the chunker already reads: text plus heading
structure.

    to_markdown("vertrag.pdf", pdf_bytes)
    -> "# vertrag.pdf\\n\\n## Seite 1\\n\\n…\\n\\n## Seite 2 · OCR 96 %\\n\\n…"
    to_markdown("raum.html", "<h1>Räume</h1><p>Text</p>".encode())   -> "# Räume\\n\\nText\\n"
    to_markdown("telefon.xlsx", xlsx_bytes)
    -> "# telefon.xlsx\\n\\n## Telefon\\n\\n…\\n\\n### Zeile 2\\n\\nName: Meier | …"

Every page gets one H1 (the document's own title, else the file name), so a chunk's heading path
names the document: `vertrag.pdf › Seite 3`, `telefon.xlsx › Telefon › Zeile 17`, `kurs.pptx
› Folie 4: …`. One reader per format: pdf.py (pdftotext, scanned pages through ocr.py), ocr.py
(tesseract; also .png/.jpg/.tif), html.py (html.parser), docx.py, xlsx.py, pptx.py, odf.py
(.odt/.ods/.odp; zipfile + xml.etree), eml.py (email); base.py has what they share.

A line of text that would read as Markdown structure ("# …", "```") gets a backslash in front, so
a document cannot invent headings or code blocks (front matter cannot arise: the H1 comes first).
Text a reader does not see is dropped and counted in notes.hidden (rag/ingest/hidden.py); PDF pages
without text are listed in notes.empty_pages, pages read by OCR in notes.ocr. The caller warns once
per page.

Failures raise FormatError with a short German reason ("verschlüsselt", "kein ZIP-Archiv"); a
missing pdftotext or tesseract raises ToolMissing (the caller warns once per run).

Does not handle: old .doc/.xls/.ppt files, Outlook .msg, flat ODF files, password-protected files.
"""
import os

from rag.ingest.formats import docx, eml, html, ocr, odf, pdf, pptx, xlsx
# what callers catch and pass
from rag.ingest.formats.base import FormatError, Notes, ToolMissing  # noqa: F401
from rag.ingest.formats.pdf import default_pdftotext  # noqa: F401  (the --pdftotext default)

SUFFIXES = ((".pdf", ".html", ".htm", ".docx", ".odt", ".ods", ".odp", ".xlsx", ".pptx", ".eml")
            + ocr.IMAGE_SUFFIXES)
#          document formats converted here (any case: VERTRAG.PDF)
CONVERTER = "formats 3"  # bump when the conversion changes: every document is then re-converted
#                          3: OCR of scanned pages and images, OpenDocument, Excel, PowerPoint,
#                          e-mail
MAX_BYTES = 50 * 1024 * 1024  # larger documents are skipped (PDFs with images are often > 5 MB)
# what reads differently with tesseract than without
OCR_SUFFIXES = (".pdf", ".eml") + ocr.IMAGE_SUFFIXES


def is_document(name):
    """Is this file one of the formats converted here? Example: "a/Vertrag.pdf" -> True, "a.md"
    -> False"""
    return name.lower().endswith(SUFFIXES)


def version(name):
    """What decides a document's conversion besides its bytes, for its page hash: a scan read
    without tesseract is read again once tesseract is there. Example: "a.pdf" without tesseract
    -> "formats 3, ohne OCR" """
    if name.lower().endswith(OCR_SUFFIXES) and not ocr.available():
        return f"{CONVERTER}, ohne OCR"
    return CONVERTER


def to_markdown(name, data, pdftotext=None, notes=None, depth=0):
    """Markdown text of the document `name` (its path, for the suffix and the fallback title) with
    bytes `data`.

    notes (a Notes, optional) receives what was left out: hidden text, PDF pages without text, OCR
    confidences.
    """
    suffix = os.path.splitext(name)[1].lower()
    title = os.path.basename(name)
    notes = Notes() if notes is None else notes
    if suffix == ".pdf":
        return pdf.pdf_to_markdown(data, title, pdftotext or default_pdftotext(), notes)
    if suffix in (".html", ".htm"):
        return html.html_to_markdown(data, title, notes)
    if suffix in ocr.IMAGE_SUFFIXES:
        return ocr.image_to_markdown(data, title, notes)
    readers = {".docx": docx.docx_to_markdown, ".xlsx": xlsx.xlsx_to_markdown,
               ".pptx": pptx.pptx_to_markdown}
    if suffix in readers:
        return readers[suffix](data, title, notes)
    if suffix in (".odt", ".ods", ".odp"):
        return odf.odf_to_markdown(data, title, notes, suffix)
    if suffix == ".eml":
        def attachment(inner_name, inner_data, inner_notes, inner_depth):
            return to_markdown(inner_name, inner_data, pdftotext, inner_notes, inner_depth)
        return eml.eml_to_markdown(data, title, notes, attachment, is_document, depth)
    raise ValueError(f"not a document format: {name}")
