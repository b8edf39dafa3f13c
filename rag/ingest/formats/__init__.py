"""PDF, HTML and Word pages as the Markdown the chunker already reads: text plus heading structure.

    to_markdown("vertrag.pdf", pdf_bytes)   -> "# vertrag.pdf\\n\\n## Seite 1\\n\\n…\\n\\n## Seite 2\\n\\n…"
    to_markdown("raum.html", "<h1>Räume</h1><p>Text</p>".encode())   -> "# Räume\\n\\nText\\n"
    to_markdown("notfall.docx", docx_bytes) -> "# Notfall\\n\\n## Schritt 1\\n\\n…"

Every page gets one H1 (the document's own title, else the file name), so a chunk's heading path
names the document: `vertrag.pdf › Seite 3`, `Besprechungsräume › Buchung`. One reader per format:
pdf.py (pdftotext), html.py (html.parser), docx.py (zipfile + xml.etree); base.py has what they share.

A line of text that would read as Markdown structure ("# …", "```") gets a backslash in front, so
a document cannot invent headings or code blocks (front matter cannot arise: the H1 comes first).
Text a reader does not see is dropped and counted in notes.hidden (rag/ingest/hidden.py); PDF pages
without text are listed in notes.empty_pages. The caller warns once per page.

Failures raise FormatError with a short German reason ("verschlüsselt", "kein Textlayer – OCR
nötig"); a missing pdftotext raises ToolMissing (the caller warns once per run).

Does not handle: OCR of scanned PDFs, old .doc/.xls/.ppt files, .odt, password-protected files, images.
"""
import os

from rag.ingest.formats import docx, html, pdf
from rag.ingest.formats.base import FormatError, Notes, ToolMissing  # noqa: F401  (what callers catch and pass)
from rag.ingest.formats.pdf import default_pdftotext  # noqa: F401  (the --pdftotext default)

SUFFIXES = (".pdf", ".html", ".htm", ".docx")  # document formats converted here (any case: VERTRAG.PDF)
CONVERTER = "formats 2"  # bump when the conversion changes: every document is then re-converted
MAX_BYTES = 50 * 1024 * 1024  # larger documents are skipped (PDFs with images are often > 5 MB)


def is_document(name):
    """Is this file one of the formats converted here? Example: "a/Vertrag.pdf" -> True, "a.md" -> False"""
    return name.lower().endswith(SUFFIXES)


def to_markdown(name, data, pdftotext=None, notes=None):
    """Markdown text of the document `name` (its path, for the suffix and the fallback title) with bytes `data`.

    notes (a Notes, optional) receives what was left out: hidden text and PDF pages without text.
    """
    suffix = os.path.splitext(name)[1].lower()
    title = os.path.basename(name)
    notes = Notes() if notes is None else notes
    if suffix == ".pdf":
        return pdf.pdf_to_markdown(data, title, pdftotext or default_pdftotext(), notes)
    if suffix in (".html", ".htm"):
        return html.html_to_markdown(data, title, notes)
    if suffix == ".docx":
        return docx.docx_to_markdown(data, title, notes)
    raise ValueError(f"not a document format: {name}")
