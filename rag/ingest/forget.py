"""build_index.py --forget PATH: a page taken back for good, from the index, its files and the audit
log, with proof.

    python3 build_index.py --forget kunden/liste.md   # the page (as the index names it,
                                                        relative to the wiki)
    python3 build_index.py --forget kunden/           # every page below a folder
    -> Vergessen: kunden/liste.md · 3 Chunks, 3 Vektoren, 2 Audit-Zeilen, 1 Bewertungen
       · Prüfung: …

Steps, each finished before the next (a kill at any point: the same command again completes it):
  1. note    the page's distinctive strings (rag/store/proof.py) and its chunk hashes go into a
             pending file beside the deletion log (mode 0600; zeroed and removed in step 5)
  2. index   its chunks, vectors, search text and words out of every table, one transaction per page
  3. audit   every audit line that used one of its chunks keeps time and hashes, loses its text
             (rag/audit/log.py); every vote citing the page is deleted (rag/audit/feedback.py)
  4. scrub   the bytes: SQLite merges FTS5 and truncates the WAL (secure_delete zeroed the rows),
             --vacuum rewrites the file; PostgreSQL runs VACUUM FULL (rag/store/postgres_erase.py)
  5. proof   the raw files (database, WAL, shm, audit log, deletion log, PostgreSQL's relation
             files where readable) searched byte for byte, the live rows through SQL; the receipt
             goes to the deletion log

A page still in the wiki is refused: build_index.py never writes into the wiki (docs/vergessen.md
says why).
Does not handle: the wiki's own history (git), backups, WAL archives, the filesystem's freed blocks.
"""
import json
import os
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path

from rag import store
from rag.audit import feedback
from rag.audit import log as audit
from rag.ingest import chunking, indexing, pages
from rag.store import proof

# tests: the step after which the process SIGKILLs itself (the kill-point tests)
KILL_AT = "RAG_FORGET_KILL_AT"


def add_flags(parser):
    parser.add_argument("--forget", action="append", metavar="PFAD",
                        help="Seite (oder Ordner/) endgültig aus Index, Datenbankdateien und "
                             "Audit-Log entfernen, mit Prüfung und Quittung; die Datei muss im "
                             "Wiki schon gelöscht sein (mehrfach möglich)")
    parser.add_argument("--vacuum", action="store_true",
                        help="mit --forget und SQLite: die Datei danach mit VACUUM neu schreiben "
                             "(docs/vergessen.md)")
    parser.add_argument("--audit", default=os.environ.get("RAG_AUDIT"),
                        help="Audit-Log, das --forget bereinigt (RAG_AUDIT, Standard: neben dem "
                             "Index)")
    parser.add_argument("--forget-log", default=os.environ.get("RAG_FORGET_LOG"),
                        help="Löschprotokoll der Quittungen (RAG_FORGET_LOG, Standard: neben dem "
                             "Audit-Log)")


def log_path(args):
    """The deletion log: --forget-log, else beside the audit log. Example: knowledge.audit.jsonl
    -> knowledge.forget.jsonl"""
    return args.forget_log or args.audit_path.removesuffix(".audit.jsonl") + ".forget.jsonl"


def select(requested, indexed, wiki, known):
    """The paths of the requested pages or folders (sorted) in the index or `known` (audit log,
    pending file); SystemExit when one is still in the wiki or known nowhere. Example:
    ["kunden/"] with indexed {"kunden/a.md", "b.md"} -> ["kunden/a.md"]"""
    chosen = set()
    for raw in requested:
        rel = raw.strip().removeprefix("./")
        found = {p for p in set(indexed) | known if p == rel
                 or (rel.endswith("/") and p.startswith(rel))}
        if not found:
            raise SystemExit(f"Fehler: {rel} ist weder im Index noch im Audit-Log – Pfad so "
                             "angeben, wie ihn der Index nennt (relativ zum Wiki, Ordner mit / am "
                             "Ende)")
        still = sorted(p for p in found if (wiki / p).exists())
        if still:
            raise SystemExit(f"Fehler: {still[0]} liegt noch im Wiki – zuerst dort löschen "
                             "(auch aus der Git-Historie), dann erneut: python3 build_index.py "
                             f"--forget {rel}")
        chosen |= found
    return sorted(chosen)


def audited_paths(path):
    """Every page path an audit line cites. Example: a log citing mail/a.md twice
    -> {"mail/a.md"}"""
    if not os.path.exists(path):
        return set()
    return {c.get("path") for e in audit.read(path) for c in e.get("chunks") or []}


def note(index, paths):
    """What step 1 keeps: the pages' chunk hashes (as the audit log has them) and their distinctive
    strings."""
    rows = [r for p in paths for r in index.sources(index.ids_below(p)).values() if r.path == p]
    mine = {r.doc_id for r in rows}
    words = json.loads(index.meta().get("page_words") or "{}")
    others = [f"{h}\n{c}" for i, h, c in index.texts() if i not in mine]
    others += [w for p, w in words.items() if p not in paths]
    asked = index.questions()  # the sections' questions (rag/ingest/questions.py) go with the page
    others += [q for p, _, _, q in asked if p not in paths]
    texts = [f"{r.heading}\n{r.content}" for r in rows] + [words.get(p, "") for p in paths]
    texts += [q for p, _, _, q in asked if p in paths]
    shared = index.reusable([pages.text_hash(chunking.embedded_text(r.heading, r.content))
                             for r in rows])
    return {"paths": paths, "hashes": sorted({audit.sha256(r.content) for r in rows}),
            "chunks": len(rows), "needles": proof.needles(texts, others, paths),
            "keys": sorted(shared), "audit_lines": 0, "done": []}


def step(pending, file, name):
    """Mark a step done in the pending file; the kill-point tests stop the process here."""
    pending["done"].append(name)
    write_private(file, json.dumps(pending, ensure_ascii=False))
    if os.environ.get(KILL_AT) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def write_private(path, text):
    """Write a file only its owner can read, flushed to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def shred(path):
    """Overwrite a file with zeros, flush, remove it."""
    if os.path.exists(path):
        with open(path, "r+b") as f:
            f.write(bytes(os.fstat(f.fileno()).st_size))
            f.flush()
            os.fsync(f.fileno())
        os.unlink(path)


def run(args):
    """The five steps; returns the exit code (1: the proof found a string of the page)."""
    args.audit_path = args.audit or audit.default_path(args.db)
    file = log_path(args) + ".offen"  # the pending file of steps 1–4
    # it must exist (StoreError: one German line); a writer would create it
    store.open_store(args.db).close()
    # the writer lock: no build_index.py runs meanwhile
    index = store.open_store(args.db, create=True)
    try:
        pending = (json.loads(Path(file).read_text(encoding="utf-8")) if os.path.exists(file)
                   else None)
        known = audited_paths(args.audit_path) | set(pending["paths"] if pending else [])
        paths = select(args.forget, index.pages(), Path(args.wiki), known)
        if pending is None or not set(paths) <= set(pending["paths"]):
            pending = note(index, sorted(set(paths) | set(pending["paths"] if pending else [])))
            step(pending, file, "note")
        if "index" not in pending["done"]:
            for path in pending["paths"]:
                index.delete_page(path)
            indexing.remember_words(index, dict.fromkeys(pending["paths"], ""))
            indexing.refresh_search(index)
            step(pending, file, "index")
        if "audit" not in pending["done"]:
            pending["audit_lines"] += audit.redact(args.audit_path, pending["hashes"],
                                                   pending["paths"])
            pending["votes"] = pending.get("votes", 0) + feedback.forget(args.db, pending["paths"])
            step(pending, file, "audit")
        if "scrub" not in pending["done"]:
            pending["wal"] = index.scrub(vacuum=args.vacuum or index.kind == "postgres")
            step(pending, file, "scrub")
        shred(file)
        return prove(index, pending, args)
    finally:
        index.close()


def prove(index, pending, args):
    """Step 5: search every file and the live rows; print the receipt and append it to the deletion
    log."""
    files = index.raw_files() + feedback.files(args.db) + [args.audit_path, log_path(args)]
    if index.kind == "sqlite":
        files += sorted(str(p) for p in Path(args.db).parent.glob(Path(args.db).name + "*")
                        if p.is_file())
    files = [f for f in dict.fromkeys(files) if os.path.exists(f)]
    hits, rows = proof.scan(files, pending["needles"]), index.leftovers(pending["needles"])
    rows.update(feedback.leftovers(args.db, pending["needles"]))
    vectors = len(set(pending["keys"]) - set(index.reusable(pending["keys"])))
    receipt = {"time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "paths": pending["paths"], "chunks": pending["chunks"], "vectors": vectors,
               "audit_lines": pending["audit_lines"], "votes": pending.get("votes", 0),
               "store": index.kind, "vacuum": bool(args.vacuum or index.kind == "postgres"),
               "check": {"needles": len(pending["needles"]), "files": len(files),
                         "hits": {os.path.basename(f): n for f, n in hits.items()}, "rows": rows}}
    with open(log_path(args), "a", encoding="utf-8") as f:
        f.write(json.dumps(receipt, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"Vergessen: {', '.join(pending['paths'])} · {receipt['chunks']} Chunks, {vectors} "
          f"Vektoren, {receipt['audit_lines']} Audit-Zeilen, {receipt['votes']} Bewertungen · "
          f"Prüfung: {sum(hits.values()) + sum(rows.values())} Treffer für "
          f"{len(pending['needles'])} Suchwörter in {len(files)} Dateien und den Tabellen → "
          f"{log_path(args)}")
    for where, n in [*hits.items(), *rows.items()]:
        print(f"Fehler: {where} enthält noch {n} Treffer der Seite – Leser schließen "
              f"(ask_rag.py --serve hält die WAL offen) und erneut --forget, oder --vacuum",
              file=sys.stderr)
    return 1 if hits or rows else 0
