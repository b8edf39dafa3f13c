"""The store interface, and the SQLite store (knowledge.db): schema, migrations, queries.

    index = store.open_store("knowledge.db")                 # SQLite, as in the post
    index = store.open_store("postgresql://rag@db/wiki")     # PostgreSQL + pgvector (rag/store/postgres.py)
    index.pages() -> {"mail/quota.md": "9f2c…"}; index.vector_scan(q, 50) -> Scan([(0.953, 17), …], "python", 1)

What build_index.py and rag/search/ranking.py need from a store, and all they use (both stores have it):
    meta() / write_meta(**values)          key/value facts about the index (model, dim, thresholds)
    open_store(db, create=True)            a writer: holds the writer lock until close(); a second waits, then
                                           stops with one German line (never two writers interleaved)
    pages() / reusable(hashes)             page hashes, and stored vectors by chunk text hash (incremental runs)
    write_page(path, hash, chunks)         one page's chunks and vectors, in one transaction
    delete_page(path)                      one page out of every table, in one transaction
    texts() / replace_search(vocab, rows)  the folded search text, recomputed when the vocabulary changes
    lexical(stage, limit) / matching(alts) BM25 candidates of one cascade stage, and document frequencies
    vector_scan(q, limit, ann)             exact cosine over every vector, or HNSW preselection + exact rescoring
    sources(ids) / similarities(q, ids) / search_text(id) / count() / vocab() / ids_below(folder) / section(…)
German folding, compounds, the cascade, coverage, RRF, the floor and every check stay above the
interface in Python (rag/text/german.py, rag/search/ranking.py), so both stores rank the same way.

SQLite tables (schema version 2):
    docs     one row per chunk, as in the post: path, chunk_index, content, embedding (JSON text, so
             `sqlite3 knowledge.db "select embedding from docs limit 1"` shows it), plus heading
             (the heading path "Mail › Cyrus IMAP › Mailbox anlegen"), content_hash and flags
    vector_blocks  the same vectors packed as little-endian float32, 1,024 chunks per row, each in
             the slot of its doc id (rag/store/vectors.py): the query path reads only this table, a few
             large blobs, and never parses JSON
    fts      FTS5 table over the German search text (rag/text/german.py), rowid = docs.id
    pages    one row per indexed file: content hash, for incremental runs
    vocab    the words compounds are split against, learned from the wiki
    meta     key/value: schema_version, embed_model, embed_model_size, dim, pooling, floor_cosine

Migrations: version 1 (one `vectors` row per chunk) becomes 2 on the first connect, in one
transaction; older or unknown versions ask for `build_index.py --rebuild`. --rebuild writes a
new file beside the old one (knowledge.db.rebuild) and renames it over the old one at the end.

Does not handle: approximate search in SQLite (every query scans every vector), writers on other
machines (the lock is a local file lock, knowledge.db.lock).
"""
import fcntl
import json
import os
import sqlite3
import sys
import time
from collections import namedtuple

from rag import config
from rag.store import vectors

LOCK_WAIT = config.env_int("RAG_LOCK_WAIT", 600)  # seconds a second indexer waits for the first, then stops
POSTGRES_PREFIXES = ("postgresql://", "postgres://")  # --db values that mean PostgreSQL; anything else is a file
ANN_MIN_CHUNKS = 50_000  # PostgreSQL: HNSW preselection from this many chunks on. bench/scale.py, 2 cores: exact
#                 p50 20.6 ms at 20,000 and 161 ms at 200,000 (≈ 45 ms at 50,000), HNSW (ef_search 200) 36 ms

SCHEMA_VERSION = 2  # 1 -> 2: packed vectors in blocks (vector_blocks) instead of one row per chunk
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    heading TEXT NOT NULL,
    content TEXT NOT NULL,
    embedding TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    flags TEXT NOT NULL DEFAULT '[]',
    UNIQUE (path, chunk_index)
);
CREATE INDEX IF NOT EXISTS docs_hash ON docs (content_hash);
CREATE TABLE IF NOT EXISTS pages (path TEXT PRIMARY KEY, file_hash TEXT NOT NULL, chunks INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vocab (word TEXT PRIMARY KEY) WITHOUT ROWID;
""" + vectors.SCHEMA
FTS_SCHEMA = "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(heading, body, tokenize = 'unicode61 remove_diacritics 0')"


class StoreError(Exception):
    """The index is missing, foreign or broken; the message is German and names the fix."""


Chunk = namedtuple("Chunk", "heading content vector content_hash flags search")  # search: (heading, body) text
Row = namedtuple("Row", "doc_id path chunk_index heading content flags")  # one stored chunk


def is_postgres(db):
    """Does --db name a PostgreSQL database? Example: "postgresql://rag@db/wiki" -> True, "knowledge.db" -> False"""
    return db.startswith(POSTGRES_PREFIXES)


def open_store(db, create=False, rebuild=False):
    """The store behind --db: PostgreSQL for a postgresql:// DSN (rag/store/postgres.py), else the SQLite file.

    create: make the tables (build_index.py); rebuild: build a fresh index beside the old one, which
    `finish()` puts in its place. Raises StoreError (German, names the fix).
    """
    if is_postgres(db):
        from rag.store import postgres  # only here: SQLite users need no psycopg
        return postgres.PostgresStore(db, create=create, rebuild=rebuild)
    return SQLiteStore(db, create=create, rebuild=rebuild)


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


class SQLiteStore:
    """The index in one SQLite file (the post's knowledge.db); see the module docstring."""
    kind = "sqlite"

    def __init__(self, path, create=False, rebuild=False, conn=None):
        self.label, self.path = path, path
        self.target = path + ".rebuild" if rebuild else path
        if conn is not None:
            self.conn = conn
            return
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
            write_meta(self.conn, vocab_dirty=1)

    def texts(self):
        return self.conn.execute("SELECT id, heading, content FROM docs ORDER BY id").fetchall()

    def replace_search(self, vocab, rows, **meta):
        """New vocabulary and search text [(id, heading text, body text)] for every chunk, one transaction."""
        with self.conn:
            self.conn.execute("DELETE FROM vocab")
            self.conn.executemany("INSERT INTO vocab VALUES (?)", [(w,) for w in sorted(vocab)])
            if self.has_lexical():
                self.conn.execute("DELETE FROM fts")
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
        (limit None: all of them).

        BM25 as FTS5 computes it (k1 1.2, b 0.75), heading weighted 2:1 over the body.
        """
        return self.conn.execute(
            "SELECT -bm25(fts, 2.0, 1.0), rowid, heading || ' ' || body FROM fts WHERE fts MATCH ? "
            "ORDER BY 1 DESC, rowid LIMIT ?", (match_query(groups), -1 if limit is None else limit)).fetchall()

    def matching(self, alternatives):
        """How many chunks contain any of these (word, prefix) alternatives."""
        return self.conn.execute("SELECT COUNT(*) FROM fts WHERE fts MATCH ?",
                                 (match_query([alternatives]),)).fetchone()[0]

    def search_text(self, doc_id):
        row = self.conn.execute("SELECT heading || ' ' || body FROM fts WHERE rowid = ?", (doc_id,)).fetchone()
        return row[0] if row else ""

    def lexical_count(self):
        return self.conn.execute("SELECT COUNT(*) FROM fts").fetchone()[0]

    # -- reading: chunks and vectors
    def sources(self, doc_ids):
        """{doc_id: Row} for these chunks."""
        if not doc_ids:
            return {}
        rows = self.conn.execute(f"SELECT id, path, chunk_index, heading, content, flags FROM docs WHERE id IN "
                                 f"({','.join('?' * len(doc_ids))})", list(doc_ids))
        return {r[0]: Row(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows}

    def ids_below(self, prefix):
        """The doc ids of every chunk below a folder prefix ("mail/"), as a set."""
        rows = self.conn.execute("SELECT id FROM docs WHERE substr(path, 1, ?) = ?", (len(prefix), prefix))
        return {row[0] for row in rows}

    def section(self, path, heading):
        """[(chunk_index, content)] of one page's chunks under one heading path, in order."""
        return self.conn.execute("SELECT chunk_index, content FROM docs WHERE path = ? AND heading = ? "
                                 "ORDER BY chunk_index", (path, heading)).fetchall()

    def vector_scan(self, q, limit, ann=None):
        """Exact: every vector (rag/store/vectors.py picks python, numpy or sqlite-vec); SQLite has no ANN."""
        if ann:
            raise StoreError("--ann (HNSW) gibt es nur mit PostgreSQL (--db postgresql://…); "
                             "SQLite sucht immer exakt – --ann weglassen")
        return vectors.scan(self.conn, q, limit)

    def similarities(self, q, doc_ids):
        return vectors.similarities(self.conn, q, doc_ids)


def database_errors():
    """The exception classes a store's database can raise mid-run (psycopg's only once it is imported)."""
    found = [sqlite3.DatabaseError]
    if "psycopg" in sys.modules:
        found.append(sys.modules["psycopg"].Error)
    return tuple(found)


def describe_error(db, exc):
    """One German line for a database error in the middle of a run. Example: sqlite3.DatabaseError -> "… --rebuild"."""
    if is_postgres(db):
        from rag.store import postgres
        return postgres.describe(db, exc)
    return f"Index-Datenbank {db} defekt ({exc}) – neu bauen mit: python3 build_index.py --rebuild"


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


def wait_for(acquire, wait, label, poll=0.2):
    """Call acquire() until it returns True or `wait` seconds passed; one line on stderr when waiting."""
    if acquire():
        return True
    print(f"Warte: ein anderer build_index.py schreibt gerade in {label} (höchstens {wait} s) …",
          file=sys.stderr, flush=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(poll)
        if acquire():
            return True
    return False


def busy_message(label, wait):
    return (f"ein anderer build_index.py schreibt seit über {wait} s in {label} – warten, bis er fertig ist "
            f"(läuft dort --watch?), oder länger warten mit RAG_LOCK_WAIT=Sekunden")


def has_fts5():
    """Does this Python's SQLite have FTS5? RAG_NO_FTS5=1 pretends it does not (for tests)."""
    if os.environ.get("RAG_NO_FTS5"):
        return False
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False


def connect(path, create=False):
    """Open the index. create=False: it must exist and be ours (else StoreError)."""
    if not create and not os.path.exists(path):
        raise StoreError(f"Index {path} fehlt – zuerst bauen mit: python3 build_index.py")
    try:
        conn = sqlite3.connect(path, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} ist keine gültige Index-Datenbank ({exc}) – neu bauen mit: "
                          f"python3 build_index.py --rebuild")
    if (tables and "meta" not in tables) or (not create and not tables):
        raise StoreError(f"{path} ist kein Index dieses Projekts – neu bauen mit: python3 build_index.py --rebuild")
    if create:
        conn.executescript(SCHEMA)
        if has_fts5():
            conn.execute(FTS_SCHEMA)
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        conn.commit()
    version = read_meta(conn).get("schema_version")
    if version == "1":
        version = migrate_1_to_2(conn, path)
    if version != str(SCHEMA_VERSION):
        raise StoreError(f"{path} hat Schema-Version {version}, erwartet {SCHEMA_VERSION} – neu bauen mit: "
                          f"python3 build_index.py --rebuild")
    return conn


def read_meta(conn):
    return dict(conn.execute("SELECT key, value FROM meta"))


def write_meta(conn, **values):
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in values.items()])


def fts_available(conn):
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name='fts'").fetchone() is not None


def load_vocab(conn):
    return {row[0] for row in conn.execute("SELECT word FROM vocab")}


def insert_chunk(conn, path, chunk_index, heading, content, vector, content_hash, flags, search):
    """Write one chunk to docs, vector_blocks and fts (caller holds the transaction)."""
    cur = conn.execute(
        "INSERT INTO docs (path, chunk_index, heading, content, embedding, content_hash, flags) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (path, chunk_index, heading, content, json.dumps(vector), content_hash, json.dumps(flags)))
    doc_id = cur.lastrowid
    vectors.write_vector(conn, doc_id, vector)
    if search is not None:
        conn.execute("INSERT INTO fts (rowid, heading, body) VALUES (?, ?, ?)", (doc_id, *search))
    return doc_id


def delete_page(conn, path):
    """Remove a page's chunks from every table (caller holds the transaction)."""
    ids = [row[0] for row in conn.execute("SELECT id FROM docs WHERE path = ?", (path,))]
    conn.execute("DELETE FROM docs WHERE path = ?", (path,))  # the first write opens the transaction
    conn.execute("DELETE FROM pages WHERE path = ?", (path,))
    if fts_available(conn):
        conn.executemany("DELETE FROM fts WHERE rowid = ?", [(i,) for i in ids])
    vectors.delete_vectors(conn, ids)


def migrate_1_to_2(conn, path):
    """Schema 1 -> 2: copy every row of `vectors` into vector_blocks, drop `vectors`; one transaction.

    Returns the new version ("2"); a read-only or broken file raises StoreError (rebuild message).
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        if read_meta(conn).get("schema_version") != "1":  # another process migrated it meanwhile
            conn.commit()
            return read_meta(conn).get("schema_version")
        print(f"{path}: Index wird einmalig auf Schema-Version 2 umgestellt (Vektoren in Blöcken) …",
              file=sys.stderr, flush=True)
        conn.execute(vectors.SCHEMA)
        for doc_id, blob in conn.execute("SELECT doc_id, vec FROM vectors ORDER BY doc_id").fetchall():
            vectors.write_vector(conn, doc_id, list(vectors.floats(blob)))
        conn.execute("DROP TABLE vectors")
        write_meta(conn, schema_version=SCHEMA_VERSION)
        conn.commit()
    except sqlite3.Error as exc:
        conn.rollback()
        raise StoreError(f"{path} hat Schema-Version 1 und lässt sich nicht umstellen ({exc}) – neu bauen mit: "
                         f"python3 build_index.py --rebuild")
    return str(SCHEMA_VERSION)
