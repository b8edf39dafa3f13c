"""The audit trail: one JSON line per answer, so an answer can be traced to the exact text it used.

    append("knowledge.audit.jsonl",
           {"question": …, "chunks": [{"path", "heading", "sha256"}], …})
    read("knowledge.audit.jsonl")[-1]   # the newest entry (rag/doors/audit_show.py prints it)

Each entry holds the chunks' content hashes and the prompt's hash: even after the wiki changed,
`sha256(content)` of a chunk tells whether the answer rested on today's text.

redact() takes a forgotten page out of the log (build_index.py --forget): its lines keep time and
hashes. Who asked is only a pseudonym (a keyed hash, RAG_AUDIT_SECRET); --audit-days N drops older
lines; --audit-no-text keeps no text of question or answer (docs/rechte.md, "Was das Audit-Log
speichert").

Does not handle: rotation, locking between several writers (lines are appended in one write), the
disk blocks of the log's old copy (the filesystem frees them; docs/vergessen.md).
"""
import hashlib
import hmac
import json
import os
import secrets
from datetime import datetime, timezone


def default_path(db_path):
    """knowledge.db -> knowledge.audit.jsonl, next to the index."""
    root, _ = os.path.splitext(db_path)
    return root + ".audit.jsonl"


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_id():
    """An answer's id: the key of its audit line and its vote (rag/audit/feedback.py).

    Example: new_id() -> "a-3f9c0e5d7b1a2c4e" (16 random hex digits)
    """
    return "a-" + secrets.token_hex(8)


def entry(result, raw_sources, meta, server):
    """The audit line of one answer (a rag/core.py Answer): what was asked, what the model saw
    (hashed), what it answered, every check. raw_sources: the sources before masking, so a hash
    matches the wiki. With a rewritten follow-up or --expand, "searched" holds the original question
    next to what was searched."""
    r = result.retrieval
    return {
        "id": result.id, "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "question": result.question,
        "server": server, "model": result.model, "embed_model": meta.get("embed_model"),
        "mode": r.mode, "strategy": r.strategy, "under": r.under, "llm_called": result.llm_called,
        "chunks": [{"path": s.path, "heading": s.heading, "chunk_index": s.chunk_index,
                    "sha256": sha256(raw.content), "flags": [f["rule"] for f in s.flags],
                    **({"chunks": list(s.chunks)} if s.chunks else {})}
                   for s, raw in zip(r.sources, raw_sources)],
        "prompt_sha256": sha256(result.prompt) if result.prompt else None, "answer": result.text,
        "kind": result.kind, "answerable": result.answerable, "grounding": result.grounding,
        "citations": result.citations,
        "evidence": result.evidence, "support": result.support, "unsupported": result.unsupported,
        "guard": result.guard, "timings": result.timings, "see_also": result.see_also,
        **({"searched": result.searched.as_json()} if result.searched else {})}


def append(path, entry, keep_days=None):
    """Append one line; keep_days: first drop the lines older than that many days (--audit-days)."""
    line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
    if keep_days is not None and os.path.exists(path):
        drop_older(path, keep_days)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)


# what a forgotten page's audit line shows instead of its question and answer
FORGOTTEN = "[vergessen]"
# what a redacted line keeps besides its chunks: no text of any page
KEPT = ("id", "time", "server", "model", "embed_model", "mode", "strategy", "under", "llm_called",
        "kind", "prompt_sha256", "timings")
REDACT_TRIES = 5  # rereads when ask_rag.py appends a line while the log is rewritten


def redacted(entry, hashes, paths, when):
    """The line without the text of the forgotten chunks, or None when it used none of them. It
    keeps its time, its chunks' paths, indexes and hashes, and the fields of KEPT; question and
    answer become FORGOTTEN.

    Example: {"time": "T", "question": "Wer ist Kunde?",
              "chunks": [{"path": "k.md", "sha256": "ab", …}], …}
             with paths {"k.md"}
             -> {"time": "T", "question": "[vergessen]", "answer": "[vergessen]",
             "chunks": [{"path": "k.md", "chunk_index": 0, "sha256": "ab"}], "forgotten": when}
    """
    chunks = entry.get("chunks") or []
    if not any(c.get("sha256") in hashes or c.get("path") in paths for c in chunks):
        return None
    return {**{k: entry[k] for k in KEPT if k in entry}, "question": FORGOTTEN, "answer": FORGOTTEN,
            "chunks": [{k: c[k] for k in ("path", "chunk_index", "sha256") if k in c}
                       for c in chunks],
            "forgotten": entry.get("forgotten", when)}


def redact(path, hashes, paths):
    """Rewrite the audit log with every line that used a forgotten chunk (by content hash or page
    path) redacted; the count and order of lines stay. Written beside it and renamed over it, so a
    crash leaves the old log or the new one; a line appended meanwhile (ask_rag.py) makes it read
    again. Returns the number of lines redacted now (0 without a log)."""
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for _ in range(REDACT_TRIES):
        if not os.path.exists(path):
            return 0
        with open(path, encoding="utf-8") as f:
            text, size = f.read(), os.fstat(f.fileno()).st_size
        old = text.splitlines(keepends=True)
        lines = [redacted_line(line, set(hashes), set(paths), when) for line in old]
        changed = sum(new != line for new, line in zip(lines, old))
        if not changed:
            return 0
        if replace_file(path, "".join(lines), size):
            return changed
    raise OSError(f"{path} wächst ständig")


def redacted_line(line, hashes, paths, when):
    """One line of the log, redacted when it used a forgotten chunk; the same object when not."""
    try:
        old = json.loads(line) if line.strip() else None
    except ValueError:
        return line  # a broken line stays as it is (read() names it)
    new = redacted(old, hashes, paths, when) if isinstance(old, dict) else None
    return line if new is None or new == old else json.dumps(new, ensure_ascii=False,
                                                             sort_keys=True) + "\n"


def replace_file(path, text, size):
    """Write `text` beside `path`, flush it to disk, and rename it over `path` (with the old file's
    mode), unless `path` is no longer `size` bytes long (then False: someone appended a line)."""
    temporary = path + ".neu"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(temporary, os.stat(path).st_mode & 0o777)
    if os.path.getsize(path) != size:
        os.unlink(temporary)
        return False
    os.replace(temporary, path)
    return True


def drop_older(path, days, now=None):
    """Rewrite the log without the lines older than `days` days (atomically: a new file renamed over
    it)."""
    now = now or datetime.now(timezone.utc)
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()

    def recent(line):
        try:
            return ((now - datetime.fromisoformat(json.loads(line)["time"])).total_seconds()
                    <= days * 86400)
        except (ValueError, KeyError, TypeError):
            return True  # a line that cannot be read stays; --audit-show names it
    kept = [line for line in lines if recent(line)]
    if len(kept) < len(lines):
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.writelines(kept)
        os.replace(path + ".tmp", path)


def pseudonym(name, secret):
    """Who asked, as a keyed hash only the holder of the secret can resolve (HMAC-SHA256, 16 hex
    digits); None without a name (the terminal, --serve-key) or without a secret (RAG_AUDIT_SECRET).

    Example: pseudonym("jana", "geheim") -> "p-…" (the same for jana every time;
             another secret, another value)
    """
    if not name or not secret:
        return None
    return "p-" + hmac.new(secret.encode("utf-8"), name.encode("utf-8"),
                           hashlib.sha256).hexdigest()[:16]


def without_text(e):
    """The entry with no text of the question or the answer (--audit-no-text): their hashes and the
    checks only.

    Example: {"question": "Wie?", "answer": "So [1].", …}
             -> {"question": None, "question_sha256": "…", "answer": None, …}
    """
    e = dict(e, question=None, question_sha256=sha256(e.get("question") or ""), answer=None,
             answer_sha256=sha256(e.get("answer") or ""), evidence=None, searched=None,
             unsupported=None,
             support=[{"verdict": s.get("verdict")} for s in e.get("support") or []]
             or e.get("support"))
    if e.get("grounding"):
        e["grounding"] = {k: v for k, v in e["grounding"].items() if k not in ("answer", "facts")}
    if e.get("guard"):
        e["guard"] = {k: len(v) if isinstance(v, list) else v for k, v in e["guard"].items()}
    return e


def read(path):
    if not os.path.exists(path):
        raise SystemExit(f"Fehler: Audit-Log {path} gibt es noch nicht – erst eine Frage stellen "
                         f"(ohne --no-audit).")
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except ValueError:
                raise SystemExit(f"Fehler: Audit-Log {path}, Zeile {number} ist kein JSON – "
                                 f"Zeile reparieren oder entfernen.")
    return entries
