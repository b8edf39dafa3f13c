#!/usr/bin/env python3
"""Scans and office files (issue 32): a sheet of 10,000 rows, OCR per page, the test set indexed fresh and again.

    python3 bench/office.py                      # fake embedder: the readers' and OCR's own time
    python3 bench/office.py --embedder real      # real model: the whole test set as a reader indexes it
    python3 bench/office.py --rows 50 --no-ocr --json   # tiny (smoke test)

  sheet        xlsx_to_markdown and chunk_page of a generated phone list of --rows rows (in this process)
  OCR          the scanned two-page contract of scripts/make_office_pages.py: seconds per page with one
               worker and with all cores (render at ocr.DPI + tesseract), and the character accuracy
  test set     build_index.py over the test set (scan, notice photo, mixed PDF, .odt, .xlsx of 2,000 rows,
               .pptx, .eml): a fresh build, then a second run with nothing changed (no OCR again)

Does not handle: answer quality (evaluate.py --questions eval/questions_office.jsonl), scans from a real
scanner, more than one PDF at once (pages of one PDF run in parallel; files one after the other).
"""
import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import common
from common import ROOT

from rag import config  # noqa: E402  (common puts ROOT on sys.path)
from rag.ingest import chunking, formats  # noqa: E402
from rag.ingest.formats import ocr  # noqa: E402

ROWS = 10_000  # rows of the generated sheet


def load_generator():
    """scripts/make_office_pages.py as a module (it writes the test set and knows its truth)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_office_pages
    return make_office_pages


def sheet(office, rows):
    """Seconds to read and chunk a phone list of `rows` rows."""
    data = office.xlsx_bytes([{"name": "Telefonliste", "rows": office.phone_rows(rows)}])
    read_s, text = common.timed(formats.to_markdown, "telefon.xlsx", data)
    chunk_s, chunks = common.timed(chunking.chunk_page, text)
    return {"rows": rows, "bytes": len(data), "read_s": read_s, "chunk_s": chunk_s, "chunks": len(chunks)}


def ocr_pages(office, accuracy):
    """Seconds per scanned page with one worker and with all cores, and the character accuracy per page."""
    pdf = office.scan_pdf(office.SCAN_TEXT)
    out = []
    for workers in sorted({1, os.cpu_count() or 1}):
        saved, ocr.workers = ocr.workers, (lambda pages, n=workers: max(1, min(pages, n)))
        try:
            notes = formats.Notes()
            seconds, text = common.timed(formats.to_markdown, "scan.pdf", pdf, None, notes)
        finally:
            ocr.workers = saved
        pages = text.split("\n## ")[1:]
        scores = [accuracy("\n".join(truth), page.split("\n", 1)[1]) for page, truth in zip(pages, office.SCAN_TEXT)]
        out.append({"workers": workers, "pages": len(pages), "s_per_page": seconds / max(1, len(pages)),
                    "min_accuracy": min(scores, default=0.0), "min_confidence": min(notes.ocr.values(), default=0.0)})
    return out


def test_set(office, args, folder):
    """build_index.py over the test set: fresh, then unchanged."""
    wiki = Path(folder) / "office-wiki"
    for rel, data in office.test_set().items():
        (wiki / rel).parent.mkdir(parents=True, exist_ok=True)
        (wiki / rel).write_bytes(data)
    env = {**os.environ, "RAG_WIKI": str(wiki), "RAG_DB": str(Path(folder) / "office.db")}
    if args.embedder == "fake":
        env["LLAMA_EMBEDDING"], env["RAG_EMBED_MODEL"] = common.write_fake_embedder(folder)
    else:
        common.require((config.default_embedding_bin(), "llama-embedding"), (config.default_model(), "Modell"))
    out = []
    for label in ("frisch", "unverändert"):
        run = common.measure([sys.executable, str(ROOT / "build_index.py"), "--quiet"], env=env)
        if run.returncode != 0:
            raise SystemExit(f"Fehler: build_index.py scheiterte: {run.stderr.strip()[-300:]}")
        out.append({"run": label, "seconds": run.seconds, "warnings": run.stderr.count("Warnung: ")})
    return out


def main():
    parser = argparse.ArgumentParser(description="Misst Tabellen, OCR und das Indexieren des Office-Testsatzes.")
    parser.add_argument("--rows", type=int, default=ROWS, help=f"Zeilen der erzeugten Tabelle (Standard: {ROWS})")
    parser.add_argument("--embedder", choices=["fake", "real"], default="fake",
                        help="fake: nur die eigene Zeit; real: llama-embedding mit dem echten Modell")
    parser.add_argument("--no-ocr", action="store_true", help="ohne OCR-Messung und ohne Testsatz (kein tesseract nötig)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    office = load_generator()
    report = {"benchmark": "office", "command": common.command_line(), "machine": common.machine(),
              "sheet": sheet(office, args.rows), "ocr": [], "test_set": []}
    if not args.no_ocr:
        if not (ocr.available() and shutil.which("pdftoppm")):
            raise SystemExit(f"Fehler: tesseract mit deutschem Modell oder pdftoppm fehlt – installieren mit: "
                             f"{ocr.OCR_INSTALL} poppler-utils (oder --no-ocr)")
        report["ocr"] = ocr_pages(office, office.char_accuracy)
        with tempfile.TemporaryDirectory(prefix="rag-office-") as folder:
            report["test_set"] = test_set(office, args, folder)
    text = "\n\n".join([
        common.header("Scans und Office-Dateien", report["machine"]),
        common.table([("rows", "Zeilen"), ("bytes", "Bytes"), ("read_s", "lesen s"), ("chunk_s", "chunken s"),
                      ("chunks", "Chunks")], [report["sheet"]]),
        common.table([("workers", "parallel"), ("pages", "Seiten"), ("s_per_page", "s je Seite"),
                      ("min_accuracy", "Zeichengenauigkeit (min)"), ("min_confidence", "Konfidenz (min)")],
                     report["ocr"]) if report["ocr"] else "OCR: nicht gemessen (--no-ocr)",
        common.table([("run", "Testsatz"), ("seconds", "s"), ("warnings", "Warnungen")], report["test_set"])
        if report["test_set"] else ""])
    common.emit(args, report, text.strip())


if __name__ == "__main__":
    main()
