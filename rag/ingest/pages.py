"""Step 1, read: the wiki's pages as text, and which of them changed since the last run.

    find_pages(Path("wiki"))                      -> ["mail/quota.md", "vpn.md", "vertrag.pdf"]
    read_page(Path("wiki/vpn.md"), "vpn.md")      -> ("# VPN\\n\\nClient starten.\\n", "9f2c…")
    strip_front_matter("---\\ntitle: VPN\\n---\\nText") -> ("Text", "VPN")

Pages are wiki/**/*.md, *.txt and *.rst, and the documents of rag/ingest/formats/ (suffixes in any
case: VERTRAG.PDF). Text is NFC with "\\n" line ends; PDF, HTML, office files, images and e-mails
become Markdown first, only when their bytes changed (so OCR runs only on new or changed scans).
reStructuredText (Sphinx) becomes Markdown on every run (rag/ingest/rst/, fast): its page hash is
that of the Markdown, so a changed include or another page's title re-chunks the pages that show it.
Text a reader does not see (rag/ingest/hidden.py) is dropped with one warning per page. Bad input
never stops a run: a file that cannot be used (binary, too large, unreadable, a symlink loop) is
skipped with one German warning naming it; text that is not UTF-8 is read with replacement
characters (�) and a warning.

Does not handle: encodings other than UTF-8 and UTF-16 with a byte order mark; YAML beyond title and
tags.
"""
import collections
import hashlib
import os
import re
import sys
import unicodedata
from pathlib import Path

from rag.ingest import formats
from rag.ingest import hidden
from rag.ingest import rst

MAX_FILE_BYTES = 5 * 1024 * 1024  # larger text files are skipped with a warning
SUFFIXES = (".md", ".txt", rst.SUFFIX) + formats.SUFFIXES  # what counts as a wiki page
#          (.rst: rag/ingest/rst/; .pdf .docx .xlsx …: rag/ingest/formats/)
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
# blank and image lines before front matter
LEADING = re.compile(r"(?:[ \t]*\n|[ \t]*\[?!\[[^\n]*\n)*")
# what a front matter found after them must look like
YAML_KEYS = re.compile(r"(?:(?:[\w-]+:.*|[ \t]+.*|[ \t]*)\n)*")


def warn(message):
    """One German warning line on stderr. Example: warn("a.md: leer") prints "Warnung: a.md:
    leer"."""
    print(f"Warnung: {message}", file=sys.stderr, flush=True)


def text_hash(text):
    """sha256 of the UTF-8 text, hex: what tells a page or a chunk apart from its last version."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def find_pages(wiki):
    """All wiki pages below `wiki`, sorted by their relative path; follows symlinks, not loops.

    Example: wiki/a.md, wiki/mail/b.md -> ["a.md", "mail/b.md"]
    """
    pages, seen_dirs = [], set()

    def unreadable_dir(exc):
        rel = os.path.relpath(exc.filename, wiki)
        warn(f"{rel}: Ordner nicht lesbar ({exc.strerror}) – übersprungen; Rechte prüfen")

    for root, dirs, files in os.walk(wiki, followlinks=True, onerror=unreadable_dir):
        real = os.path.realpath(root)
        if real in seen_dirs:
            warn(f"{Path(os.path.relpath(root, wiki)).as_posix()}: Symlink-Schleife – "
                 "übersprungen")
            dirs[:] = []
            continue
        seen_dirs.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            # VERTRAG.PDF too; ~$: Office lock files
            if not name.lower().endswith(SUFFIXES) or name.startswith((".", "~$")):
                continue
            rel = Path(os.path.relpath(os.path.join(root, name), wiki)).as_posix()
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:  # undecodable bytes in the name (os.walk's surrogateescape)
                shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                warn(f"{shown}: Dateiname ist kein gültiges UTF-8 – übersprungen; Datei "
                     "umbenennen")
                continue
            pages.append(rel)
    return sorted(pages)


def read_bytes(path, rel):
    """The file's bytes, or None with a warning naming it (dangling link, no regular file, too
    large, unreadable)."""
    if not os.path.exists(path):
        warn(f"{rel}: Symlink ohne Ziel oder Symlink-Schleife – übersprungen; Link korrigieren")
        return None
    if not os.path.isfile(path):
        warn(f"{rel}: keine normale Datei – übersprungen")
        return None
    limit = formats.MAX_BYTES if formats.is_document(rel) else MAX_FILE_BYTES
    try:
        if os.path.getsize(path) > limit:
            warn(f"{rel}: größer als {limit // 2**20} MB – übersprungen; Datei aufteilen")
            return None
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        warn(f"{rel}: nicht lesbar ({exc.strerror}) – übersprungen; Rechte prüfen")
        return None


def read_page(path, rel):
    """(text, sha256 of the bytes), or (None, None) with a warning naming the file if it is
    unusable.

    Text is NFC with "\\n" line ends; UTF-16 with a byte order mark is read as such. A PDF, HTML or
    Word page comes back as its bytes: convert_page makes Markdown of it, only when it changed.
    """
    data = read_bytes(path, rel)
    if data is None:
        return None, None
    if formats.is_document(rel):
        return data, hashlib.sha256(data).hexdigest()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 with BOM ("Unicode" in Windows editors)
        text = data.decode("utf-16", errors="replace")
    elif b"\x00" in data[:8192]:
        warn(f"{rel}: Binärdaten, keine Textdatei – übersprungen")
        return None, None
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            warn(f"{rel}: kein gültiges UTF-8 – mit Ersatzzeichen (�) gelesen; Datei als "
                 "UTF-8 speichern")
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    return text, hashlib.sha256(data).hexdigest()


def convert_page(rel, data, pdftotext, warned, notes=None):
    """(Markdown of a document page, False), or (None, keep) after one warning naming the file.

    keep is True when only the converter is missing (pdftotext, tesseract): warned once per run, and
    a page already in the index keeps its chunks. PDF pages without text, pages read by OCR with low
    confidence and e-mail attachments left out get one warning each naming them; hidden text lands
    in notes (a formats.Notes) for clean_page's warning.
    Example: "a.html", b"<h1>A</h1><p>x</p>" -> ("# A\\n\\nx\\n", False)
    """
    notes = formats.Notes() if notes is None else notes
    try:
        text = formats.to_markdown(rel, data, pdftotext, notes)
    except formats.ToolMissing as exc:
        warn_once(str(exc), warned)
        return None, True
    except formats.FormatError as exc:
        warn(f"{rel}: {exc} – übersprungen")
        if notes.ocr_missing:
            warn_once(notes.ocr_missing, warned)
        return None, False
    if notes.empty_pages:
        pages = ", ".join(map(str, notes.empty_pages))
        warn(f"{rel}: {'Seiten' if len(notes.empty_pages) > 1 else 'Seite'} {pages} ohne Text "
             "(Scan oder Bild) – nicht indexiert, "
             f"{'OCR nötig' if notes.ocr_missing else 'auch per OCR kein Text erkannt'}; die "
             "übrigen Seiten sind im Index")
    if notes.low_confidence:
        pages = ", ".join(f"{n} ({notes.ocr[n]:.0f} %)" for n in notes.low_confidence)
        warn(f"{rel}: per OCR mit geringer Sicherheit gelesen: "
             f"{'Seiten' if len(notes.low_confidence) > 1 else 'Seite'} {pages} – indexiert; "
             "Scan prüfen oder besser scannen (300 dpi)")
    for message in notes.messages:
        warn(f"{rel}: {message}")
    if notes.ocr_missing:
        warn_once(notes.ocr_missing, warned)
    return text, False


def warn_once(message, warned):
    """Warn unless this message was warned in this run already (a missing converter: one line per
    run)."""
    if message not in warned:
        warned.add(message)
        warn(message)


def clean_page(rel, text, notes=None):
    """The page without zero-width and bidi control characters; one warning if it hid anything.

    Example: "a.md", "Pass\\u200bwort" -> "Passwort", warning "a.md: versteckter Text entfernt
    (1 unsichtbares Zeichen) – Seite trotzdem indexiert" (notes: what the converter dropped,
    rag/ingest/hidden.py)
    """
    text, invisible = hidden.strip_invisible(text)
    found = collections.Counter(notes.hidden if notes is not None else {})
    found[hidden.INVISIBLE] += invisible
    if any(found.values()):
        warn(f"{rel}: versteckter Text entfernt ({hidden.describe(found)}) – Seite trotzdem "
             "indexiert")
    return text


def strip_front_matter(text):
    """Remove YAML front matter; return (body, title or None).

    Example: strip_front_matter("---\\ntitle: VPN\\n---\\nText") -> ("Text", "VPN")
    """
    body, title, _ = front_matter(text)
    return body, title


def front_matter(text):
    """(body, title or None, [tags]): YAML front matter removed, also where it follows leading blank
    or image lines (those stay in the body); a second block after the first counts too, its title
    wins.

    Example: front_matter("![Logo](l.png)\\n---\\ntitle: VPN\\ntags: [netz, vpn]\\n---\\nText")
             -> ("![Logo](l.png)\\nText", "VPN", ["netz", "vpn"])
    """
    title, tags, start = None, [], 0
    while True:
        lead = LEADING.match(text, start)
        match = FRONT_MATTER.match(text[lead.end():])
        yaml = match.group(1) or "" if match else ""
        if not match or (start or lead.end()) and not YAML_KEYS.fullmatch(yaml):
            return text, title, tags
        found = re.search(r"^title:\s*['\"]?(.*?)['\"]?\s*$", yaml, re.M)
        title = found.group(1) if found and found.group(1) else title
        tags = yaml_list(yaml, "tags") or tags
        text = text[:lead.end()] + text[lead.end() + match.end():]
        start = lead.end()


def yaml_list(yaml, key):
    """The list under `key` in simple YAML: "tags: [a, b]", "tags: a, b" or "tags:\\n  - a\\n  - b"
    -> ["a", "b"]."""
    found = re.search(rf"^{key}:[ \t]*(.*)\n?((?:[ \t]+-.*\n?)*)", yaml, re.M)
    if not found:
        return []
    items = (found.group(1).strip().strip("[]").split(",")
             + re.findall(r"^[ \t]+-[ \t]*(.*)$", found.group(2), re.M))
    return [item.strip().strip("'\"") for item in items if item.strip().strip("'\"")]


def read_changed(wiki, rels, known, settings, pdftotext, stats, present):
    """Yield (path, page hash, clean text) of every page whose bytes or `settings` changed since
    `known`.

    known: {path: page hash} of the index; settings: what else makes other chunks (the chunker's
    version and limit). Every usable page lands in `present` as it is read (a converter missing
    for a page already indexed keeps it there); unchanged pages are counted in stats["unchanged"].
    Lazy, so each page's warnings come in path order with those of the next step.
    Example: ["a.md"] with known {} -> yields ("a.md", "5e1f…", "# A\\n\\nText")
    """
    warned = set()  # missing converters: one warning per run
    # titles read once, when asked
    project = rst.Project(wiki, [rel for rel in rels if rst.is_rst(rel)])
    for rel in rels:
        text, file_hash = read_page(wiki / rel, rel)
        if text is None:
            continue
        if rst.is_rst(rel):
            text, file_hash = rst_markdown(rel, text, project)
        # (Markdown hashes stay as they were)
        version = f", {formats.version(rel)}" if formats.is_document(rel) else ""
        page_hash = text_hash(f"{settings}{version}\n{file_hash}")
        present.add(rel)
        if known.get(rel) == page_hash:
            stats["unchanged"] += 1
            continue
        notes = formats.Notes()  # what a converter left out: hidden text, PDF pages without text
        if formats.is_document(rel):
            text, keep = convert_page(rel, text, pdftotext, warned, notes)
            if text is None:
                if not (keep and rel in known):
                    present.discard(rel)
                continue
        yield rel, page_hash, clean_page(rel, text, notes)


def rst_markdown(rel, text, project):
    """(Markdown of a reST page, its hash); one warning per problem (an include that cannot be
    read).

    Example: ("a.rst", "Titel\\n=====\\n\\nText\\n", project) -> ("# Titel\\n\\nText\\n", "7d1a…")
    """
    text, problems = rst.to_markdown(rel, text, project)
    for problem in problems:
        warn(f"{rel}: {problem}")
    return text, text_hash(text)
