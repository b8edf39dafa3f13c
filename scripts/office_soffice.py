"""LibreOffice for scripts/make_office_pages.py --soffice: flat ODF, HTML or CSV written to .odt, .ods, .odp,
.docx, .xlsx and .pptx by `soffice --headless --convert-to`, one run per kind, in a private profile, with argument
lists and a timeout.
"""
import shutil
import subprocess
import tempfile
from pathlib import Path

SOFFICE_TIMEOUT = 300  # seconds for one soffice run (a cold start takes ~4 s, the 2,000-row sheet ~10 s)
SOFFICE_INSTALL = "apt-get install libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui"
CONVERT_TO = {".odt": "odt", ".ods": "ods", ".odp": "odp", ".docx": "docx:MS Word 2007 XML",
              ".xlsx": "xlsx:Calc Office Open XML", ".pptx": "pptx:Impress MS PowerPoint 2007 XML"}
IN_FILTER = {".html": "HTML (StarWriter)"}  # HTML opens in Writer, not Writer/Web (which cannot write .docx)


def soffice_convert(sources, targets, soffice=None):
    """Files written by LibreOffice: sources {name: text} (.fodt, .fods, .fodp, .html, .csv), targets
    [(source name, suffix)]; one `soffice --headless --convert-to` run per kind, in a private profile.

    Example: soffice_convert({"t.fods": fods}, [("t.fods", ".xlsx")]) -> {"t.xlsx": b"PK…"}
    """
    soffice = soffice or shutil.which("soffice")
    if not soffice:
        raise SystemExit(f"Fehler: soffice (LibreOffice) nicht gefunden – installieren mit: {SOFFICE_INSTALL}")
    out = {}
    with tempfile.TemporaryDirectory(prefix="office-soffice-") as tmp:
        folder = Path(tmp)
        (folder / "in").mkdir()
        for name, text in sources.items():
            (folder / "in" / name).write_text(text, encoding="utf-8")
        runs = {}
        for name, suffix in targets:
            runs.setdefault((Path(name).suffix, suffix), []).append(name)
        for (source_suffix, suffix), names in runs.items():
            cmd = [soffice, f"-env:UserInstallation={(folder / 'profile').as_uri()}", "--headless", "--norestore"]
            if source_suffix in IN_FILTER:
                cmd.append(f"--infilter={IN_FILTER[source_suffix]}")
            cmd += ["--convert-to", CONVERT_TO[suffix], "--outdir", str(folder / suffix[1:]),
                    *(str(folder / "in" / n) for n in names)]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=SOFFICE_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise SystemExit(f"Fehler: soffice brauchte länger als {SOFFICE_TIMEOUT} s für {', '.join(names)}")
            for name in names:
                made = folder / suffix[1:] / (Path(name).stem + suffix)
                if not made.is_file():
                    raise SystemExit(f"Fehler: soffice hat {made.name} nicht geschrieben (Code {done.returncode}): "
                                     f"{(done.stderr or done.stdout).strip()[-300:]}")
                out[made.name] = made.read_bytes()
    return out
