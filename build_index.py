#!/usr/bin/env python3
"""Step 1 of the post: read the wiki, cut it into chunks, embed them, store them in SQLite.

    python3 build_index.py                 # wiki/ -> knowledge.db, only what changed
    python3 build_index.py --rebuild       # from scratch (e.g. after changing the model)
    python3 build_index.py --forget a.md   # a deleted page out of the index, its files and the audit log, with proof

Steps, in the order of the post, each one call into rag/ingest/:
  1. read     wiki/**/*.md, *.txt and *.rst (Sphinx, rag/ingest/rst/), PDF (scans by OCR), HTML, Office
              files, images and e-mails as Markdown (rag/ingest/formats/), front matter stripped, hidden
              text dropped with a warning; only pages whose bytes changed (pages.py)
  2. chunk    at paragraph boundaries up to MAX_CHARS, each chunk under its heading path (chunking.py)
  3. embed    many chunks per call: a llama-server --embeddings started for the run (--embed-via spawn),
              llama-embedding processes as in the post (binary) or a running OpenAI-compatible endpoint
              (server) (embed_chunks.py)
  4. store    docs + vectors + search text in knowledge.db (rag/store/), one transaction per page (indexing.py);
              who may read each page (.access files, front matter access:) first (access_rules.py)
  5. ask      with --questions only: a chat model writes questions that each section answers, in
              a reader's words; stored with it and searched beside it (questions.py; off: slow)
  6. headings each section's title and heading, embedded as a question for the authors' report
              (ask_rag.py --report: "Schwer zu finden"), kept beside the votes (headings.py)

Incremental: unchanged pages are skipped, a chunk already in the index reuses its vector, and a
crash leaves every page entirely old or entirely new; the next run finishes the job. Bad input
never stops the run: an unusable file is skipped with one German warning naming it.

Does not handle: formats other than those of rag/ingest/formats/ (no .doc/.xls/.ppt, no Outlook .msg),
setext headings (underlined with ===). A second writer waits for the first (rag/store/), it never interleaves.
"""
import argparse
import sys
import time
from pathlib import Path

from rag import config
from rag import store
from rag.doors import flags
from rag.ingest import (chunking, embed_chunks, forget, formats, headings, indexing, pages,
                        questions, report, watch)
from rag.store import users


# -- the run: read → chunk → embed → store ---------------------------------------------------------
def build(args):
    """The post's index_wiki(): read every page, chunk what changed, embed what is new, store it.

    Returns the run's counts and [(path, chunks embedded, seconds)] of the pages written.
    """
    started = time.monotonic()
    wiki = Path(args.wiki)
    found = pages.find_pages(wiki)
    if not found:
        raise SystemExit(f"Fehler: keine .md- oder .txt-Seiten (auch kein .rst, PDF, HTML, "
                         f"Office-Dokument, Bild oder E-Mail) in {wiki} – Markdown-Dateien dort ablegen.")
    index = indexing.open_index(args)  # a writer: a second build_index.py waits for this one
    stats = dict(added=0, changed=0, removed=0, unchanged=0, embedded=0, reused=0)
    present = set()  # the paths that are still pages, filled while reading
    try:
        known = index.pages()
        indexing.sync_access(index, wiki, found, known_groups(args))  # who may read what, before any page is written
        # 1. read every page; those that changed come as text, one by one
        changed = pages.read_changed(wiki, found, known, chunking.settings(args.max_chars), args.pdftotext,
                                     stats, present)
        # 2. chunk them
        todo = chunking.chunk_pages(changed, args.max_chars, present)
        if not present:
            raise SystemExit(f"Fehler: keine Seite in {wiki} enthält verwertbaren Text – Warnungen oben beachten.")
        stats["changed"] = sum(page.path in known for page in todo)
        stats["added"] = len(todo) - stats["changed"]
        # 3.+4. embed what is not in the index yet, store page by page
        written = indexing.embed_and_store(index, todo, args, stats)
        # 5. questions for each section (kept while it stays; asked only with --questions), before
        #    the removed pages go: a moved section takes its questions along
        asked = questions.attach(index, args, present, questions.old_questions(args))
        gone = indexing.forget_gone(index, known, present)  # after the adds: a moved page reuses its vectors
        stats["removed"] = len(gone)
        indexing.refresh_search(index)
        if gone:  # the removed pages' bytes too: FTS5 merged, plain VACUUM (docs/vergessen.md)
            index.scrub(vacuum=False)
        # 6. each section's own question, embedded for the authors' report (headings.py)
        headings.attach(index, args)
        report.report(index, written)
        count, dim = index.count(), index.meta().get("dim")
        index.finish(ann=args.ann)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    finally:
        index.close()
    seconds = time.monotonic() - started
    if not args.watching:
        if args.questions or asked["copied"] or asked["dropped"]:
            print(questions.describe(asked), flush=True)
        print(report.summary(stats, count, dim, seconds, index.label), flush=True)
    return dict(stats, written=written, gone=gone, known=set(known), seconds=seconds)


# -- flags -----------------------------------------------------------------------------------------
def known_groups(args):
    """The groups of --users (for the warning about a rule naming an unknown group); None without a users file."""
    if not args.users:
        return None
    try:
        return {g for user in users.load(args.users).values() for g in user.groups}
    except users.UsersError as exc:
        raise SystemExit(f"Fehler: {exc}")


def parse_flags():
    """The flags, with their environment variables as defaults (--db, --model … from rag/doors/flags.py)."""
    batch, max_chars, interval = embed_chunks.BATCH, chunking.MAX_CHARS, watch.WATCH_INTERVAL
    parser = argparse.ArgumentParser(
        description="Baut den Suchindex (knowledge.db) aus den Seiten des Wikis (Markdown, Text, reST, PDF, "
                    "HTML, .docx).",
        epilog="Umgebungsvariablen: RAG_WIKI, RAG_DB, LLAMA_EMBEDDING, RAG_EMBED_MODEL, RAG_EMBED_BATCH, "
               "RAG_EMBED_THREADS, RAG_EMBED_TIMEOUT, RAG_EMBED_VIA, RAG_EMBED_URL, RAG_EMBED_MODEL_NAME, "
               "RAG_API_KEY, RAG_PDFTOTEXT, RAG_AUDIT und RAG_FORGET_LOG (für --forget), RAG_PII_KINDS und RAG_PII_KEEP (für die Meldung personenbezogener Daten), "
               "RAG_QUESTIONS_SERVER und RAG_QUESTIONS_MODEL_NAME (für --questions), "
               "RAG_CACHE (Ort des Setups).")
    parser.add_argument("--wiki", default=config.env_str("RAG_WIKI", "wiki"),
                        help="Ordner mit den Seiten (RAG_WIKI, Standard: wiki)")
    flags.add_index(parser)
    flags.add_embedding(parser, side="index")
    parser.add_argument("--embed-via", choices=("auto", "spawn", "binary", "server"),
                        default=config.env_str("RAG_EMBED_VIA", embed_chunks.EMBED_VIA),
                        help="spawn: einen llama-server --embeddings für den Lauf starten (der neben "
                             "llama-embedding); binary: llama-embedding-Prozesse wie im Artikel; server: laufender "
                             "OpenAI-kompatibler Endpunkt (--embed-url); auto (Standard): spawn, wenn llama-server "
                             "neben llama-embedding liegt, sonst binary (RAG_EMBED_VIA)")
    flags.add_embed_server(parser, side="index")
    parser.add_argument("--batch", type=int, default=config.env_int("RAG_EMBED_BATCH", batch),
                        help=f"Chunks pro llama-embedding-Aufruf bzw. Server-Anfrage (RAG_EMBED_BATCH, Standard: {batch})")
    parser.add_argument("--threads", type=int, default=config.env_int("RAG_EMBED_THREADS", 0) or None,
                        help="CPU-Threads für llama-embedding (RAG_EMBED_THREADS, Standard: llama.cpp)")
    parser.add_argument("--timeout", type=int, default=config.env_int("RAG_EMBED_TIMEOUT", 0) or None,
                        help="Sekunden pro llama-embedding-Aufruf (RAG_EMBED_TIMEOUT, Standard: 120 + 2 je Chunk)")
    parser.add_argument("--pdftotext", default=formats.default_pdftotext(),
                        help="pdftotext aus poppler-utils für PDF-Seiten (RAG_PDFTOTEXT; Standard: PATH)")
    parser.add_argument("--max-chars", type=int, default=max_chars, help=f"maximale Chunk-Länge (Standard: {max_chars})")
    parser.add_argument("--rebuild", action="store_true", help="Index komplett neu bauen (alter bleibt bis zum Ende)")
    parser.add_argument("--quiet", action="store_true", help="keine Fortschrittsanzeige")
    parser.add_argument("--ann", action="store_true",
                        help=f"PostgreSQL: HNSW-Index für die Vektorsuche jetzt anlegen (sonst ab "
                             f"{store.ANN_MIN_CHUNKS:,} Chunks von selbst)".replace(",", "."))
    forget.add_flags(parser)  # --forget PATH, --vacuum, --audit, --forget-log (rag/ingest/)
    parser.add_argument("--users", default=config.env_str("RAG_USERS", ""), metavar="FILE",
                        help="Benutzerdatei: warnt vor Rechte-Regeln mit Gruppen, die kein Benutzer hat (RAG_USERS)")
    parser.add_argument("--questions", nargs="?", metavar="URL",
                        default=config.env_str("RAG_QUESTIONS_SERVER", None),
                        const=config.env_str("LLAMA_SERVER_URL", config.DEFAULT_SERVER_URL),
                        help="ein Chat-Modell schreibt zu jedem Abschnitt bis zu 3 Fragen in "
                             "Lesersprache, die mit durchsucht werden (langsam: ~7 s je Abschnitt "
                             "auf 2 Kernen; nur geänderte Abschnitte werden neu befragt); URL "
                             "eines OpenAI-kompatiblen Servers (RAG_QUESTIONS_SERVER; ohne URL: "
                             "LLAMA_SERVER_URL; Standard: aus)")
    parser.add_argument("--questions-model-name",
                        default=config.env_str("RAG_QUESTIONS_MODEL_NAME", None),
                        help="Modellname für --questions, als \"model\" gesendet "
                             "(RAG_QUESTIONS_MODEL_NAME; Ollama und vLLM brauchen ihn)")
    parser.add_argument("--watch", action="store_true",
                        help="weiterlaufen und geänderte Seiten neu indexieren (Strg-C beendet)")
    parser.add_argument("--interval", type=float, default=interval,
                        help=f"mit --watch: Sekunden zwischen zwei Blicken ins Wiki (Standard: {interval:g})")
    return parser.parse_args()


def check_flags(args):
    """Values the parser cannot check: one German line and exit 1 for each."""
    if args.batch < 1 or args.max_chars < 100 or args.interval <= 0:
        raise SystemExit("Fehler: --batch muss ≥ 1, --max-chars ≥ 100 und --interval > 0 sein.")
    if args.ann and not store.is_postgres(args.db):
        raise SystemExit("Fehler: --ann (HNSW) gibt es nur mit PostgreSQL (--db postgresql://…); SQLite sucht "
                         "immer exakt – --ann weglassen")
    try:
        report.pii_settings()
    except ValueError as exc:
        raise SystemExit(f"Fehler: RAG_PII_KINDS: {exc} – z. B. -ADRESSE,-PLZ-ORT oder IBAN,TELEFON,NAME")


def main():
    args = parse_flags()
    args.watching = False
    check_flags(args)
    try:
        if args.forget:  # no embedder needed: nothing is embedded
            raise SystemExit(forget.run(args))
        indexing.check_setup(args)
        if args.questions:
            args.questions = args.questions.rstrip("/").removesuffix("/v1")  # an OpenAI base URL
            questions.check_server(args)
        watch.watch(args, build) if args.watch else build(args)
    except KeyboardInterrupt:
        print("\nAbgebrochen – bereits gespeicherte Seiten bleiben; erneut starten setzt fort.", file=sys.stderr)
        raise SystemExit(130)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    except store.database_errors() as exc:
        raise SystemExit(f"Fehler: {store.describe_error(args.db, exc)}")


if __name__ == "__main__":
    main()
