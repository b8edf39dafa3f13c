#!/usr/bin/env python3
"""Step 1 of the post: read the wiki, cut it into chunks, embed them, store them in SQLite.

    python3 build_index.py                 # wiki/ -> knowledge.db, only what changed
    python3 build_index.py --rebuild       # from scratch (e.g. after changing the model)

Steps, in the order of the post:
  1. read     wiki/**/*.md and *.txt, sorted (suffixes in any case: VERTRAG.PDF); front matter stripped;
              PDF, HTML and Word (.docx) pages become Markdown first (rag/ingest/formats.py), only when their
              bytes changed; text a reader does not see (HTML comments, hidden elements, Word's
              hidden runs, zero-width and bidi characters) is dropped with one warning per page
              (rag/ingest/hidden.py), PDF pages without text are named and left out
  2. chunk    at paragraph boundaries up to MAX_CHARS, each chunk under its heading path
  3. embed    many chunks per call: a llama-server --embeddings that this script starts for the
              run (--embed-via spawn), llama-embedding processes as in the post (binary,
              rag/models/embed_binary.py) or any running OpenAI-compatible endpoint (server, rag/models/embed_server.py)
  4. store    docs + vectors + search text in knowledge.db (rag/store/sqlite.py), one transaction per page

Incremental: a page whose bytes did not change is skipped; a chunk whose text (heading path +
content) is already in the index reuses its vector, so a renamed page needs no new embeddings.
A page's old chunks are replaced only after all of its new vectors exist, in one transaction, so
a crash leaves every page entirely old or entirely new; the next run finishes the job.

Bad input never stops the run: a file that cannot be used (binary, too large, unreadable, a
symlink loop, no text) is skipped with one German warning naming it; text that is not UTF-8 is
read with replacement characters (�) and a warning. A chunk too long for the model's context is
split further.

Does not handle: formats other than Markdown, plain text, PDF, HTML and .docx (no OCR of scans),
setext headings (underlined with ===). A second writer waits for the first (rag/store/sqlite.py), it never interleaves.
"""
import argparse
import collections
import hashlib
import json
import os
import re
import sys
import time
import unicodedata
from pathlib import Path

from rag import config
from rag.ingest import formats
from rag.ingest import hidden
from rag.models import embed_binary as embedder
from rag.models import embed_server as embed_client
from rag.models.server_process import ServerProcess
from rag.privacy import mask as privacy
from rag.store import sqlite as store
from rag.text import german
from rag.text import safety

MAX_CHARS = 1200  # longest chunk in characters (as in the post)
BATCH = 64  # chunks per llama-embedding process or request (bench/indexing.py --tune: 64 is 2.6x faster than 16)
EMBED_VIA = "auto"  # auto: spawn when llama-server sits next to llama-embedding (same build), else binary
MAX_FILE_BYTES = 5 * 1024 * 1024  # larger files are skipped with a warning
SUFFIXES = (".md", ".txt") + formats.SUFFIXES  # what counts as a wiki page (.pdf .html .htm .docx: rag/ingest/formats.py)
HEADING_SEP = " › "  # between the parts of a heading path
CHUNKER = "chunker 3"  # bump when chunking changes: every page is then re-chunked (vectors reused); 3: invisible characters removed
WATCH_INTERVAL = 2.0  # --watch: seconds between two looks at the wiki (a change is stored ≤ this + embedding later)


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
    (1 unsichtbares Zeichen) – Seite trotzdem indexiert" (notes: what the converter dropped, rag/ingest/hidden.py)
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


Page = collections.namedtuple("Page", "path hash chunks keys")  # chunks [(heading, content)], keys: their text hashes


def read_changed(wiki, pages, known, args, stats):
    """Read every page; chunk those whose bytes or chunk settings changed since `known` {path: page hash}.

    Returns ([Page] to write, in path order; the set of paths that are still pages) and counts into stats.
    """
    settings = f"{CHUNKER}, max_chars={args.max_chars}"  # other settings, other chunks: re-chunk
    todo, present, warned = [], set(), set()  # warned: missing converters, one warning per run
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
        todo.append(Page(rel, page_hash, chunks, [text_hash(embedded_text(h, c)) for h, c in chunks]))
    return todo, present


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
    if getattr(args, "spawned", None):  # --watch: the server started once for all cycles
        yield from embed_via_server(texts, args.batch, args.timeout, args.spawned.url)
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
    or (the model name a server reports, "") for --embed-via server (rag/models/embed_server.py)."""
    if args.via == "server":
        return embed_client.identify(args.embed_url, args.embed_model_name, args.api_key), ""
    return os.path.basename(args.model), str(os.path.getsize(args.model))


def check_model(meta, args):
    """Refuse to mix models: names must match, and sizes where both are known (a server has none)."""
    name, size = args.identity
    built, built_size = meta.get("embed_model"), meta.get("embed_model_size")
    if built and (built != name or (built_size and size and built_size != size)):
        sizes = f" ({built_size} Bytes)" if built_size else "", f" ({size} Bytes)" if size else ""
        raise SystemExit(f"Fehler: {args.db} wurde mit Modell {built}{sizes[0]} (Dimension {meta.get('dim')}) "
                         f"gebaut, jetzt ist {name}{sizes[1]} eingestellt – neu bauen mit: "
                         f"python3 build_index.py --rebuild")
    if args.via != "server" and meta.get("pooling") and meta["pooling"] != embedder.POOLING:
        raise SystemExit(f"Fehler: {args.db} wurde mit Pooling {meta['pooling']} gebaut, jetzt {embedder.POOLING} "
                         f"– neu bauen mit: python3 build_index.py --rebuild")


def open_index(args):
    """The store behind --db, checked against the model (SQLite file or PostgreSQL, rag/store/sqlite.py)."""
    try:
        index = store.open_store(args.db, create=True, rebuild=args.rebuild)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    if not args.rebuild:
        check_model(index.meta(), args)
    if not index.has_lexical():
        warn("dieses Python-SQLite hat kein FTS5 – nur Vektorsuche (--mode vector) möglich; "
             "ein Python mit FTS5-fähigem SQLite verwenden")
    return index


def remember_model(index, args, dim):
    """On the first vector of a new index: model, dimension and prefixes go into meta; later vectors must match."""
    meta = index.meta()
    if not meta.get("dim"):
        name, size = args.identity
        query_prefix, passage_prefix = embedder.prefixes_for(name)
        index.write_meta(embed_model=name, embed_model_size=size, dim=dim, query_prefix=query_prefix,
                         passage_prefix=passage_prefix, **({} if args.via == "server" else {"pooling": embedder.POOLING}))
    elif str(dim) != meta["dim"]:
        raise SystemExit(f"Fehler: {args.identity[0]} liefert Dimension {dim}, {args.db} wurde mit "
                         f"{meta.get('embed_model')} in Dimension {meta['dim']} gebaut – neu bauen mit: "
                         f"python3 build_index.py --rebuild")


def embed_and_store(index, todo, args, stats):
    """Embed the chunk texts that have no vector in the index yet (vectors are reused by text hash,
    across pages), and write each page, in path order, as soon as all its vectors exist, one
    transaction each. Returns [(path, chunks embedded for it, seconds since the start)]."""
    needed = {}  # text hash -> embedded text
    for page in todo:
        for (heading, content), key in zip(page.chunks, page.keys):
            needed.setdefault(key, embedded_text(heading, content))
    vectors = index.reusable(needed)
    missing = [h for h in needed if h not in vectors]
    stats["reused"] = sum(len(page.keys) for page in todo) - len(missing)
    _, passage_prefix = embedder.prefixes_for(args.identity[0])  # e5: "passage: "
    passage_prefix = index.meta().get("passage_prefix", passage_prefix)  # an index keeps the prefix it was built with
    pending, written, fresh, started = collections.deque(todo), [], set(missing), time.monotonic()
    progress = Progress(len(todo), not args.quiet)

    def flush_ready():
        while pending and all(k in vectors for k in pending[0].keys):
            page = pending.popleft()
            chunks = [store.Chunk(h, c, vectors[k], k, safety.scan(c), None) for (h, c), k in zip(page.chunks, page.keys)]
            index.write_page(page.path, page.hash, with_search_text(chunks, index.vocab()))
            written.append((page.path, sum(k in fresh for k in page.keys), time.monotonic() - started))

    try:
        flush_ready()  # pages whose chunks are all reused
        for start, batch in embed_all([passage_prefix + needed[h] for h in missing], args):
            remember_model(index, args, len(batch[0]))
            vectors.update(zip(missing[start:start + len(batch)], batch))
            stats["embedded"] += len(batch)
            flush_ready()
            progress.show(len(written), stats["embedded"], len(missing))
    except embedder.EmbeddingError as exc:
        progress.done()
        raise SystemExit(f"Fehler: {exc} ({len(written)} Seiten dieses Laufs gespeichert; erneut starten setzt fort)")
    progress.done()
    return written


def with_search_text(chunks, vocab):
    """The chunks with their folded search text (heading, body) from rag/text/german.py."""
    return [c._replace(search=(german.index_text(c.heading, vocab), german.index_text(c.content, vocab)))
            for c in chunks]


def refresh_search(index):
    """Relearn the compound vocabulary from the indexed text; rewrite every search text if it changed."""
    meta = index.meta()
    if meta.get("vocab_dirty") != "1" and meta.get("search_version") == german.SEARCH_VERSION:
        return
    rows = index.texts()
    vocab = german.learn_vocabulary(h + "\n" + c for _, h, c in rows)
    if vocab != index.vocab() or meta.get("search_version") != german.SEARCH_VERSION:
        index.replace_search(vocab, [(i, german.index_text(h, vocab), german.index_text(c, vocab)) for i, h, c in rows],
                             vocab_dirty=0, search_version=german.SEARCH_VERSION)
    else:
        index.write_meta(vocab_dirty=0, search_version=german.SEARCH_VERSION)


def report_flags(index, paths):
    for path, heading, flags in index.flagged():
        if path in paths:
            for flag in json.loads(flags) if isinstance(flags, str) else flags:
                print(f"Markiert: {path} › {heading}: {flag['rule']} „{flag['match']}“", file=sys.stderr)


def pii_settings():
    """(kinds, keep) from RAG_PII_KINDS and RAG_PII_KEEP, as ask_rag.py masks them (ValueError: bad kind)."""
    return (privacy.parse_kinds(os.environ.get("RAG_PII_KINDS")),
            privacy.parse_keep(os.environ.get("RAG_PII_KEEP")))


def report_pii(index, paths):
    """One stderr line per page of this run with personal data: counts per kind, never the values.

    Example: "Personenbezogene Daten: hr-it/x.md: 2 IBAN, 1 TELEFON" (the index keeps the text as
    it is; ask_rag.py masks it at ask time, see rag/privacy/mask.py; RAG_PII_KINDS/RAG_PII_KEEP apply)
    """
    kinds, keep = pii_settings()
    for path in sorted(paths):
        found = privacy.describe(privacy.counts("\n\n".join(index.page_contents(path)), kinds, keep))
        if found:
            print(f"Personenbezogene Daten: {path}: {found}", file=sys.stderr)


def check_setup(args):
    """Wiki, pages, embedder and model must be there before anything is opened (one German line each)."""
    wiki = Path(args.wiki)
    if not wiki.is_dir():
        raise SystemExit(f"Fehler: Wiki-Ordner {wiki} nicht gefunden – Pfad mit --wiki oder RAG_WIKI angeben.")
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
    return wiki


def build(args):
    """The post's index_wiki(): read every page, chunk what changed, embed what is new, store it.

    Returns the run's counts and [(path, chunks embedded, seconds)] of the pages written.
    """
    started = time.monotonic()
    wiki = Path(args.wiki)
    pages = find_pages(wiki)
    if not pages:
        raise SystemExit(f"Fehler: keine .md- oder .txt-Seiten (auch kein PDF, HTML, .docx) in {wiki} – "
                         f"Markdown-Dateien dort ablegen.")
    index = open_index(args)  # a writer: a second build_index.py waits for this one
    stats = dict(added=0, changed=0, removed=0, unchanged=0, embedded=0, reused=0)
    try:
        known = index.pages()
        # 1.+2. read every page, chunk those that changed
        todo, present = read_changed(wiki, pages, known, args, stats)
        if not present:
            raise SystemExit(f"Fehler: keine Seite in {wiki} enthält verwertbaren Text – Warnungen oben beachten.")
        # 3.+4. embed what is not in the index yet, store page by page
        written = embed_and_store(index, todo, args, stats)
        # pages that are gone leave the index (after the adds, so a moved page could reuse vectors)
        gone = sorted(set(known) - present)
        for rel in gone:
            index.delete_page(rel)
        stats["removed"] = len(gone)
        refresh_search(index)
        report_flags(index, {path for path, *_ in written})
        report_pii(index, [path for path, *_ in written])
        count, dim = index.count(), index.meta().get("dim")
        index.finish(ann=args.ann)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    finally:
        index.close()
    seconds = time.monotonic() - started
    if not args.watching:
        print(f"Seiten: {stats['added']} neu, {stats['changed']} geändert, {stats['removed']} entfernt, "
              f"{stats['unchanged']} unverändert · Chunks: {stats['embedded']} eingebettet, "
              f"{stats['reused']} wiederverwendet, {count} im Index (Dimension {dim}) · "
              f"{seconds:.1f} s → {index.label}", flush=True)
    return dict(stats, written=written, gone=gone, known=set(known), seconds=seconds)


# -- watch: follow the wiki folder -----------------------------------------------------------------
def snapshot(wiki):
    """{path: (mtime_ns, size, inode)} of every page: what a poll compares. Example: {"a.md": (1733…, 120, 4711)}"""
    found = {}
    for rel in find_pages(wiki):
        try:
            st = os.stat(wiki / rel)
        except OSError:
            continue
        found[rel] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return found


def describe_run(run):
    """One line per page a watch cycle changed. Example: geändert: mail/quota.md · 3 Chunks neu · 0.8 s"""
    lines = [f"{'geändert' if path in run['known'] else 'neu'}: {path} · {embedded} Chunk{'' if embedded == 1 else 's'} "
             f"neu · {seconds:.1f} s" for path, embedded, seconds in run["written"]]
    return lines + [f"entfernt: {path} · {run['seconds']:.1f} s" for path in run["gone"]]


def watch(args):
    """build(), then poll the wiki every args.interval seconds and build again when a page changed.

    Each cycle is an ordinary incremental run (one transaction per page, the writer lock only
    while it runs), so Ctrl-C or kill -9 at any point loses nothing that was stored.
    """
    wiki = Path(args.wiki)
    if args.via == "spawn":  # one embedding server for the whole watch, not one per change
        args.spawned = ServerProcess.for_indexing(args.model, server_bin(args), ["x" * 4 * args.max_chars],
                                                  threads=args.threads)
        try:
            args.spawned.start()
        except RuntimeError as exc:
            raise SystemExit(f"Fehler: {exc} – oder --embed-via binary verwenden")
    try:
        seen, failed = snapshot(wiki), None
        build(args)
        print(f"Beobachte {wiki} alle {args.interval:g} s – Strg-C beendet.", flush=True)
        args.watching = True
        while True:
            time.sleep(args.interval)
            now = snapshot(wiki)
            if now == seen:
                continue
            try:
                lines = describe_run(build(args))
                seen, failed = now, None
            except SystemExit as exc:  # e.g. the embedder failed: say it once, try again at the next poll
                if str(exc.code) != failed:
                    print(exc.code, file=sys.stderr, flush=True)
                failed = str(exc.code)
                continue
            for line in lines:
                print(line, flush=True)
    finally:
        if getattr(args, "spawned", None):
            args.spawned.stop()


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
                        help="Index: SQLite-Datei oder PostgreSQL-DSN postgresql://… (RAG_DB, Standard: knowledge.db)")
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
    parser.add_argument("--ann", action="store_true",
                        help=f"PostgreSQL: HNSW-Index für die Vektorsuche jetzt anlegen (sonst ab "
                             f"{store.ANN_MIN_CHUNKS:,} Chunks von selbst)".replace(",", "."))
    parser.add_argument("--watch", action="store_true",
                        help="weiterlaufen und geänderte Seiten neu indexieren (Strg-C beendet)")
    parser.add_argument("--interval", type=float, default=WATCH_INTERVAL,
                        help=f"mit --watch: Sekunden zwischen zwei Blicken ins Wiki (Standard: {WATCH_INTERVAL:g})")
    args = parser.parse_args()
    args.watching = False
    if args.batch < 1 or args.max_chars < 100 or args.interval <= 0:
        raise SystemExit("Fehler: --batch muss ≥ 1, --max-chars ≥ 100 und --interval > 0 sein.")
    if args.ann and not store.is_postgres(args.db):
        raise SystemExit("Fehler: --ann (HNSW) gibt es nur mit PostgreSQL (--db postgresql://…); SQLite sucht "
                         "immer exakt – --ann weglassen")
    try:
        pii_settings()
    except ValueError as exc:
        raise SystemExit(f"Fehler: RAG_PII_KINDS: {exc} – z. B. -ADRESSE,-PLZ-ORT oder IBAN,TELEFON,NAME")
    try:
        check_setup(args)
        watch(args) if args.watch else build(args)
    except KeyboardInterrupt:
        print("\nAbgebrochen – bereits gespeicherte Seiten bleiben; erneut starten setzt fort.", file=sys.stderr)
        raise SystemExit(130)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    except store.database_errors() as exc:
        raise SystemExit(f"Fehler: {store.describe_error(args.db, exc)}")


if __name__ == "__main__":
    main()
