"""The scans of scripts/make_office_pages.py's test set: text rendered by poppler's pdftoppm into grey pixels and
packed into image-only PDF pages (the "scanner"), a PNG of a notice (the "photo"), and the character accuracy of
what OCR reads back. The truth is known because every scan is rendered from text.
"""
import subprocess
import zlib

import make_sample_pages as sample  # the text PDF writer

SCAN_DPI = 150  # resolution of the "scanner"; OCR renders again at rag/ingest/formats/ocr.py DPI


def render_gray(pdf, page, dpi=SCAN_DPI):
    """(width, height, 8-bit grey pixels) of one page, through `pdftoppm -gray` (PGM)."""
    done = subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-f", str(page), "-l", str(page), "-singlefile", "-"],
                          input=pdf, capture_output=True, check=True, timeout=120)
    fields = done.stdout.split(maxsplit=4)  # b"P5", width, height, 255, pixels
    assert fields[0] == b"P5" and fields[3] == b"255", fields[:4]
    return int(fields[1]), int(fields[2]), fields[4]


def png_bytes(lines, dpi=SCAN_DPI):
    """A PNG of lines of text on an A4 page (the "photographed notice"), rendered by pdftoppm."""
    done = subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-png", "-singlefile", "-"],
                          input=sample.pdf_bytes([lines]), capture_output=True, check=True, timeout=120)
    return done.stdout


def char_accuracy(truth, read):
    """1 - (Levenshtein distance / characters of the truth), whitespace folded. Example: ("abc", "abd") -> 0.667"""
    a, b = " ".join(truth.split()), " ".join(read.split())
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return 1 - previous[-1] / max(1, len(a))


def scan_pdf(pages, dpi=SCAN_DPI):
    """A PDF whose pages are images: each page is a list of lines (rendered and scanned) or ("text", lines),
    a page that keeps its text layer (a mixed PDF). Example: scan_pdf([["Seite eins"]]) -> b"%PDF-1.4 …"
    """
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", None,
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    kids = []
    for page in pages:
        if isinstance(page, tuple):
            stream, resources = sample.page_stream(page[1]).replace(b"/F2", b"/F1"), b"/Font << /F1 3 0 R >>"
        else:
            width, height, pixels = render_gray(sample.pdf_bytes([page]), 1, dpi)
            packed = zlib.compress(pixels, 9)
            objects.append(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                           b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream"
                           % (width, height, len(packed), packed))
            stream, resources = b"q 595 0 0 842 0 0 cm /Im1 Do Q", b"/XObject << /Im1 %d 0 R >>" % len(objects)
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << %s >> /Contents %d 0 R >>"
                       % (resources, len(objects)))
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    return sample.pdf_file(objects)
