#!/usr/bin/env python3
"""Step 1 of the post: read the wiki, cut it into chunks, embed them, store them in SQLite.

    python3 build_index.py                 # wiki/ -> knowledge.db, only what changed
    python3 build_index.py --rebuild       # from scratch (e.g. after changing the model)

Steps, in the order of the post:
  1. read     wiki/**/*.md and *.txt, sorted (suffixes in any case: VERTRAG.PDF); front matter stripped;
              PDF, HTML and Word (.docx) pages become Markdown first (rag/formats.py), only when their
              bytes changed; text a reader does not see (HTML comments, hidden elements, Word's
              hidden runs, zero-width and bidi characters) is dropped with one warning per page
              (rag/hidden.py), PDF pages without text are named and left out
  2. chunk    at paragraph boundaries up to MAX_CHARS, each chunk under its heading path
  3. embed    many chunks per call: a llama-server --embeddings that this script starts for the
              run (--embed-via spawn), llama-embedding processes as in the post (binary,
              rag/embedder.py) or any running OpenAI-compatible endpoint (server, rag/embed_client.py)
  4. store    docs + vectors + search text in knowledge.db (rag/store.py), one transaction per page

Incremental: a page whose bytes did not change is skipped; a chunk whose text (heading path +
content) is already in the index reuses its vector, so a renamed page needs no new embeddings.
A page's old chunks are replaced only after all of its new vectors exist, in one transaction, so
a crash leaves every page entirely old or entirely new; the next run finishes the job.

Bad input never stops the run: a file that cannot be used (binary, too large, unreadable, a
symlink loop, no text) is skipped with one German warning naming it; text that is not UTF-8 is
read with replacement characters (�) and a warning. A chunk too long for the model's context is
split further.

Does not handle: formats other than Markdown, plain text, PDF, HTML and .docx (no OCR of scans),
setext headings (underlined with ===), several writers at once.
"""
import argparse
import collections
import hashlib
import json
import os
import re
import sqlite3
import sys
import time
import unicodedata
from pathlib import Path

from rag import config, embed_client, embedder, formats, german, hidden, privacy, safety, store
from rag.server_process import ServerProcess

MAX_CHARS = 1200  # longest chunk in characters (as in the post)
BATCH = 64  # chunks per llama-embedding process or request (bench/indexing.py --tune: 64 is 2.6x faster than 16)
EMBED_VIA = "auto"  # auto: spawn when llama-server sits next to llama-embedding (same build), else binary
MAX_FILE_BYTES = 5 * 1024 * 1024  # larger files are skipped with a warning
SUFFIXES = (".md", ".txt") + formats.SUFFIXES  # what counts as a wiki page (.pdf .html .htm .docx: rag/formats.py)
HEADING_SEP = " › "  # between the parts of a heading path
CHUNKER = "chunker 3"  # bump when chunking changes: every page is then re-chunked (vectors reused); 3: invisible characters removed


def warn(message):
    print(f"Warnung: {message}", file=sys.stderr, flush=True)


# -- 1. read ---------------------------------------------------------------------------------------
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
            warn(f"{Path(os.path.relpath(root, wiki)).as_posix()}: Symlink-Schleife – übersprungen")
            dirs[:] = []
            continue
        seen_dirs.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if not name.lower().endswith(SUFFIXES) or name.startswith((".", "~$")):  # VERTRAG.PDF too; ~$: Office lock files
                continue
            rel = Path(os.path.relpath(os.path.join(root, name), wiki)).as_posix()
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:  # undecodable bytes in the name (os.walk's surrogateescape)
                shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                warn(f"{shown}: Dateiname ist kein gültiges UTF-8 – übersprungen; Datei umbenennen")
                continue
            pages.append(rel)
    return sorted(pages)


def read_page(path, rel):
    """(text, sha256 of the bytes), or (None, None) with a warning naming the file if it is unusable.

    Text is NFC with "\\n" line ends; UTF-16 with a byte order mark is read as such. A PDF, HTML or
    Word page comes back as its bytes: convert_page makes Markdown of it, only when it changed.
    """
    if not os.path.exists(path):
        warn(f"{rel}: Symlink ohne Ziel oder Symlink-Schleife – übersprungen; Link korrigieren")
        return None, None
    if not os.path.isfile(path):
        warn(f"{rel}: keine normale Datei – übersprungen")
        return None, None
    limit = formats.MAX_BYTES if formats.is_document(rel) else MAX_FILE_BYTES
    try:
        if os.path.getsize(path) > limit:
            warn(f"{rel}: größer als {limit // 2**20} MB – übersprungen; Datei aufteilen")
            return None, None
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        warn(f"{rel}: nicht lesbar ({exc.strerror}) – übersprungen; Rechte prüfen")
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
            warn(f"{rel}: kein gültiges UTF-8 – mit Ersatzzeichen (�) gelesen; Datei als UTF-8 speichern")
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    return text, hashlib.sha256(data).hexdigest()


def convert_page(rel, data, pdftotext, warned, notes=None):
    """(Markdown of a PDF/HTML/Word page, False), or (None, keep) after one warning naming the file.

    keep is True when only the converter is missing (pdftotext): warned once per run, and a page
    already in the index keeps its chunks. PDF pages without text get one warning naming them;
    hidden text lands in notes (a formats.Notes) for clean_page's warning.
    Example: "a.html", b"<h1>A</h1><p>x</p>" -> ("# A\\n\\nx\\n", False)
    """
    notes = formats.Notes() if notes is None else notes
    try:
        text = formats.to_markdown(rel, data, pdftotext, notes)
        if notes.empty_pages:
            pages = ", ".join(map(str, notes.empty_pages))
            warn(f"{rel}: {'Seiten' if len(notes.empty_pages) > 1 else 'Seite'} {pages} ohne Text (Scan oder Bild) "
                 f"– nicht indexiert, OCR nötig (z. B. ocrmypdf); die übrigen Seiten sind im Index")
        return text, False
    except formats.ToolMissing as exc:
        if str(exc) not in warned:
            warned.add(str(exc))
            warn(str(exc))
        return None, True
    except formats.FormatError as exc:
        warn(f"{rel}: {exc} – übersprungen")
        return None, False


def clean_page(rel, text, notes=None):
    """The page without zero-width and bidi control characters; one warning if it hid anything.

    Example: "a.md", "Pass\\u200bwort" -> "Passwort", warning "a.md: versteckter Text entfernt
    (1 unsichtbares Zeichen) – Seite trotzdem indexiert" (notes: what the converter dropped, rag/hidden.py)
    """
    text, invisible = hidden.strip_invisible(text)
    found = collections.Counter(notes.hidden if notes is not None else {})
    found[hidden.INVISIBLE] += invisible
    if any(found.values()):
        warn(f"{rel}: versteckter Text entfernt ({hidden.describe(found)}) – Seite trotzdem indexiert")
    return text


FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)


def strip_front_matter(text):
    """Remove YAML front matter; return (body, title or None).

    Example: strip_front_matter("---\\ntitle: VPN\\n---\\nText") -> ("Text", "VPN")
    """
    match = FRONT_MATTER.match(text)
    if not match:
        return text, None
    title = re.search(r"^title:\s*['\"]?(.*?)['\"]?\s*$", match.group(1) or "", re.M)
    return text[match.end():], (title.group(1) if title and title.group(1) else None)


# -- 2. chunk --------------------------------------------------------------------------------------
HEADING = re.compile(r"^(#{1,6})\s+(.+?)(?:\s+#+)?\s*$")  # "## Quota ##" -> Quota; "# C#" stays C#
FENCE = re.compile(r"^\s*(```|~~~)")
SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")


def blocks(body, title=None):
    """Paragraphs with their heading path; headings and fenced code handled.

    Example: "# Mail\\n\\nText A\\n\\n## Quota\\nText B" -> [(["Mail"], "Text A"), (["Mail", "Quota"], "Text B")]
    """
    path = [title] if title else []
    levels = [0] if title else []
    out, lines, fence = [], [], None  # fence: the open ``` or ~~~, else None

    def flush():
        text = "\n".join(lines).strip()
        if text:
            out.append((list(path), text))
        lines.clear()

    for line in body.split("\n"):
        marker = FENCE.match(line)
        if marker and fence in (None, marker.group(1)):
            fence = None if fence else marker.group(1)
            lines.append(line)
            continue
        heading = None if fence else HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            while levels and levels[-1] >= level:
                levels.pop()
                path.pop()
            if level == 1 and title and path == [title]:  # H1 repeats the front-matter title
                levels.pop()
                path.pop()
            path.append(heading.group(2).strip())
            levels.append(level)
        elif not line.strip() and not fence:
            flush()
        else:
            lines.append(line)
    flush()
    return out


def split_long(text, limit=MAX_CHARS):
    """Split a too-long paragraph at the last line break that fits, else sentence end, else space, else hard.

    Cuts are made in the text itself, so lists and code keep their lines.
    Example: split_long("Satz eins. Satz zwei.", 12) -> ["Satz eins.", "Satz zwei."]
    """
    pieces = []
    while len(text) > limit:
        window = text[:limit + 1]  # a space right after the limit is a fine cut too
        ends = [m.start() for m in SENTENCE_END.finditer(window)]
        cuts = [window.rfind("\n")] + ends[-1:] + [window.rfind(" ")]
        cut = next((c for c in cuts if c > limit // 2), limit)
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return pieces + [text] if text else pieces


def fit_context(heading, content):
    """Split a chunk further until the model sees all of it (characters are not tokens: "ü" is 2 bytes).

    Example: 9,000 characters of "Größe Größe …" (12,000 bytes) -> two chunks of 4,500 characters
    """
    if embedder.fits(embedded_text(heading, content)) or len(content) < 200:
        return [(heading, content)]  # (a giant heading alone is cut by the embedder)
    return [chunk for part in split_long(content, len(content) // 2 + 1) for chunk in fit_context(heading, part)]


def chunk_page(text, max_chars=MAX_CHARS):
    """Chunks of one page: [(heading_path_text, content)], paragraphs joined up to max_chars.

    A new heading always starts a new chunk, so every chunk has exactly one heading path.
    Example: chunk_page("# VPN\\n\\nClient starten.\\n\\n## Linux\\n\\nopenvpn") ->
             [("VPN", "Client starten."), ("VPN › Linux", "openvpn")]
    """
    body, title = strip_front_matter(text)
    chunks = []
    for path, paragraph in blocks(body, title):
        heading = HEADING_SEP.join(path)
        for piece in split_long(paragraph, max_chars):
            if chunks and chunks[-1][0] == heading and len(chunks[-1][1]) + 2 + len(piece) <= max_chars:
                chunks[-1] = (heading, chunks[-1][1] + "\n\n" + piece)
            else:
                chunks.append((heading, piece))
    return [chunk for heading, content in chunks for chunk in fit_context(heading, content)]


def embedded_text(heading, content):
    """What the model sees for a chunk: the heading path, a blank line, the content."""
    return f"{heading}\n\n{content}" if heading else content


def text_hash(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- 3. embed --------------------------------------------------------------------------------------
class Progress:
    """One self-overwriting line on stderr: pages, chunks, chunks/s, ETA. Silent when not a TTY."""

    def __init__(self, total_pages, enabled):
        self.total_pages, self.enabled = total_pages, enabled and sys.stderr.isatty()
        self.start = time.monotonic()

    def show(self, pages_done, chunks_done, chunks_total):
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        rate = chunks_done / elapsed if elapsed > 0 else 0.0
        eta = (chunks_total - chunks_done) / rate if rate > 0 else 0.0
        print(f"\r{pages_done}/{self.total_pages} Seiten · {chunks_done}/{chunks_total} Chunks · "
              f"{rate:.1f} Chunks/s · noch {eta:.0f} s   ", end="", file=sys.stderr, flush=True)

    def done(self):
        if self.enabled:
            print(file=sys.stderr)


def transport(args):
    """--embed-via auto -> "spawn" when llama-server sits next to llama-embedding, else "binary".

    Example: /opt/llama.cpp/bin/llama-embedding next to /opt/llama.cpp/bin/llama-server -> "spawn"
    """
    if args.embed_via != "auto":
        return args.embed_via
    return "spawn" if os.path.isfile(server_bin(args)) else "binary"


def server_bin(args):
    """The llama-server of the same llama.cpp build as --embedding-bin (same vectors)."""
    return os.path.join(os.path.dirname(os.path.abspath(args.embedding_bin)), "llama-server")


def embed_all(texts, args):
    """Vectors for `texts`, in order, args.batch texts per call; yields (start, vectors) per batch."""
    if args.via == "binary":
        for start in range(0, len(texts), args.batch):
            batch = texts[start:start + args.batch]
            yield start, embedder.embed_texts(batch, args.embedding_bin, args.model,
                                              threads=args.threads, timeout=args.timeout)
        return
    if args.via == "server":
        yield from embed_via_server(texts, args.batch, args.timeout, args.embed_url, args.embed_model_name, args.api_key)
        return
    if not args.quiet:
        print("Starte llama-server --embeddings für diesen Lauf (--embed-via binary: llama-embedding wie im Artikel)",
              file=sys.stderr, flush=True)
    server = ServerProcess.for_indexing(args.model, server_bin(args), texts, threads=args.threads)
    try:
        server.start()
    except RuntimeError as exc:
        raise embedder.EmbeddingError(f"{exc} – oder --embed-via binary verwenden")
    try:
        yield from embed_via_server(texts, args.batch, args.timeout, server.url)
    finally:
        server.stop()


def embed_via_server(texts, batch, timeout, url, model_name=None, api_key=None):
    """(start, vectors) per `batch` texts, each batch one /v1/embeddings request."""
    for start in range(0, len(texts), batch):
        yield start, embed_client.embed_fitted(texts[start:start + batch], url, model_name, api_key, timeout=timeout)


# -- 4. store --------------------------------------------------------------------------------------
def model_identity(args):
    """What the index remembers about the embedding model: (file name, size in bytes) of a GGUF file,
    or (the model name a server reports, "") for --embed-via server (rag/embed_client.py)."""
    if args.via == "server":
        return embed_client.identify(args.embed_url, args.embed_model_name, args.api_key), ""
    return os.path.basename(args.model), str(os.path.getsize(args.model))


def check_model(conn, args, db_path):
    """Refuse to mix models: names must match, and sizes where both are known (a server has none)."""
    meta = store.read_meta(conn)
    name, size = args.identity
    built, built_size = meta.get("embed_model"), meta.get("embed_model_size")
    if built and (built != name or (built_size and size and built_size != size)):
        sizes = f" ({built_size} Bytes)" if built_size else "", f" ({size} Bytes)" if size else ""
        raise SystemExit(f"Fehler: {db_path} wurde mit Modell {built}{sizes[0]} (Dimension {meta.get('dim')}) "
                         f"gebaut, jetzt ist {name}{sizes[1]} eingestellt – neu bauen mit: "
                         f"python3 build_index.py --rebuild")
    if args.via != "server" and meta.get("pooling") and meta["pooling"] != embedder.POOLING:
        raise SystemExit(f"Fehler: {db_path} wurde mit Pooling {meta['pooling']} gebaut, jetzt {embedder.POOLING} "
                         f"– neu bauen mit: python3 build_index.py --rebuild")


def write_page(conn, rel, file_hash, chunks, vectors, vocab, fts):
    """Replace one page's chunks in one transaction: a crash leaves the page entirely old or new."""
    flags = [safety.scan(content) for _, content in chunks]
    with conn:
        store.delete_page(conn, rel)
        for i, ((heading, content), vector) in enumerate(zip(chunks, vectors)):
            search = (german.index_text(heading, vocab), german.index_text(content, vocab)) if fts else None
            store.insert_chunk(conn, rel, i, heading, content, vector,
                               text_hash(embedded_text(heading, content)), flags[i], search)
        conn.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?)", (rel, file_hash, len(chunks)))
        store.write_meta(conn, vocab_dirty=1)


def refresh_search(conn):
    """Relearn the compound vocabulary from the indexed text; rebuild the FTS rows if it changed."""
    meta = store.read_meta(conn)
    if meta.get("vocab_dirty") != "1" and meta.get("search_version") == german.SEARCH_VERSION:
        return
    rows = conn.execute("SELECT id, heading, content FROM docs ORDER BY id").fetchall()
    vocab = german.learn_vocabulary(h + "\n" + c for _, h, c in rows)
    with conn:
        if vocab != store.load_vocab(conn) or meta.get("search_version") != german.SEARCH_VERSION:
            conn.execute("DELETE FROM vocab")
            conn.executemany("INSERT INTO vocab VALUES (?)", [(w,) for w in sorted(vocab)])
            if store.fts_available(conn):
                conn.execute("DELETE FROM fts")
                conn.executemany("INSERT INTO fts (rowid, heading, body) VALUES (?, ?, ?)",
                                 [(i, german.index_text(h, vocab), german.index_text(c, vocab)) for i, h, c in rows])
        store.write_meta(conn, vocab_dirty=0, search_version=german.SEARCH_VERSION)


def report_flags(conn, paths):
    for path, heading, flags in conn.execute(
            "SELECT path, heading, flags FROM docs WHERE flags != '[]' ORDER BY path, chunk_index"):
        if path in paths:
            for flag in json.loads(flags):
                print(f"Markiert: {path} › {heading}: {flag['rule']} „{flag['match']}“", file=sys.stderr)


def pii_settings():
    """(kinds, keep) from RAG_PII_KINDS and RAG_PII_KEEP, as ask_rag.py masks them (ValueError: bad kind)."""
    return (privacy.parse_kinds(os.environ.get("RAG_PII_KINDS")),
            privacy.parse_keep(os.environ.get("RAG_PII_KEEP")))


def report_pii(conn, paths):
    """One stderr line per page of this run with personal data: counts per kind, never the values.

    Example: "Personenbezogene Daten: hr-it/x.md: 2 IBAN, 1 TELEFON" (the index keeps the text as
    it is; ask_rag.py masks it at ask time, see rag/privacy.py; RAG_PII_KINDS/RAG_PII_KEEP apply)
    """
    kinds, keep = pii_settings()
    for path in sorted(paths):
        rows = conn.execute("SELECT content FROM docs WHERE path = ? ORDER BY chunk_index", (path,))
        found = privacy.describe(privacy.counts("\n\n".join(content for (content,) in rows), kinds, keep))
        if found:
            print(f"Personenbezogene Daten: {path}: {found}", file=sys.stderr)


def build(args):
    wiki = Path(args.wiki)
    if not wiki.is_dir():
        raise SystemExit(f"Fehler: Wiki-Ordner {wiki} nicht gefunden – Pfad mit --wiki oder RAG_WIKI angeben.")
    pages = find_pages(wiki)
    if not pages:
        raise SystemExit(f"Fehler: keine .md- oder .txt-Seiten (auch kein PDF, HTML, .docx) in {wiki} – "
                         f"Markdown-Dateien dort ablegen.")
    args.via = transport(args)
    if args.via == "server" and not args.embed_url:
        raise SystemExit("Fehler: --embed-via server braucht die URL des Embedding-Servers – "
                         "--embed-url / RAG_EMBED_URL angeben, z. B. http://127.0.0.1:8080")
    if args.via != "server" and not os.path.isfile(args.model):
        raise SystemExit(f"Fehler: Embedding-Modell {args.model} nicht gefunden – einrichten mit: "
                         f"python3 scripts/setup_llama.py (oder --model / RAG_EMBED_MODEL)")
    if args.via == "spawn" and not os.path.isfile(server_bin(args)):
        raise SystemExit(f"Fehler: llama-server nicht neben llama-embedding gefunden ({server_bin(args)}) – "
                         f"einrichten mit: python3 scripts/setup_llama.py oder --embed-via binary verwenden")
    try:
        args.identity = model_identity(args)
    except embedder.EmbeddingError as exc:
        raise SystemExit(f"Fehler: {exc}")
    db_path = args.db
    if not os.path.isdir(os.path.dirname(os.path.abspath(db_path))):
        raise SystemExit(f"Fehler: Ordner für den Index {db_path} fehlt – anlegen oder --db / RAG_DB ändern.")
    started = time.monotonic()
    target = db_path + ".rebuild" if args.rebuild else db_path
    if args.rebuild:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(target + suffix):
                os.unlink(target + suffix)
    try:
        conn = store.connect(target, create=True)
        if not args.rebuild:
            check_model(conn, args, db_path)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")

    fts = store.fts_available(conn)
    if not fts:
        warn("dieses Python-SQLite hat kein FTS5 – nur Vektorsuche (--mode vector) möglich; "
             "ein Python mit FTS5-fähigem SQLite verwenden")
    known = dict(conn.execute("SELECT path, file_hash FROM pages"))
    vocab = store.load_vocab(conn)
    stats = dict(added=0, changed=0, removed=0, unchanged=0, embedded=0, reused=0)
    settings = f"{CHUNKER}, max_chars={args.max_chars}"  # other settings, other chunks: re-chunk

    # 1.+2. read every page, chunk those that changed
    todo = []  # (rel, page_hash, chunks, text hash of each chunk), in path order
    present, warned = set(), set()  # warned: missing converters, one warning per run
    for rel in pages:
        text, file_hash = read_page(wiki / rel, rel)
        if text is None:
            continue
        version = f", {formats.CONVERTER}" if formats.is_document(rel) else ""  # (Markdown hashes stay as they were)
        page_hash = text_hash(f"{settings}{version}\n{file_hash}")
        present.add(rel)
        if known.get(rel) == page_hash:
            stats["unchanged"] += 1
            continue
        notes = formats.Notes()  # what a converter left out: hidden text, PDF pages without text
        if formats.is_document(rel):
            text, keep = convert_page(rel, text, args.pdftotext, warned, notes)
            if text is None:
                if not (keep and rel in known):
                    present.discard(rel)
                continue
        chunks = chunk_page(clean_page(rel, text, notes), args.max_chars)
        if not chunks:
            warn(f"{rel}: enthält keinen Text (leer oder nur Überschriften/Front Matter) – übersprungen")
            present.discard(rel)
            continue
        stats["changed" if rel in known else "added"] += 1
        todo.append((rel, page_hash, chunks, [text_hash(embedded_text(h, c)) for h, c in chunks]))
    if not present:
        raise SystemExit(f"Fehler: keine Seite in {wiki} enthält verwertbaren Text – Warnungen oben beachten.")

    # 3. embed what is not in the index yet (vectors are reused by text hash, across pages)
    needed = {}  # text hash -> embedded text
    for _, _, chunks, keys in todo:
        for (heading, content), key in zip(chunks, keys):
            needed.setdefault(key, embedded_text(heading, content))
    vectors = {}
    hashes = list(needed)
    for i in range(0, len(hashes), 500):
        part = hashes[i:i + 500]
        rows = conn.execute(f"SELECT content_hash, embedding FROM docs WHERE content_hash IN "
                            f"({','.join('?' * len(part))}) GROUP BY content_hash", part)
        vectors.update((h, json.loads(e)) for h, e in rows)
    missing = [h for h in hashes if h not in vectors]
    stats["reused"] = sum(len(keys) for *_, keys in todo) - len(missing)

    progress = Progress(len(todo), not args.quiet)
    meta = store.read_meta(conn)
    dim = meta.get("dim")
    query_prefix, passage_prefix = embedder.prefixes_for(args.identity[0])  # e5: "query: ", "passage: "
    passage_prefix = meta.get("passage_prefix", passage_prefix)  # an index keeps the prefix it was built with
    pending, written = collections.deque(todo), []

    def flush_ready():
        """Write the next pages in path order whose vectors all exist, one transaction each."""
        while pending and all(k in vectors for k in pending[0][3]):
            rel, page_hash, chunks, keys = pending.popleft()
            write_page(conn, rel, page_hash, chunks, [vectors[k] for k in keys], vocab, fts)
            written.append(rel)

    try:
        flush_ready()  # pages whose chunks are all reused
        for start, batch_vectors in embed_all([passage_prefix + needed[h] for h in missing], args):
            for h, vec in zip(missing[start:start + len(batch_vectors)], batch_vectors):
                if dim is None:
                    dim = str(len(vec))
                    name, size = args.identity
                    with conn:
                        store.write_meta(conn, embed_model=name, embed_model_size=size, dim=dim,
                                         query_prefix=query_prefix, passage_prefix=passage_prefix,
                                         **({} if args.via == "server" else {"pooling": embedder.POOLING}))
                elif str(len(vec)) != dim:
                    raise SystemExit(f"Fehler: {args.identity[0]} liefert Dimension {len(vec)}, "
                                     f"{db_path} wurde mit {meta.get('embed_model')} in Dimension {dim} gebaut – "
                                     f"neu bauen mit: python3 build_index.py --rebuild")
                vectors[h] = vec
            stats["embedded"] += len(batch_vectors)
            flush_ready()
            progress.show(len(written), stats["embedded"], len(missing))
    except embedder.EmbeddingError as exc:
        progress.done()
        raise SystemExit(f"Fehler: {exc} ({len(written)} Seiten dieses Laufs gespeichert; "
                         f"erneut starten setzt fort)")
    progress.done()

    # 4. pages that are gone leave the index (after the adds, so a moved page could reuse vectors)
    for rel in sorted(set(known) - present):
        with conn:
            store.delete_page(conn, rel)
            store.write_meta(conn, vocab_dirty=1)
        stats["removed"] += 1
    refresh_search(conn)
    report_flags(conn, set(written))
    report_pii(conn, written)
    count = conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all in the main file (stays in WAL mode for readers)
    conn.close()
    if args.rebuild:
        for path in (db_path + "-wal", db_path + "-shm", target + "-wal", target + "-shm"):
            if os.path.exists(path):  # the old index's WAL must not meet the new file
                os.unlink(path)
        os.replace(target, db_path)
    print(f"Seiten: {stats['added']} neu, {stats['changed']} geändert, {stats['removed']} entfernt, "
          f"{stats['unchanged']} unverändert · Chunks: {stats['embedded']} eingebettet, "
          f"{stats['reused']} wiederverwendet, {count} im Index (Dimension {dim}) · "
          f"{time.monotonic() - started:.1f} s → {db_path}")


def main():
    parser = argparse.ArgumentParser(
        description="Baut den Suchindex (knowledge.db) aus den Seiten des Wikis (Markdown, Text, PDF, HTML, .docx).",
        epilog="Umgebungsvariablen: RAG_WIKI, RAG_DB, LLAMA_EMBEDDING, RAG_EMBED_MODEL, RAG_EMBED_BATCH, "
               "RAG_EMBED_THREADS, RAG_EMBED_TIMEOUT, RAG_EMBED_VIA, RAG_EMBED_URL, RAG_EMBED_MODEL_NAME, "
               "RAG_API_KEY, RAG_PDFTOTEXT, RAG_PII_KINDS und RAG_PII_KEEP (für die Meldung personenbezogener Daten), "
               "RAG_CACHE (Ort des Setups).")
    parser.add_argument("--wiki", default=config.env_str("RAG_WIKI", "wiki"),
                        help="Ordner mit den Seiten (RAG_WIKI, Standard: wiki)")
    parser.add_argument("--db", default=config.env_str("RAG_DB", "knowledge.db"),
                        help="SQLite-Datei des Index (RAG_DB, Standard: knowledge.db)")
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(),
                        help="Pfad zu llama-embedding (LLAMA_EMBEDDING; Standard: PATH, sonst Setup-Cache)")
    parser.add_argument("--model", default=config.default_model(),
                        help="GGUF-Modell für die Embeddings (RAG_EMBED_MODEL; Standard: multilingual-e5-small aus dem Setup)")
    parser.add_argument("--embed-via", choices=("auto", "spawn", "binary", "server"),
                        default=config.env_str("RAG_EMBED_VIA", EMBED_VIA),
                        help="spawn: einen llama-server --embeddings für den Lauf starten (der neben "
                             "llama-embedding); binary: llama-embedding-Prozesse wie im Artikel; server: laufender "
                             "OpenAI-kompatibler Endpunkt (--embed-url); auto (Standard): spawn, wenn llama-server "
                             "neben llama-embedding liegt, sonst binary (RAG_EMBED_VIA)")
    parser.add_argument("--embed-url", default=os.environ.get("RAG_EMBED_URL") or os.environ.get("LLAMA_SERVER_URL"),
                        help="URL des Embedding-Servers für --embed-via server, z. B. http://127.0.0.1:8080 oder "
                             "http://127.0.0.1:11434/v1 (RAG_EMBED_URL, sonst LLAMA_SERVER_URL)")
    parser.add_argument("--embed-model-name", default=os.environ.get("RAG_EMBED_MODEL_NAME"),
                        help="Modellname, den der Embedding-Server erwartet (RAG_EMBED_MODEL_NAME; Ollama und vLLM "
                             "brauchen ihn)")
    parser.add_argument("--api-key", default=os.environ.get("RAG_API_KEY"),
                        help="API-Schlüssel des Embedding-Servers, als Bearer-Token (RAG_API_KEY; besser als "
                             "Variable, Flags sieht jeder in ps)")
    parser.add_argument("--batch", type=int, default=config.env_int("RAG_EMBED_BATCH", BATCH),
                        help=f"Chunks pro llama-embedding-Aufruf bzw. Server-Anfrage (RAG_EMBED_BATCH, Standard: {BATCH})")
    parser.add_argument("--threads", type=int, default=config.env_int("RAG_EMBED_THREADS", 0) or None,
                        help="CPU-Threads für llama-embedding (RAG_EMBED_THREADS, Standard: llama.cpp)")
    parser.add_argument("--timeout", type=int, default=config.env_int("RAG_EMBED_TIMEOUT", 0) or None,
                        help="Sekunden pro llama-embedding-Aufruf (RAG_EMBED_TIMEOUT, Standard: 120 + 2 je Chunk)")
    parser.add_argument("--pdftotext", default=formats.default_pdftotext(),
                        help="pdftotext aus poppler-utils für PDF-Seiten (RAG_PDFTOTEXT; Standard: PATH)")
    parser.add_argument("--max-chars", type=int, default=MAX_CHARS, help=f"maximale Chunk-Länge (Standard: {MAX_CHARS})")
    parser.add_argument("--rebuild", action="store_true", help="Index komplett neu bauen (alter bleibt bis zum Ende)")
    parser.add_argument("--quiet", action="store_true", help="keine Fortschrittsanzeige")
    args = parser.parse_args()
    if args.batch < 1 or args.max_chars < 100:
        raise SystemExit("Fehler: --batch muss ≥ 1 und --max-chars ≥ 100 sein.")
    try:
        pii_settings()
    except ValueError as exc:
        raise SystemExit(f"Fehler: RAG_PII_KINDS: {exc} – z. B. -ADRESSE,-PLZ-ORT oder IBAN,TELEFON,NAME")
    try:
        build(args)
    except KeyboardInterrupt:
        raise SystemExit("\nAbgebrochen – bereits gespeicherte Seiten bleiben; erneut starten setzt fort.")
    except sqlite3.DatabaseError as exc:
        raise SystemExit(f"Fehler: Index-Datenbank {args.db} defekt ({exc}) – neu bauen mit: "
                         f"python3 build_index.py --rebuild")


if __name__ == "__main__":
    main()
