"""Scanned pages and photographed images as text, through tesseract's German model
(tesseract-ocr-deu).

    image_to_markdown(png_bytes, "aushang.png", notes)
    -> "# aushang.png\\n\\n## Bild · OCR 94 %\\n\\nText …\\n"
    read_pdf_pages(pdf_bytes, [2, 3], "vertrag.pdf", "pdftotext", notes)
    -> {2: "Text …", 3: "Text …"}
    read_tsv("level\\tpage_num…\\n5\\t1\\t1\\t1\\t1\\t1\\t…\\t93.2\\tDer\\n…")
    -> ("Der Vertrag …", 93.2)

A PDF page without a text layer is rendered by poppler's pdftoppm (DPI, greyscale PNG) and read by
`tesseract … -l deu tsv`; images (.png, .jpg, .tif) go to tesseract as they are. The text comes
from tesseract's TSV (words joined into lines, a blank line between paragraphs), and so does the
mean word confidence of the page, which the page's heading shows ("Seite 3 · OCR 94 %"). Pages
below LOW_CONFIDENCE are indexed and listed in notes.low_confidence. Pages of one PDF are read in
parallel, up to os.cpu_count() at once, each tesseract on one thread; a line on stderr (a terminal
only) counts the pages. tesseract is found via RAG_TESSERACT, then PATH; pdftoppm via RAG_PDFTOPPM,
next to pdftotext, then PATH. Without tesseract and its German model, scanned PDF pages are left out
with one warning per run (notes.ocr_missing) and images raise ToolMissing.

Does not handle: text inside images on a page that also has a text layer, rotated or skewed scans
beyond what tesseract straightens itself, handwriting, languages other than German, multi-page TIFFs
(the first page only), hidden text (a scan has none to find).
"""
import functools
import os
import shutil
import subprocess
import sys
import tempfile

from rag.ingest.formats.base import FormatError, ToolMissing, join_blocks, protect

LANG = "deu"  # tesseract's German model (tesseract-ocr-deu)
DPI = 300  # pdftoppm's resolution for a scanned page: tesseract reads best at 300 dpi
LOW_CONFIDENCE = 60  # mean word confidence (0–100) below which a page is named in a warning
OCR_TIMEOUT = 180  # seconds per page, for rendering and for tesseract each
# named in the warning when tesseract is missing
OCR_INSTALL = "apt-get install tesseract-ocr tesseract-ocr-deu"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")  # images read by OCR
MISSING = ("tesseract mit deutschem Modell nicht gefunden – gescannte Seiten und Bilder "
           f"übersprungen; installieren mit: {OCR_INSTALL} (oder Pfad mit RAG_TESSERACT angeben)")


def default_tesseract():
    """tesseract: $RAG_TESSERACT, else PATH; None when neither has it."""
    return os.environ.get("RAG_TESSERACT") or shutil.which("tesseract")


def default_pdftoppm(pdftotext):
    """pdftoppm: $RAG_PDFTOPPM, else the one next to pdftotext, else PATH (the bare name: the caller
    reports)."""
    sibling = os.path.join(os.path.dirname(pdftotext or ""), "pdftoppm")
    if os.environ.get("RAG_PDFTOPPM"):
        return os.environ["RAG_PDFTOPPM"]
    return sibling if os.path.dirname(pdftotext or "") and os.path.isfile(sibling) else \
        shutil.which("pdftoppm") or "pdftoppm"


@functools.lru_cache(maxsize=None)
def has_german(tesseract):
    """Does this tesseract run and know LANG? Asked once per binary and run (`tesseract
    --list-langs`)."""
    try:
        done = subprocess.run([tesseract, "--list-langs"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return LANG in (done.stdout + done.stderr).decode("utf-8", "replace").split()


def available():
    """Can pages be read by OCR here? Example: tesseract with tesseract-ocr-deu installed -> True"""
    tesseract = default_tesseract()
    return bool(tesseract) and has_german(tesseract)


def read_tsv(tsv):
    """(text, mean word confidence or None) from tesseract's TSV: lines of words, a blank line
    between paragraphs.

    Example: words "Der"/"Vertrag" on one line (conf 90, 96), "Ende" in the next paragraph (conf 93)
             -> ("Der Vertrag\\n\\nEnde", 93.0)
    """
    lines, confidences, last = {}, [], None
    for row in tsv.splitlines()[1:]:
        fields = row.split("\t")
        if len(fields) < 12 or fields[0] != "5" or not fields[11].strip():
            continue
        key = tuple(int(f) for f in fields[1:5])  # page, block, paragraph, line
        lines.setdefault(key, []).append(fields[11].strip())
        if float(fields[10]) >= 0:
            confidences.append(float(fields[10]))
    out = []
    for key in sorted(lines):
        if last is not None and key[:3] != last[:3]:
            out.append("")
        out.append(protect(" ".join(lines[key])))
        last = key
    text = "\n".join(out).strip()
    return text, (round(sum(confidences) / len(confidences), 1) if confidences else None)


def tesseract_tsv(image, tesseract, one_thread=True):
    """tesseract's TSV for the image bytes (stdin -> stdout);
    FormatError when it cannot read the image."""
    env = {**os.environ, **({"OMP_THREAD_LIMIT": "1"} if one_thread else {})}
    try:
        done = subprocess.run([tesseract, "stdin", "stdout", "-l", LANG, "tsv"], input=image,
                              capture_output=True, timeout=OCR_TIMEOUT, env=env)
    except OSError:
        raise ToolMissing(MISSING)
    except subprocess.TimeoutExpired:
        raise FormatError(f"Texterkennung nach {OCR_TIMEOUT} s abgebrochen – Bild verkleinern")
    if done.returncode != 0:
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines()
                or [f"Exit-Code {done.returncode}"])[-1]
        raise FormatError(f"Bild nicht lesbar (tesseract: {last.strip()}) – Datei neu speichern")
    return done.stdout.decode("utf-8", "replace")


def render_page(pdf_path, number, pdftoppm):
    """PNG bytes of one PDF page (1-based) at DPI, greyscale; FormatError when pdftoppm fails."""
    command = [pdftoppm, "-r", str(DPI), "-gray", "-png", "-f", str(number), "-l", str(number),
               "-singlefile", pdf_path]
    try:
        done = subprocess.run(command, capture_output=True, timeout=OCR_TIMEOUT)
    except OSError as exc:
        raise FormatError(f"pdftoppm nicht gefunden ({pdftoppm}: {exc.strerror}) – installieren "
                          f"mit: apt-get install poppler-utils (oder RAG_PDFTOPPM)")
    except subprocess.TimeoutExpired:
        raise FormatError(f"pdftoppm nach {OCR_TIMEOUT} s abgebrochen – PDF prüfen")
    if done.returncode != 0 or not done.stdout:
        raise FormatError(f"Seite {number} nicht darstellbar (pdftoppm, Exit-Code "
                          f"{done.returncode}) – PDF neu exportieren")
    return done.stdout


def workers(pages):
    """How many pages are read at once: up to the cores. Example: 5 pages on 2 cores -> 2"""
    return max(1, min(pages, os.cpu_count() or 1))


def show_progress(name, done, total):
    """"OCR vertrag.pdf: Seite 2/5" as one self-overwriting line on stderr; silent when stderr is no
    terminal."""
    if sys.stderr.isatty():
        end = "\n" if done == total else ""
        print(f"\rOCR {name}: Seite {done}/{total}   ", end=end, file=sys.stderr, flush=True)


def read_pdf_pages(data, numbers, name, pdftotext, notes):
    """{page number: text} of the PDF pages `numbers` read by OCR; confidences land in notes.ocr.

    Without tesseract (or its German model) returns {} and sets notes.ocr_missing.
    """
    from concurrent.futures import ThreadPoolExecutor
    tesseract = default_tesseract()
    if not numbers:
        return {}
    if not tesseract or not has_german(tesseract):
        notes.ocr_missing = MISSING
        return {}
    pdftoppm = default_pdftoppm(pdftotext)
    with tempfile.TemporaryDirectory(prefix="rag-ocr-") as folder:
        path = os.path.join(folder, "page.pdf")
        with open(path, "wb") as f:
            f.write(data)

        # a page that cannot be rendered or read stays out (notes.empty_pages), the rest goes on
        def one(number):
            try:
                return read_tsv(tesseract_tsv(render_page(path, number, pdftoppm), tesseract))
            except ToolMissing:
                raise
            except FormatError:
                return "", None

        found = {}
        with ThreadPoolExecutor(max_workers=workers(len(numbers))) as pool:
            for count, (number, result) in enumerate(zip(numbers, pool.map(one, numbers)), 1):
                found[number] = result
                show_progress(name, count, len(numbers))
    texts = {}
    for number, (text, confidence) in sorted(found.items()):
        if text:
            texts[number] = text
            note_confidence(notes, number, confidence)
    return texts


def note_confidence(notes, number, confidence):
    """Record a page's mean word confidence in notes; below LOW_CONFIDENCE it is also listed as
    low."""
    notes.ocr[number] = confidence if confidence is not None else 0.0
    if notes.ocr[number] < LOW_CONFIDENCE:
        notes.low_confidence.append(number)


def heading(label, confidence):
    """A page heading that says the text was read by OCR. Example: ("Seite 3", 93.6)
    -> "Seite 3 · OCR 94 %" """
    return f"{label} · OCR {round(confidence or 0):d} %"


def image_to_markdown(data, title, notes):
    """An image (.png, .jpg, .tif) -> "# title\\n\\n## Bild · OCR 94 %\\n\\n…";
    ToolMissing without tesseract.

    FormatError when tesseract cannot read it or finds no text.
    """
    tesseract = default_tesseract()
    if not tesseract or not has_german(tesseract):
        raise ToolMissing(MISSING)
    if not data.strip():
        raise FormatError("leeres Bild – Datei prüfen")
    text, confidence = read_tsv(tesseract_tsv(data, tesseract, one_thread=False))
    if not text:
        raise FormatError("kein Text im Bild erkannt – nicht indexiert")
    note_confidence(notes, 1, confidence)
    return join_blocks([f"# {title}", f"## {heading('Bild', confidence)}", text])
