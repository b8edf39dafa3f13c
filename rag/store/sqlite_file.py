"""The SQLite file (knowledge.db): its tables, opening and checking it, the schema migration, writing rows.

    conn = connect("knowledge.db")            # exists, is ours, schema 2 (version 1 is migrated first)
    insert_chunk(conn, "mail/quota.md", 0, "Mail › Quota", "Mit cm …", [0.6, 0.8], "9f2c…", [], ("mail quota", "…"))
    -> 17 (the doc id; docs, fts and the vector's slot in vector_blocks written)

Tables (schema version 2):
    docs     one row per chunk, as in the post: path, chunk_index, content, embedding (JSON text, so
             `sqlite3 knowledge.db "select embedding from docs limit 1"` shows it), plus heading
             (the heading path "Mail › Cyrus IMAP › Mailbox anlegen"), content_hash and flags
    vector_blocks  the same vectors packed as little-endian float32, 1,024 chunks per row, each in
             the slot of its doc id (layout: rag/store/vectors.py, which reads them): written in place here
    fts      FTS5 table over the German search text (rag/text/german.py), rowid = docs.id
    pages    one row per indexed file: content hash, for incremental runs
    questions, question_blocks   questions written for each section at index time, their vectors
             packed as in vector_blocks, slot = questions.id (rag/store/sqlite_questions.py)
    access   who may read a page: (path, '') marks a page with a rule, (path, group) per group (rag/store/access.py)
    vocab    the words compounds are split against, learned from the wiki
    meta     key/value: schema_version, embed_model, embed_model_size, dim, pooling, floor_cosine

Migrations: version 1 (one `vectors` row per chunk) becomes 2 on the first connect, in one
transaction; older or unknown versions ask for `build_index.py --rebuild`.

Does not handle: transactions (the caller holds them, rag/store/sqlite.py), reading vectors (rag/store/vectors.py).
"""
import json
import os
import sqlite3
import struct
import sys

from rag.store import access
from rag.store.base import StoreError
from rag.store.vectors import BLOCK_SIZE, floats, norm2, pack

VECTOR_SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_blocks (block INTEGER PRIMARY KEY, norms BLOB NOT NULL, vecs BLOB NOT NULL);
"""  # the layout of rag/store/vectors.py
QUESTION_SCHEMA = """
CREATE TABLE IF NOT EXISTS questions (id INTEGER PRIMARY KEY, path TEXT NOT NULL,
    heading TEXT NOT NULL, section_hash TEXT NOT NULL, question TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS questions_section ON questions (path, heading);
CREATE INDEX IF NOT EXISTS questions_hash ON questions (section_hash);
CREATE TABLE IF NOT EXISTS question_blocks (block INTEGER PRIMARY KEY, norms BLOB NOT NULL,
    vecs BLOB NOT NULL);
"""  # questions written for each section (rag/store/sqlite_questions.py), vectors as vector_blocks
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
""" + access.SQLITE_TABLE + "\n" + VECTOR_SCHEMA + QUESTION_SCHEMA
FTS5_SECURE_DELETE = (3, 44, 0)  # FTS5's 'secure-delete' option exists from this SQLite on; older: optimize
FTS_SCHEMA = "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(heading, body, tokenize = 'unicode61 remove_diacritics 0')"



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
        conn.execute("PRAGMA secure_delete=ON")  # deleted rows are overwritten with zeros (SQLite's default: off)
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
            if sqlite3.sqlite_version_info >= FTS5_SECURE_DELETE:  # a deleted row's terms leave the segments at once
                conn.execute("INSERT INTO fts (fts, rank) VALUES ('secure-delete', 1)")
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
    write_vector(conn, doc_id, vector)
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
    delete_vectors(conn, ids)


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
        conn.execute(VECTOR_SCHEMA)
        for doc_id, blob in conn.execute("SELECT doc_id, vec FROM vectors ORDER BY doc_id").fetchall():
            write_vector(conn, doc_id, list(floats(blob)))
        conn.execute("DROP TABLE vectors")
        write_meta(conn, schema_version=SCHEMA_VERSION)
        conn.commit()
    except sqlite3.Error as exc:
        conn.rollback()
        raise StoreError(f"{path} hat Schema-Version 1 und lässt sich nicht umstellen ({exc}) – neu bauen mit: "
                         f"python3 build_index.py --rebuild")
    return str(SCHEMA_VERSION)


def write_vector(conn, doc_id, vector, table="vector_blocks"):
    """Put one vector into its slot (caller holds the transaction). Example: doc 1030 -> block 1, slot 6"""
    block, slot = divmod(doc_id, BLOCK_SIZE)
    data = pack(vector)
    conn.execute(f"INSERT OR IGNORE INTO {table} VALUES (?, zeroblob(?), zeroblob(?))",
                 (block, BLOCK_SIZE * 8, BLOCK_SIZE * len(data)))
    with conn.blobopen(table, "vecs", block) as blob:
        if len(blob) != BLOCK_SIZE * len(data):
            raise ValueError(f"dimension {len(vector)} does not fit block {block} ({len(blob)} bytes)")
        blob.seek(slot * len(data))
        blob.write(data)
    with conn.blobopen(table, "norms", block) as blob:
        blob.seek(slot * 8)
        blob.write(struct.pack("<d", norm2(vector)))


def delete_vectors(conn, doc_ids, table="vector_blocks"):
    """Empty the slots of these doc ids; drop blocks left empty (caller holds the transaction)."""
    assert conn.in_transaction, "blob writes outside a transaction would commit on their own"
    touched = set()
    for doc_id in doc_ids:
        block, slot = divmod(doc_id, BLOCK_SIZE)
        if conn.execute(f"SELECT 1 FROM {table} WHERE block = ?", (block,)).fetchone() is None:
            continue
        with conn.blobopen(table, "norms", block) as blob:
            blob.seek(slot * 8)
            blob.write(bytes(8))
        with conn.blobopen(table, "vecs", block) as blob:
            size = len(blob) // BLOCK_SIZE
            blob.seek(slot * size)
            blob.write(bytes(size))
        touched.add(block)
    for block in sorted(touched):
        norms = conn.execute(f"SELECT norms FROM {table} WHERE block = ?", (block,)).fetchone()[0]
        if not any(floats(norms, "d")):
            conn.execute(f"DELETE FROM {table} WHERE block = ?", (block,))
