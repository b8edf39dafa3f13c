"""The SQLite store (knowledge.db, as in the post): the interface of rag/store/base.py over one
file.

    index = SQLiteStore("knowledge.db")
    index.pages() -> {"mail/quota.md": "9f2c…"};
    index.vector_scan(q, 50) -> Scan([(0.953, 17), …], "python", 1)

The tables, connect and the migration are in rag/store/sqlite_file.py, the packed vectors and the
scan in rag/store/vectors.py, the full-text side in rag/store/sqlite_lexical.py. --rebuild writes a
new file beside the old one (knowledge.db.rebuild) and renames it over the old one at the end. A
writer holds knowledge.db.lock (flock) until close().

Does not handle: approximate search in SQLite (every query scans every vector), writers on other
machines (the lock is a local file lock, knowledge.db.lock).
"""
import fcntl
import json
import os
import sqlite3
import time

from rag.store import access, vectors
from rag.store.base import LOCK_WAIT, Row, StoreError, busy_message, wait_for
from rag.store.sqlite_file import (connect, delete_page, fts_available, insert_chunk, load_vocab,
                                   read_meta, write_meta)
from rag.store.sqlite_lexical import SQLiteLexical
from rag.store.sqlite_questions import SQLiteQuestions

# 0.2 s apart: a reader (ask_rag.py --serve) finishing its question frees the WAL
CHECKPOINT_TRIES = 25
LEFTOVER_COLUMNS = [("docs", "heading || ' ' || content || ' ' || path"),
                    ("fts", "heading || ' ' || body"),
                    ("vocab", "word"), ("meta", "value"), ("pages", "path"),
                    ("questions", "question || ' ' || heading || ' ' || path")]


def as_store(index):
    """A store from a store or a bare sqlite3 connection (older callers, tests, benchmarks)."""
    return SQLiteStore.wrap(index) if isinstance(index, sqlite3.Connection) else index


class SQLiteStore(SQLiteLexical, SQLiteQuestions):
    """The index in one SQLite file (the post's knowledge.db); see the module docstring. The
    full-text side: rag/store/sqlite_lexical.py; the questions of each section, and the vector scan
    with them: rag/store/sqlite_questions.py."""
    kind = "sqlite"

    def __init__(self, path, create=False, rebuild=False, conn=None, reader=None):
        self.label, self.path = path, path
        self.target = path + ".rebuild" if rebuild else path
        if conn is not None:
            self.conn = conn
            return
        # None: reads everything; set after connect (an index without rules)
        self.groups = access.groups_of(reader)
        if create and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise StoreError(f"Ordner für den Index {path} fehlt – anlegen oder --db / RAG_DB "
                             f"ändern.")
        # before anything is touched
        self.lock = take_lock(path + ".lock", path) if create else None
        try:
            if rebuild:
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(self.target + suffix):
                        os.unlink(self.target + suffix)
            self.conn = connect(self.target, create=create)
        except StoreError:
            self.lock and self.lock.close()
            raise
        if self.groups is not None and not self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'access'").fetchone():
            self.groups = None  # built before rules existed: every page is open

    # the reader's groups (None: everything); the doc ids hidden from them, once
    groups, hidden = None, None

    def hiding(self, column):
        """(" AND column NOT IN temp.hidden", []) that hides the reader's forbidden chunks (column:
        a doc id); ("", []) for a reader of everything. temp.hidden is filled once per opened store
        (hidden_ids), and NOT IN a table with an INTEGER PRIMARY KEY is one lookup per row: the ids
        are not gathered again per query."""
        if self.groups is None:
            return "", []
        self.hidden_ids()
        return f" AND {column} NOT IN temp.hidden", []

    def hidden_ids(self):
        """The doc ids the reader may not see, as a set (empty for a reader of everything); the
        first call also writes them into the connection's temporary table `hidden` (gone when the
        store closes)."""
        if self.hidden is None and self.groups is None:
            self.hidden = set()
        elif self.hidden is None:
            sql, params = access.hidden_sql(self.groups, "?")
            with self.conn:
                self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS hidden (id INTEGER PRIMARY KEY)")
                self.conn.execute(f"INSERT OR IGNORE INTO temp.hidden SELECT id FROM docs "
                                  f"WHERE path IN ({sql})", params)
            self.hidden = {i for i, in self.conn.execute("SELECT id FROM temp.hidden")}
        return self.hidden

    @classmethod
    def wrap(cls, conn):
        return cls(database_label(conn), conn=conn)

    lock = None

    # -- meta, vocabulary, sizes
    def meta(self):
        return read_meta(self.conn)

    def write_meta(self, **values):
        with self.conn:
            write_meta(self.conn, **values)

    kept_vocab = None  # (the file's version, the words): read again after any commit

    def vocab(self):
        """The words, as a frozenset read once per state of the file: a report that searches
        every section reads it once, not per search."""
        version = (self.conn.execute("PRAGMA data_version").fetchone()[0],
                   self.conn.total_changes)
        if self.kept_vocab is None or self.kept_vocab[0] != version:
            self.kept_vocab = (version, frozenset(load_vocab(self.conn)))
        return self.kept_vocab[1]

    def has_lexical(self):
        return fts_available(self.conn)

    def count(self):
        return self.conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0]

    # -- writing (the writer lock is held from open_store(create=True) to close)
    def pages(self):
        return dict(self.conn.execute("SELECT path, file_hash FROM pages"))

    def reusable(self, hashes):
        """{content hash: vector} of the chunks already stored with these text hashes."""
        found, hashes = {}, list(hashes)
        for i in range(0, len(hashes), 500):
            part = hashes[i:i + 500]
            rows = self.conn.execute(f"SELECT content_hash, embedding FROM docs WHERE "
                                     f"content_hash IN ({','.join('?' * len(part))}) "
                                     f"GROUP BY content_hash", part)
            found.update((h, json.loads(e)) for h, e in rows)
        return found

    def write_page(self, path, page_hash, chunks):
        """Replace one page's chunks in one transaction: a crash leaves the page entirely old or
        new."""
        fts = self.has_lexical()
        with self.conn:
            delete_page(self.conn, path)
            for i, c in enumerate(chunks):
                insert_chunk(self.conn, path, i, c.heading, c.content, c.vector, c.content_hash,
                             c.flags, c.search if fts else None)
            self.conn.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?)",
                              (path, page_hash, len(chunks)))
            write_meta(self.conn, vocab_dirty=1)

    def delete_page(self, path):
        with self.conn:
            delete_page(self.conn, path)
            self.drop_questions(path)  # not in write_page: a section that stays keeps its questions
            # forgotten: its rule goes with it
            self.conn.execute("DELETE FROM access WHERE path = ?", (path,))
            write_meta(self.conn, vocab_dirty=1)

    def scrub(self, vacuum):
        """After deletions, the bytes too: FTS5 merges its segments into one (a deleted row's terms
        stay in old segments until then), vacuum rewrites the file without free pages (its temporary
        copy in memory), and the WAL goes into the file and is truncated to 0 bytes. Returns the
        WAL's size left (> 0: a reader held it through every try). secure_delete
        (sqlite_file.connect) has zeroed the deleted rows already."""
        if self.has_lexical():
            with self.conn:
                self.conn.execute("INSERT INTO fts (fts) VALUES ('optimize')")
        if vacuum:
            self.conn.execute("PRAGMA temp_store=MEMORY")
            self.conn.execute("VACUUM")
        return self.checkpoint()

    def checkpoint(self, tries=CHECKPOINT_TRIES):
        """WAL into the file, the WAL truncated; retried while a reader holds an older snapshot."""
        wal = self.target + "-wal"
        for attempt in range(tries):
            busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                break
            time.sleep(0.2)
        return os.path.getsize(wal) if os.path.exists(wal) else 0

    def raw_files(self):
        """The files that hold the index's bytes: the database, its WAL and shared-memory file."""
        return [p for p in (self.target, self.target + "-wal", self.target + "-shm")
                if os.path.exists(p)]

    def leftovers(self, needles):
        """{table: rows whose text holds any needle} through SQL, the live rows only (the files:
        raw_files)."""
        found = {}
        for table, column in LEFTOVER_COLUMNS:
            if table == "fts" and not self.has_lexical():
                continue
            if table == "questions" and not self.has_questions():  # (an index from before them)
                continue
            hits = sum(self.conn.execute(f"SELECT COUNT(*) FROM {table} "
                                         f"WHERE instr({column}, ?) > 0",
                                         (n,)).fetchone()[0] for n in needles)
            if hits:
                found[table] = hits
        return found

    def access(self):
        """{path: (groups…)} of every page with a rule (rag/store/access.py)."""
        return access.rules(self.conn.execute("SELECT path, grp FROM access ORDER BY path, grp"))

    def write_access(self, rules):
        """Set the rules of these pages ({path: groups, None = open}), one transaction; vocabulary
        relearned."""
        with self.conn:
            for path, groups in sorted(rules.items()):
                self.conn.execute("DELETE FROM access WHERE path = ?", (path,))
                self.conn.executemany("INSERT INTO access VALUES (?, ?)", access.rows(path, groups))
            write_meta(self.conn, vocab_dirty=1)

    def restricted_ids(self):
        return {i for i, in self.conn.execute("SELECT id FROM docs WHERE path IN "
                                              "(SELECT path FROM access)")}

    def texts(self):
        return self.conn.execute("SELECT id, heading, content FROM docs ORDER BY id").fetchall()

    def replace_search(self, vocab, rows, **meta):
        """New vocabulary and search text [(id, heading text, body text)] for these chunks (the
        others keep theirs), one transaction."""
        with self.conn:
            self.conn.execute("DELETE FROM vocab")
            self.conn.executemany("INSERT INTO vocab VALUES (?)", [(w,) for w in sorted(vocab)])
            if self.has_lexical():
                self.conn.executemany("DELETE FROM fts WHERE rowid = ?",
                                      [(row[0],) for row in rows])
                self.conn.executemany("INSERT INTO fts (rowid, heading, body) VALUES (?, ?, ?)",
                                      rows)
            write_meta(self.conn, **meta)

    def flagged(self):
        return self.conn.execute("SELECT path, heading, flags FROM docs WHERE flags != '[]' "
                                 "ORDER BY path, chunk_index").fetchall()

    def page_contents(self, path):
        return [c for c, in self.conn.execute("SELECT content FROM docs WHERE path = ? "
                                              "ORDER BY chunk_index", (path,))]

    def finish(self, ann=None):
        """End of an index run: everything into the main file; after --rebuild the new file replaces
        the old."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # (stays in WAL mode for readers)
        self.conn.close()
        if self.target != self.path:
            for path in (self.path + "-wal", self.path + "-shm", self.target + "-wal",
                         self.target + "-shm"):
                if os.path.exists(path):  # the old index's WAL must not meet the new file
                    os.unlink(path)
            os.replace(self.target, self.path)

    def close(self):
        self.conn.close()
        if self.lock:
            self.lock.close()  # releases the flock
            self.lock = None

    # -- reading: chunks and vectors
    def sources(self, doc_ids):
        """{doc_id: Row} for these chunks."""
        if not doc_ids:
            return {}
        hide, params = self.hiding("id")
        rows = self.conn.execute(f"SELECT id, path, chunk_index, heading, content, flags FROM docs "
                                 f"WHERE id IN ({','.join('?' * len(doc_ids))}){hide}",
                                 [*doc_ids, *params])
        return {r[0]: Row(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows}

    def folders(self):
        """The index's top-level folders, sorted.

        Example: pages mail/a.md, mail/b/c.md, x.md -> ["mail/"]
        """
        hide, params = self.hiding("id")
        rows = self.conn.execute(f"SELECT DISTINCT substr(path, 1, instr(path, '/')) FROM docs "
                                 f"WHERE instr(path, '/') > 0{hide}", params)
        return sorted(row[0] for row in rows)

    def ids_below(self, prefix):
        """The doc ids of every chunk below a folder prefix ("mail/"), as a set."""
        hide, params = self.hiding("id")
        rows = self.conn.execute(f"SELECT id FROM docs WHERE substr(path, 1, ?) = ?{hide}",
                                 (len(prefix), prefix, *params))
        return {row[0] for row in rows}

    def section(self, path, heading):
        """[(chunk_index, content)] of one page's chunks under one heading path, in order."""
        hide, params = self.hiding("id")
        return self.conn.execute(f"SELECT chunk_index, content FROM docs WHERE path = ? "
                                 f"AND heading = ?{hide} "
                                 "ORDER BY chunk_index", (path, heading, *params)).fetchall()

    def chunk_scan(self, q, limit, ann=None):
        """Exact: every vector (rag/store/vectors.py picks python, numpy or sqlite-vec); SQLite has
        no ANN."""
        if ann:
            raise StoreError("--ann (HNSW) gibt es nur mit PostgreSQL (--db postgresql://…); "
                             "SQLite sucht immer exakt – --ann weglassen")
        return vectors.scan(self.conn, q, limit, hidden=self.hidden_ids())

    def chunk_similarities(self, q, doc_ids):
        return vectors.similarities(self.conn, q,
                                    [d for d in doc_ids if d not in self.hidden_ids()])


def database_label(conn):
    return vectors.database_path(conn) or ":memory:"


def take_lock(lock_path, label, wait=LOCK_WAIT):
    """The open lock file, flock'ed: the kernel drops the lock when the process ends, even on
    kill -9."""
    try:
        lock = open(lock_path, "a")
    except OSError as exc:
        raise StoreError(f"Sperrdatei {lock_path} nicht anlegbar ({exc.strerror}) – Rechte des "
                         f"Ordners prüfen")

    def take():
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    if not wait_for(take, wait, label):
        lock.close()
        raise StoreError(busy_message(label, wait))
    return lock
