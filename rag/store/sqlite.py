"""The SQLite store (knowledge.db, as in the post): the interface of rag/store/base.py over one file.

    index = SQLiteStore("knowledge.db")
    index.pages() -> {"mail/quota.md": "9f2c…"};  index.vector_scan(q, 50) -> Scan([(0.953, 17), …], "python", 1)

The tables, connect and the migration are in rag/store/sqlite_file.py, the packed vectors and the scan in
rag/store/vectors.py. --rebuild writes a new file beside the old one (knowledge.db.rebuild) and renames it
over the old one at the end. A writer holds knowledge.db.lock (flock) until close().

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
from rag.store.sqlite_questions import SQLiteQuestions

CHECKPOINT_TRIES = 25  # 0.2 s apart: a reader (ask_rag.py --serve) finishing its question frees the WAL
FETCH_FACTOR = 2  # a restricted reader's lexical stage: rows fetched per row asked before the bound is checked;
#                  bench/scale.py --access 0.1, 20k, 100 questions: 1 stage had to fetch more (limit + 10 rows: 46)
TOLERANCE = 1e-9  # relative: FTS5's and Python's BM25 of the same chunk differ by rounding only
LEFTOVER_COLUMNS = [("docs", "heading || ' ' || content || ' ' || path"), ("fts", "heading || ' ' || body"),
                    ("vocab", "word"), ("meta", "value"), ("pages", "path"),
                    ("questions", "question || ' ' || heading || ' ' || path")]


def as_store(index):
    """A store from a store or a bare sqlite3 connection (older callers, tests, benchmarks)."""
    return SQLiteStore.wrap(index) if isinstance(index, sqlite3.Connection) else index


def match_query(groups):
    """One cascade stage as an FTS5 MATCH string: AND over groups, OR within a group, (word, prefix) each.

    Example: [[("frist", False), ("kuendi", True)], [("drucker", False)]] -> '("frist" OR "kuendi"*) AND ("drucker")'
    """
    def phrase(word, prefix):
        return '"' + word.replace('"', '""') + '"' + ("*" if prefix else "")
    return " AND ".join("(" + " OR ".join(phrase(w, p) for w, p in group) + ")" for group in groups)


class SQLiteStore(SQLiteQuestions):
    """The index in one SQLite file (the post's knowledge.db); see the module docstring. The
    questions of each section, and the vector scan with them: rag/store/sqlite_questions.py."""
    kind = "sqlite"

    def __init__(self, path, create=False, rebuild=False, conn=None, reader=None):
        self.label, self.path = path, path
        self.target = path + ".rebuild" if rebuild else path
        if conn is not None:
            self.conn = conn
            return
        self.groups = access.groups_of(reader)  # None: reads everything; set after connect (an index without rules)
        if create and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise StoreError(f"Ordner für den Index {path} fehlt – anlegen oder --db / RAG_DB ändern.")
        self.lock = take_lock(path + ".lock", path) if create else None  # before anything is touched
        try:
            if rebuild:
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(self.target + suffix):
                        os.unlink(self.target + suffix)
            self.conn = connect(self.target, create=create)
        except StoreError:
            self.lock and self.lock.close()
            raise
        if self.groups is not None and not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'access'"
                                                             ).fetchone():
            self.groups = None  # built before rules existed: every page is open

    groups, hidden = None, None  # the reader's groups (None: everything); the doc ids hidden from them, once

    def hiding(self, column):
        """(" AND column NOT IN temp.hidden", []) that hides the reader's forbidden chunks (column: a doc id);
        ("", []) for a reader of everything. temp.hidden is filled once per opened store (hidden_ids), and
        NOT IN a table with an INTEGER PRIMARY KEY is one lookup per row: the ids are not gathered again per query."""
        if self.groups is None:
            return "", []
        self.hidden_ids()
        return f" AND {column} NOT IN temp.hidden", []

    def hidden_ids(self):
        """The doc ids the reader may not see, as a set (empty for a reader of everything); the first call also
        writes them into the connection's temporary table `hidden` (gone when the store closes)."""
        if self.hidden is None and self.groups is None:
            self.hidden = set()
        elif self.hidden is None:
            sql, params = access.hidden_sql(self.groups, "?")
            with self.conn:
                self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS hidden (id INTEGER PRIMARY KEY)")
                self.conn.execute(f"INSERT OR IGNORE INTO temp.hidden SELECT id FROM docs WHERE path IN ({sql})", params)
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

    def vocab(self):
        return load_vocab(self.conn)

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
            rows = self.conn.execute(f"SELECT content_hash, embedding FROM docs WHERE content_hash IN "
                                     f"({','.join('?' * len(part))}) GROUP BY content_hash", part)
            found.update((h, json.loads(e)) for h, e in rows)
        return found

    def write_page(self, path, page_hash, chunks):
        """Replace one page's chunks in one transaction: a crash leaves the page entirely old or new."""
        fts = self.has_lexical()
        with self.conn:
            delete_page(self.conn, path)
            for i, c in enumerate(chunks):
                insert_chunk(self.conn, path, i, c.heading, c.content, c.vector, c.content_hash, c.flags,
                             c.search if fts else None)
            self.conn.execute("INSERT OR REPLACE INTO pages VALUES (?, ?, ?)", (path, page_hash, len(chunks)))
            write_meta(self.conn, vocab_dirty=1)

    def delete_page(self, path):
        with self.conn:
            delete_page(self.conn, path)
            self.drop_questions(path)  # not in write_page: a section that stays keeps its questions
            self.conn.execute("DELETE FROM access WHERE path = ?", (path,))  # forgotten: its rule goes with it
            write_meta(self.conn, vocab_dirty=1)

    def scrub(self, vacuum):
        """After deletions, the bytes too: FTS5 merges its segments into one (a deleted row's terms stay in old
        segments until then), vacuum rewrites the file without free pages (its temporary copy in memory), and
        the WAL goes into the file and is truncated to 0 bytes. Returns the WAL's size left (> 0: a reader
        held it through every try). secure_delete (sqlite_file.connect) has zeroed the deleted rows already."""
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
        return [p for p in (self.target, self.target + "-wal", self.target + "-shm") if os.path.exists(p)]

    def leftovers(self, needles):
        """{table: rows whose text holds any needle} through SQL, the live rows only (the files: raw_files)."""
        found = {}
        for table, column in LEFTOVER_COLUMNS:
            if table == "fts" and not self.has_lexical():
                continue
            if table == "questions" and not self.has_questions():  # (an index from before them)
                continue
            hits = sum(self.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE instr({column}, ?) > 0",
                                         (n,)).fetchone()[0] for n in needles)
            if hits:
                found[table] = hits
        return found

    def access(self):
        """{path: (groups…)} of every page with a rule (rag/store/access.py)."""
        return access.rules(self.conn.execute("SELECT path, grp FROM access ORDER BY path, grp"))

    def write_access(self, rules):
        """Set the rules of these pages ({path: groups, None = open}), one transaction; vocabulary relearned."""
        with self.conn:
            for path, groups in sorted(rules.items()):
                self.conn.execute("DELETE FROM access WHERE path = ?", (path,))
                self.conn.executemany("INSERT INTO access VALUES (?, ?)", access.rows(path, groups))
            write_meta(self.conn, vocab_dirty=1)

    def restricted_ids(self):
        return {i for i, in self.conn.execute("SELECT id FROM docs WHERE path IN (SELECT path FROM access)")}

    def texts(self):
        return self.conn.execute("SELECT id, heading, content FROM docs ORDER BY id").fetchall()

    def replace_search(self, vocab, rows, **meta):
        """New vocabulary and search text [(id, heading text, body text)] for these chunks (the others keep
        theirs), one transaction."""
        with self.conn:
            self.conn.execute("DELETE FROM vocab")
            self.conn.executemany("INSERT INTO vocab VALUES (?)", [(w,) for w in sorted(vocab)])
            if self.has_lexical():
                self.conn.executemany("DELETE FROM fts WHERE rowid = ?", [(row[0],) for row in rows])
                self.conn.executemany("INSERT INTO fts (rowid, heading, body) VALUES (?, ?, ?)", rows)
            write_meta(self.conn, **meta)

    def flagged(self):
        return self.conn.execute("SELECT path, heading, flags FROM docs WHERE flags != '[]' "
                                 "ORDER BY path, chunk_index").fetchall()

    def page_contents(self, path):
        return [c for c, in self.conn.execute("SELECT content FROM docs WHERE path = ? ORDER BY chunk_index", (path,))]

    def finish(self, ann=None):
        """End of an index run: everything into the main file; after --rebuild the new file replaces the old."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # (stays in WAL mode for readers)
        self.conn.close()
        if self.target != self.path:
            for path in (self.path + "-wal", self.path + "-shm", self.target + "-wal", self.target + "-shm"):
                if os.path.exists(path):  # the old index's WAL must not meet the new file
                    os.unlink(path)
            os.replace(self.target, self.path)

    def close(self):
        self.conn.close()
        if self.lock:
            self.lock.close()  # releases the flock
            self.lock = None

    # -- reading: lexical
    def lexical(self, groups, limit):
        """[(BM25, doc_id, search text)] of the chunks matching one cascade stage, best first, ties by id
        (limit None: all of them); only chunks the reader may see.

        BM25 as FTS5 computes it (k1 1.2, b 0.75), heading weighted 2:1 over the body.
        """
        if self.groups is not None:
            return self.own_frequencies(groups, limit)
        return self.conn.execute(
            "SELECT -bm25(fts, 2.0, 1.0), rowid, heading || ' ' || body FROM fts WHERE fts MATCH ? "
            "ORDER BY 1 DESC, rowid LIMIT ?", (match_query(groups), -1 if limit is None else limit)).fetchall()

    def own_frequencies(self, groups, limit):
        """lexical() for a restricted reader: BM25 with the reader's own N and document frequencies (avgdl stays
        the whole index's), so no score or rank depends on what a hidden page contains.

        The visible matches come in FTS5's order (its BM25 over the whole index, W), `fetch` at a time, and each
        is rescored in Python (access.bm25) with the reader's IDF. Both sum the same per-phrase terms, so a chunk's
        own score is at most `most` · W, most = the largest idf(reader) / idf(whole index) of the phrases: once
        `limit` rescored chunks score above `most` · W of the last one fetched, no chunk further down can enter.
        """
        hide, _ = self.hiding("rowid")
        fetch = limit and limit * FETCH_FACTOR

        def candidates(n):  # the best n visible matches by W (n None: all)
            return self.conn.execute(f"SELECT -bm25(fts, 2.0, 1.0), rowid, heading, body FROM fts WHERE fts MATCH ?"
                                     f"{hide} ORDER BY 1 DESC, rowid LIMIT ?", (match_query(groups), n or -1)).fetchall()
        found = candidates(fetch)
        if not found:
            return []
        phrases = [alt for group in groups for alt in group]
        counts = self.conn.execute("SELECT " + ", ".join(  # per phrase: matches in the whole index, visible ones
            f"(SELECT COUNT(*) FROM fts WHERE fts MATCH ?), (SELECT COUNT(*) FROM fts WHERE fts MATCH ?{hide})"
            for _ in phrases), [match_query([[p]]) for p in phrases for _ in (0, 1)]).fetchone()
        rows, tokens = self.fts_totals()
        visible = rows - len(self.hidden_ids())  # lexical_count(), without reading the record again
        idfs = [access.idf(visible, seen) for seen in counts[1::2]]
        most = max(own / access.idf(rows, whole) for own, whole in zip(idfs, counts[0::2]))
        while True:
            scored = sorted(((access.bm25(h, b, phrases, idfs, tokens / rows), i, h + " " + b) for _, i, h, b in found),
                            key=lambda row: (-row[0], row[1]))[:limit]
            if not fetch or len(found) < fetch or scored[-1][0] > most * found[-1][0] * (1 + TOLERANCE):
                return scored
            fetch *= 4
            found = candidates(fetch)

    def fts_totals(self):
        """(rows, tokens of all columns) of the full-text index: FTS5's averages record (fts_data id 1, varints),
        from which FTS5 takes bm25's N and avgdl; committed rows only (a reader's view: this connection's own open
        write transaction is not in it yet). Example: bytes 81 9c 20 02 05 (hex) -> (20000, 2 + 5)"""
        row = self.conn.execute("SELECT block FROM fts_data WHERE id = 1").fetchone()
        numbers, value = [], 0
        for byte in row[0] if row else b"":
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                numbers.append(value)
                value = 0
        return (numbers[0], sum(numbers[1:])) if numbers else (0, 0)

    def matching(self, alternatives):
        """How many chunks the reader may see contain any of these (word, prefix) alternatives."""
        hide, params = self.hiding("rowid")
        return self.conn.execute(f"SELECT COUNT(*) FROM fts WHERE fts MATCH ?{hide}",
                                 (match_query([alternatives]), *params)).fetchone()[0]

    def search_text(self, doc_id):
        hide, params = self.hiding("rowid")
        row = self.conn.execute(f"SELECT heading || ' ' || body FROM fts WHERE rowid = ?{hide}",
                                (doc_id, *params)).fetchone()
        return row[0] if row else ""

    def lexical_count(self):
        """Chunks in the full-text index the reader may see: FTS5's row count less the hidden chunks (every chunk
        has its row in fts)."""
        return self.fts_totals()[0] - len(self.hidden_ids())

    # -- reading: chunks and vectors
    def sources(self, doc_ids):
        """{doc_id: Row} for these chunks."""
        if not doc_ids:
            return {}
        hide, params = self.hiding("id")
        rows = self.conn.execute(f"SELECT id, path, chunk_index, heading, content, flags FROM docs WHERE id IN "
                                 f"({','.join('?' * len(doc_ids))}){hide}", [*doc_ids, *params])
        return {r[0]: Row(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows}

    def folders(self):
        """The index's top-level folders, sorted. Example: pages mail/a.md, mail/b/c.md, x.md -> ["mail/"]"""
        hide, params = self.hiding("id")
        rows = self.conn.execute(f"SELECT DISTINCT substr(path, 1, instr(path, '/')) FROM docs WHERE "
                                 f"instr(path, '/') > 0{hide}", params)
        return sorted(row[0] for row in rows)

    def ids_below(self, prefix):
        """The doc ids of every chunk below a folder prefix ("mail/"), as a set."""
        hide, params = self.hiding("id")
        rows = self.conn.execute(f"SELECT id FROM docs WHERE substr(path, 1, ?) = ?{hide}", (len(prefix), prefix, *params))
        return {row[0] for row in rows}

    def section(self, path, heading):
        """[(chunk_index, content)] of one page's chunks under one heading path, in order."""
        hide, params = self.hiding("id")
        return self.conn.execute(f"SELECT chunk_index, content FROM docs WHERE path = ? AND heading = ?{hide} "
                                 "ORDER BY chunk_index", (path, heading, *params)).fetchall()

    def chunk_scan(self, q, limit, ann=None):
        """Exact: every vector (rag/store/vectors.py picks python, numpy or sqlite-vec); SQLite has no ANN."""
        if ann:
            raise StoreError("--ann (HNSW) gibt es nur mit PostgreSQL (--db postgresql://…); "
                             "SQLite sucht immer exakt – --ann weglassen")
        return vectors.scan(self.conn, q, limit, hidden=self.hidden_ids())

    def chunk_similarities(self, q, doc_ids):
        return vectors.similarities(self.conn, q, [d for d in doc_ids if d not in self.hidden_ids()])


def database_label(conn):
    return vectors.database_path(conn) or ":memory:"


def take_lock(lock_path, label, wait=LOCK_WAIT):
    """The open lock file, flock'ed: the kernel drops the lock when the process ends, even on kill -9."""
    try:
        lock = open(lock_path, "a")
    except OSError as exc:
        raise StoreError(f"Sperrdatei {lock_path} nicht anlegbar ({exc.strerror}) – Rechte des Ordners prüfen")

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
