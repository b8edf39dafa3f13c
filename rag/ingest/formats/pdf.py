"""PDF pages as Markdown, through poppler's `pdftotext -layout`.

    pdf_to_markdown(pdf_bytes, "vertrag.pdf", "pdftotext")
    -> "# vertrag.pdf\\n\\n## Seite 1\\n\\n…\\n\\n## Seite 2\\n\\n…"

pdftotext (found via --pdftotext, RAG_PDFTOTEXT, then PATH) is fed on stdin; each page (form feed)
becomes "## Seite N"; the PDF's Title, else the file name, is the H1. A Title that is no title
("Microsoft Word - v3.docx", "Untitled") is ignored. Pages without text (fewer than MIN_PAGE_CHARS
characters) are read by OCR (rag/ingest/formats/ocr.py: pdftoppm + tesseract, German) and get a
heading "## Seite N · OCR 94 %"; without tesseract, or where OCR finds no text either, they are
left out and listed in notes.empty_pages (a PDF without any text raises FormatError).

Does not handle: OCR of images on pages that have a text layer, headings inside a PDF page (a page
is the smallest section), password-protected files, invisible text in PDFs (pdftotext extracts it
like any other).
"""
import os
import re
import shutil
import subprocess

from rag.ingest.formats import ocr
from rag.ingest.formats.base import FormatError, Notes, ToolMissing, join_blocks, protect

# a PDF page with fewer non-space characters has no text layer (while others have one)
MIN_PAGE_CHARS = 20
PDFTOTEXT_TIMEOUT = 120  # seconds per PDF
PDF_INSTALL = "apt-get install poppler-utils"  # named in the warning when pdftotext is missing
# PDF Title metadata that names no document
NO_TITLE = re.compile(r"^(untitled|unbenannt|ohne titel|(document|dokument)\s*\d*)$|"
                      r"^microsoft \w+ - |\.(docx?|pdf|odt|rtf|txt)$", re.I)


def default_pdftotext():
    """pdftotext: $RAG_PDFTOTEXT, else PATH; the bare name when neither has it (the caller
    reports)."""
    return os.environ.get("RAG_PDFTOTEXT") or shutil.which("pdftotext") or "pdftotext"


def run_pdftotext(data, pdftotext):
    """pdftotext's -htmlmeta output for the PDF bytes: (title or None, text with \\f between
    pages)."""
    import html
    command = [pdftotext, "-layout", "-enc", "UTF-8", "-htmlmeta", "-", "-"]
    try:
        done = subprocess.run(command, input=data, capture_output=True, timeout=PDFTOTEXT_TIMEOUT)
    except OSError as exc:  # not there, not executable, not a program
        raise ToolMissing(f"pdftotext nicht gefunden ({pdftotext}: {exc.strerror}) – PDF-Seiten "
                          f"übersprungen; installieren mit: {PDF_INSTALL} (oder Pfad mit "
                          "--pdftotext / RAG_PDFTOTEXT angeben)")
    except subprocess.TimeoutExpired:
        raise FormatError(f"pdftotext nach {PDFTOTEXT_TIMEOUT} s abgebrochen – PDF prüfen oder "
                          "aufteilen")
    err = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        if "password" in err.lower():
            raise FormatError("verschlüsselt (Passwort nötig) – ohne Passwortschutz speichern")
        if done.returncode == 3:
            raise FormatError("Kopierschutz verbietet das Auslesen des Texts – ungeschützt "
                              "speichern")
        last = (err.strip().splitlines() or [f"Exit-Code {done.returncode}"])[-1]
        raise FormatError(f"defekt oder kein PDF (pdftotext: {last.strip()}) – Datei neu "
                          "exportieren")
    out = done.stdout.decode("utf-8", "replace")
    title = re.search(r"<title>(.*?)</title>", out, re.S)
    body = re.search(r"<pre>\n?(.*)</pre>", out, re.S)
    text = body.group(1) if body else ""  # (pdftotext escapes the title, not the text)
    return (html.unescape(title.group(1)).strip() or None) if title else None, text


def page_lines(page):
    """One PDF page's text: trailing spaces and the common left margin removed, markup escaped.

    Example: "   Laufzeit\\n   # 12 Monate  " -> ["Laufzeit", "\\\\# 12 Monate"]
    """
    lines = [line.rstrip() for line in page.replace("\r", "").split("\n")]
    margin = min((len(line) - len(line.lstrip()) for line in lines if line), default=0)
    return [protect(line[margin:]) for line in lines]


def pdf_to_markdown(data, title, pdftotext, notes=None):
    """PDF bytes -> "# Title\\n\\n## Seite 1\\n\\n…"; FormatError for encrypted,
    broken or unreadable PDFs.

    Pages with fewer than MIN_PAGE_CHARS characters (when another page has text, or when no page
    has any) are read by OCR; those OCR cannot read are left out and listed in notes.empty_pages.
    """
    notes = Notes() if notes is None else notes
    meta_title, text = run_pdftotext(data, pdftotext)
    pages = text.split("\f")
    if pages and not pages[-1].strip():
        pages.pop()  # pdftotext ends every page with \f
    silent = [n for n, page in enumerate(pages, 1) if len(re.sub(r"\s", "", page)) < MIN_PAGE_CHARS]
    no_text = len(silent) == len(pages) and not any(page.strip() for page in pages)
    if len(silent) == len(pages) and not no_text:
        silent = []  # a short PDF that is all short pages: nothing to compare with
    read = ocr.read_pdf_pages(data, silent, title, pdftotext, notes)
    if no_text and not read:
        raise FormatError("kein Textlayer – OCR nötig" if notes.ocr_missing else
                          "kein Textlayer, auch per OCR kein Text erkannt – Scan prüfen (300 "
                          "dpi, gerade)")
    notes.empty_pages.extend(n for n in silent if n not in read)
    meta_title = " ".join((meta_title or "").split())
    blocks = [f"# {title if not meta_title or NO_TITLE.search(meta_title) else meta_title}"]
    for number, page in enumerate(pages, 1):
        if number in read:
            blocks.extend([f"## {ocr.heading(f'Seite {number}', notes.ocr[number])}", read[number]])
        elif number not in silent:
            blocks.append(f"## Seite {number}")
            blocks.append(re.sub(r"\n{3,}", "\n\n", "\n".join(page_lines(page)).strip("\n")))
    return join_blocks(blocks)
