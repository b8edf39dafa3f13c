"""Votes on answers: 👍 or 👎 and an optional comment, keyed by the answer's id, beside the
index.

    record = find("knowledge.audit.jsonl", "a-3f9c0e5d7b1a2c4e")   # its audit line, or None
    rate("knowledge.db", record, -1, "Die Quota stimmt nicht")
    -> {"id": "a-3f9c0e5d7b1a2c4e", "vote": -1, "comment": "Die Quota stimmt nicht",
        "cited": [{"path": "mail/quota.md", "heading": "Mail › Quota"}], "time": "2026-…"}
    votes("knowledge.db", since="2026-01-01T00:00:00+00:00") -> [that row, …]   (newest first)
    forget("knowledge.db", ["mail/quota.md"]) -> 1   (the votes citing the page, gone byte for byte)

Where: SQLite keeps the table `votes` in a file beside the index (knowledge.db ->
knowledge.feedback.db), PostgreSQL in the schema `rag_feedback` of the index's database. Not in
the index's own tables: `build_index.py --rebuild` replaces the index's file (or schema) whole,
and the votes must outlive it.

A row holds the answer's id, when it was voted, +1 or -1, the comment (masked by the caller as the
audit log masks a question) and the paths and headings the answer cited, copied from its audit
line so that `build_index.py --forget PAGE` finds them (cited(): the cited sources, or all of them
when it cited none, as after "Dazu habe ich keine Information."). Nothing says who voted.

Only the asker may vote: an audit line with a pseudonym (rag/audit/log.py) takes votes only
from that pseudonym, so an id seen in the report cannot change someone else's vote. A second vote
on the same answer replaces the first.

Does not handle: votes without the audit log (--no-audit: the id is known nowhere), several votes
per answer.
"""
import base64
import json
import mmap
import os
import sqlite3
import threading
from datetime import datetime, timedelta, timezone

from rag.audit import log as audit
from rag.store import is_postgres
from rag.store.vectors import floats, pack

SCHEMA = "rag_feedback"  # PostgreSQL: the votes' own schema, next to the index's `rag`
TABLES = ("""CREATE TABLE IF NOT EXISTS votes (id text PRIMARY KEY, voted_at text NOT NULL,
vote integer NOT NULL, comment text NOT NULL, cited text NOT NULL)""",
          "CREATE TABLE IF NOT EXISTS kept (key text PRIMARY KEY, state text NOT NULL, "
          "value text NOT NULL)")  # kept: what the report keeps between runs (recall, remember)
KEPT_OPEN = {}  # SQLite file -> an idle connection, open while the process runs (keep_open)
LOCK = threading.Lock()  # the doors' threads fill KEPT_OPEN one at a time
MAX_COMMENT = 2000  # characters of a comment


class FeedbackError(Exception):
    """A vote that cannot be stored: one German line, and the HTTP status a door answers with."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


def now():
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def days_ago(days):
    """The ISO time `days` days ago (UTC), comparable as text with stored times; None for None."""
    if days is None:
        return None
    return (datetime.now(timezone.utc) - timedelta(days=days)).isoformat(timespec="seconds")


# -- the answer a vote belongs to: its audit line ---------------------------------------------
def find(path, answer_id):
    """The audit line of this answer, or None (no line has this id, or the line was forgotten:
    build_index.py --forget left only its hashes). The file is searched from its end (mmap,
    bytes.rfind), so a vote on a recent answer reads only the log's last lines."""
    needle = b'"id": ' + json.dumps(answer_id).encode("utf-8")
    try:
        f = open(path, "rb")
    except (FileNotFoundError, IsADirectoryError):
        return None
    with f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            end = len(data)
            while (at := data.rfind(needle, 0, end)) >= 0:
                start, stop = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
                entry = parsed(data[start:stop if stop >= 0 else len(data)])
                if entry is not None and entry.get("id") == answer_id:
                    return None if entry.get("forgotten") else entry
                end = at
    return None


def parsed(line):
    """One audit line as a dict, or None when it is not one."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def cited(entry):
    """The paths and headings an answer rests on: its valid citations, else every source shown.

    Example: chunks [a.md › A, b.md › B], citations {"valid": [2]}
             -> [{"path": "b.md", "heading": "B"}]
    """
    chunks = entry.get("chunks") or []
    valid = (entry.get("citations") or {}).get("valid") or []
    chosen = [chunks[n - 1] for n in valid if isinstance(n, int) and 0 < n <= len(chunks)] or chunks
    out = []
    for chunk in chosen:
        item = {"path": chunk.get("path"), "heading": chunk.get("heading") or ""}
        if item not in out:
            out.append(item)
    return out


# -- the table --------------------------------------------------------------------------------
def file_for(db):
    """The votes' SQLite file. Example: "knowledge.db" -> "knowledge.feedback.db"; a DSN -> None"""
    if is_postgres(db):
        return None
    root, _ = os.path.splitext(db)
    return root + ".feedback.db"


class Table:
    """The votes' tables of one index: SQLite file or PostgreSQL schema; conn None while there are
    none (and create is False)."""

    def __init__(self, db, create=False):
        self.db, self.kind = db, "postgres" if is_postgres(db) else "sqlite"
        self.mark = "%s" if self.kind == "postgres" else "?"
        postgres = self.kind == "postgres"
        self.conn = self.open_postgres(create) if postgres else self.open_sqlite(create)

    def open_sqlite(self, create):
        path = file_for(self.db)
        if not create and not os.path.exists(path):
            return None
        try:
            conn = sqlite3.connect(path, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # as the index: no fsync per commit
            conn.execute("PRAGMA secure_delete=ON")  # a deleted vote's bytes become zeros
            for table in TABLES:
                conn.execute(table)
            keep_open(path)
        except sqlite3.Error as exc:
            raise FeedbackError(f"Bewertungen {path} nicht nutzbar ({exc}) – Datei prüfen oder "
                                f"umbenennen", 500)
        return conn

    def open_postgres(self, create):
        from rag.store import postgres_setup  # only here: SQLite users never read it
        conn = postgres_setup.connect(self.db)
        there = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                             (f"{SCHEMA}.votes",)).fetchone()[0]
        if not there and not create:
            conn.close()
            return None
        if not there:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
        conn.execute(f"SET search_path TO {SCHEMA}")
        for table in TABLES if not there else ():
            conn.execute(table)
        return conn

    def rows(self, sql, params=()):
        if self.conn is None:
            return []
        return self.conn.execute(sql.replace("?", self.mark), params).fetchall()

    def write(self, *statements):
        """Run (sql, params) pairs in one transaction."""
        if self.kind == "postgres":
            with self.conn.transaction():
                for sql, params in statements:
                    self.conn.execute(sql.replace("?", self.mark), params)
            return
        with self.conn:
            for sql, params in statements:
                self.conn.execute(sql, params)

    def close(self):
        if self.conn is not None:
            self.conn.close()


def keep_open(path):
    """Hold one idle connection to the SQLite file while the process runs (KEPT_OPEN). Closing the
    last connection checkpoints the WAL into the file and syncs it: ~10 ms, each vote of --serve.
    With this one open, a vote's own connection is never the last. It reads nothing after its
    first look, so its cache can never show an old state."""
    with LOCK:
        if path not in KEPT_OPEN:
            idle = sqlite3.connect(path, timeout=30, check_same_thread=False)
            idle.execute("PRAGMA schema_version").fetchone()  # maps the WAL index: it counts
            KEPT_OPEN[path] = idle


# -- votes ------------------------------------------------------------------------------------
def check(vote, comment):
    """The vote as +1/-1 and the comment as text, or FeedbackError.

    Example: check("-1", None) -> (-1, ""); check(2, "") -> FeedbackError("vote muss +1 …")
    """
    if isinstance(vote, str) and vote.strip() in ("+1", "1", "-1"):
        vote = int(vote)
    if vote not in (1, -1) or isinstance(vote, bool):
        raise FeedbackError("vote muss +1 (👍) oder -1 (👎) sein")
    if comment is not None and not isinstance(comment, str):
        raise FeedbackError("comment muss Text sein")
    comment = (comment or "").strip()
    if len(comment) > MAX_COMMENT:
        raise FeedbackError(f"Kommentar ist länger als {MAX_COMMENT} Zeichen – bitte kürzen")
    return vote, comment


def rate(db, entry, vote, comment="", voter=None, keep_days=None):
    """Store the vote on the answer of audit line `entry` (find()); returns the row as a dict.

    voter: the voter's pseudonym (rag/audit/log.py pseudonym); another asker's line: 403.
    keep_days: --audit-days: older votes are dropped first, as older audit lines are.
    """
    if entry is None:
        raise FeedbackError("diese Antwort-Id steht nicht im Audit-Log – Id aus der Antwort "
                            "kopieren (ohne --no-audit gefragt?)", 404)
    if entry.get("user") and entry.get("user") != voter:
        raise FeedbackError("nur wer gefragt hat, kann diese Antwort bewerten", 403)
    row = {"id": entry["id"], "time": now(), "vote": vote, "comment": comment,
           "cited": cited(entry)}
    stored = (row["id"], row["time"], vote, comment, json.dumps(row["cited"], ensure_ascii=False))
    older = [("DELETE FROM votes WHERE voted_at < ?", (days_ago(keep_days),))] if keep_days else []
    table = Table(db, create=True)
    try:
        table.write(*older, ("DELETE FROM votes WHERE id = ?", (row["id"],)),
                    ("INSERT INTO votes VALUES (?, ?, ?, ?, ?)", stored))
    finally:
        table.close()
    return row


def votes(db, since=None):
    """Every vote since that ISO time (None: all), newest first, as dicts with cited as a list."""
    table = Table(db)
    try:
        found = table.rows("SELECT id, voted_at, vote, comment, cited FROM votes "
                           "WHERE voted_at >= ? ORDER BY voted_at DESC, id", (since or "",))
    finally:
        table.close()
    return [{"id": i, "time": t, "vote": v, "comment": c, "cited": json.loads(p)}
            for i, t, v, c, p in found]


# -- what the report keeps between runs --------------------------------------------------------
def recall(db, keys):
    """{key: value} of the values remembered under any of these keys (JSON)."""
    keys, found = list(keys), {}
    table = Table(db)
    try:
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            found.update(table.rows(f"SELECT key, value FROM kept WHERE key IN "
                                    f"({', '.join('?' * len(part))})", part))
    finally:
        table.close()
    return {key: json.loads(value) for key, value in found.items()}


def remember(db, kind, state, values, only=None):
    """Keep {key: value} (JSON, umlauts as written: the proof of --forget searches their bytes);
    every key starts with `kind` ("hard:", "vectors:"). Rows of that kind with another `state` (an
    older index, another model) go, and with `only` also those whose key is not in it."""
    table = Table(db, create=True)
    try:
        rows = table.rows("SELECT key, state FROM kept WHERE key LIKE ?", (kind + "%",))
        older = {k for k, was in rows if was != state or (only is not None and k not in only)}
        new = [(k, state, json.dumps(v, ensure_ascii=False)) for k, v in values.items()]
        gone = sorted(older | set(values))
        table.write(*[("DELETE FROM kept WHERE key = ?", (k,)) for k in gone],
                    *[("INSERT INTO kept VALUES (?, ?, ?)", row) for row in new])
    finally:
        table.close()


def vector_key(model, question, kind="vectors:"):
    """Where a question's vector is kept for the report (rag/report/gaps.py vectors; the sections'
    own questions under kind "headings:", rag/ingest/headings.py).

    Example: ("e5.gguf", "Kantine?") -> "vectors:e5.gguf:" + sha256 of "Kantine?"
    """
    return f"{kind}{model}:{audit.sha256(question)}"


def encoded(vector):
    """A vector as it is kept beside the votes: float32, base64. Example: [1.0] -> "AACAPw==" """
    return base64.b64encode(pack(vector)).decode()


def decoded(text):
    """The vector `encoded` kept. Example: "AACAPw==" -> [1.0]"""
    return list(floats(base64.b64decode(text)))


def keep_vector(db, model, question, vector):
    """Keep the vector of a refused question, made when it was asked, under vector_key: the report
    groups it without embedding it again. The next report drops it when its audit line is gone, as
    every kept vector (gaps.vectors); --forget drops all of them."""
    key = vector_key(model, question)
    value = json.dumps(encoded(vector))
    table = Table(db, create=True)
    try:
        table.write(("DELETE FROM kept WHERE key = ?", (key,)),
                    ("INSERT INTO kept VALUES (?, ?, ?)", (key, model, value)))
    finally:
        table.close()


# -- forgetting a page (build_index.py --forget) ----------------------------------------------
def forget(db, paths):
    """Delete every vote that cites one of these pages and all the report kept, then their bytes:
    SQLite overwrites the deleted rows (secure_delete) and truncates the WAL, PostgreSQL rewrites
    the tables (VACUUM FULL). Returns how many votes went."""
    table = Table(db)
    if table.conn is None:
        return 0
    try:
        gone = [i for i, c in table.rows("SELECT id, cited FROM votes")
                if {item.get("path") for item in json.loads(c)} & set(paths)]
        table.write(*[("DELETE FROM votes WHERE id = ?", (i,)) for i in gone],
                    ("DELETE FROM kept", ()))
        scrub(table)
    finally:
        table.close()
    return len(gone)


def scrub(table):
    if table.kind == "sqlite":
        table.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return
    from rag.store.postgres_setup import psycopg_module
    table.conn.execute(f"VACUUM FULL {SCHEMA}.votes, {SCHEMA}.kept")
    try:
        table.conn.execute("CHECKPOINT")
    except psycopg_module().Error:
        pass  # without the right the new files reach the disk at the server's next checkpoint


def files(db):
    """The files that hold the votes' bytes, where this process can read them (for the proof)."""
    if not is_postgres(db):
        path = file_for(db)
        return [p for p in (path, path + "-wal", path + "-shm") if os.path.exists(p)]
    from rag.store import postgres_erase
    table = Table(db)
    try:
        return [] if table.conn is None else postgres_erase.raw_files(table.conn, SCHEMA)
    finally:
        table.close()


def leftovers(db, needles):
    """{"votes": rows whose comment or cited pages hold a needle, "kept": …} through SQL; {} is
    the proof."""
    table = Table(db)
    try:
        found = {"votes": table.rows("SELECT comment || cited FROM votes"),
                 "kept": table.rows("SELECT value FROM kept")}
    finally:
        table.close()
    hits = {name: sum(1 for (text,) in rows if any(n in text for n in needles))
            for name, rows in found.items()}
    return {name: n for name, n in hits.items() if n}
