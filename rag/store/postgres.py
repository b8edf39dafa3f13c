"""PostgreSQL + pgvector as the second store (--db postgresql://…), with the interface of
rag/store/base.py.

    index = PostgresStore("postgresql://rag@db.intern/wiki", create=True)
    index.vector_scan(q, 50)           -> Scan([(0.953, 17), …], "pgvector", 1)            exact
    index.vector_scan(q, 50, ann=True) -> Scan([(0.953, 17), …], "hnsw", 1, candidates=100)

Tables, in the schema `rag` (--rebuild fills `rag_rebuild` and swaps the two in one transaction):
    docs   id, path, chunk_index, heading, content, embedding vector(D), content_hash, flags (JSON
           text), and the search text of rag/text/german.py: search_heading, search_body, search_len
           (tokens); tsv is GENERATED from it over the 'simple' configuration (no stemming, no stop
           words: the German folding, compounds and stems are already in the text), the heading
           weighted A, with a GIN index; from ANN_MIN_CHUNKS on (or --ann) an HNSW index
    pages, vocab, meta   as in SQLite; meta also counts rows and tokens for BM25
    questions  written for each section, with their vectors (rag/store/postgres_questions.py)

Lexical (rag/store/postgres_lexical.py): the cascade's stage becomes a tsquery
("(a | b) & (c | d:*)"); its score is BM25 as SQLite's FTS5 computes it (k1 1.2, b 0.75, heading 2,
body 1, every phrase of the query, document frequency per phrase), in SQL from the tsvector's
positions and weights, so both stores rank alike.
Vectors: exact = pgvector's inner product over every row (float32), then every row that can be in
the top list given float32 rounding is rescored in Python with rag/store/vectors.py's arithmetic:
the same ranking and scores as the SQLite scan. HNSW: the graph search keeps EF_SEARCH candidates;
the best limit + MARGIN of them (by pgvector's exact float32 distance) are rescored.
Writer lock: pg_try_advisory_lock; the server drops it when the connection ends, also on kill -9.

Does not handle: several indexes in one database (use one database each), pgvector before 0.5
(no HNSW), the ² or ½ kind of token (PostgreSQL's parser drops them, FTS5 keeps them).
"""
import json
import sys

from rag.store import access, packed, postgres_erase, vectors
from rag.store.postgres_text import vector_text
from rag.store.base import ANN_MIN_CHUNKS, LOCK_WAIT, Row, StoreError, busy_message, wait_for
from rag.store.postgres_setup import (TABLES, connect, describe, ensure_extension, masked,
                                      psycopg_module)
from rag.store.postgres_lexical import PostgresLexical
from rag.store.postgres_questions import MARGIN, PostgresQuestions

SCHEMA, REBUILD_SCHEMA = "rag", "rag_rebuild"
LOCK_KEY = 0x52414731  # pg_advisory_lock key ("RAG1"); advisory locks are per database
# hnsw.ef_search: candidates the graph search keeps. bench/scale.py, 200,000 e5 vectors, 2 cores:
# recall@10 0.962 at p95 48.5 ms (100: 0.914; 300: 0.996 at 70.6 ms)
EF_SEARCH = 200
# pgvector's defaults (16, 64) reached 0.892 at ef_search 200
HNSW_OPTIONS = "m = 32, ef_construction = 128"
# maintenance_work_mem while the HNSW index is built (the graph must fit, or it crawls)
BUILD_MEMORY = "2GB"


class PostgresStore(PostgresLexical, PostgresQuestions):
    """The index in a PostgreSQL database; see the module docstring. The full-text side is inherited
    from rag/store/postgres_lexical.py; the questions of each section and the exact scan over a
    table of vectors (stored, exact_candidates, rescore) from rag/store/postgres_questions.py."""
    kind = "postgres"

    def __init__(self, dsn, create=False, rebuild=False, reader=None):
        self.dsn, self.label = dsn, masked(dsn)
        self.schema = REBUILD_SCHEMA if rebuild else SCHEMA
        self.session = {}  # settings sent to this connection (see `settings`)
        self.conn = connect(dsn)
        psycopg = psycopg_module()
        try:
            if create:  # a writer: the lock first, before anything is created or dropped
                self.lock()
            self.open(create, rebuild)
            self.hidden = self.hidden_paths(access.groups_of(reader))
        except (psycopg.Error, StoreError) as exc:
            self.conn.close()
            raise exc if isinstance(exc, StoreError) else StoreError(describe(dsn, exc))

    def lock(self, wait=LOCK_WAIT):
        """The writer lock: a session advisory lock, gone with the connection (close, or kill -9 of
        the writer)."""
        take = lambda: self.conn.execute("SELECT pg_try_advisory_lock(%s)",  # noqa: E731
                                         (LOCK_KEY,)).fetchone()[0]
        if not wait_for(take, wait, self.label):
            raise StoreError(busy_message(self.label, wait))

    def open(self, create, rebuild):
        if create:
            ensure_extension(self.conn, self.label)
        where = self.conn.execute("SELECT extnamespace::regnamespace::text FROM pg_extension "
                                  "WHERE extname = 'vector'").fetchone()
        exists = self.conn.execute("SELECT to_regclass(%s) IS NOT NULL, "
                                   "to_regclass(%s) IS NOT NULL",
                                   (f"{self.schema}.meta", f"{self.schema}.docs")).fetchone()
        if not create and (where is None or not exists[1]):
            raise StoreError(f"in {self.label} gibt es keinen Index – zuerst bauen mit: "
                             f"python3 build_index.py --db '{self.label}'")
        if exists[1] and not exists[0]:
            raise StoreError(f"{self.label}: Schema {self.schema} ist kein Index dieses Projekts "
                             f"(keine Tabelle meta) – anderes Schema/andere Datenbank nehmen oder "
                             f"es entfernen")
        if create:
            with self.conn.transaction():
                if rebuild:
                    self.conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
                self.conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
                self.conn.execute(f"SET search_path TO {self.schema}, "
                                  f"{where[0] if where else 'public'}")
                self.conn.execute(TABLES)
                self.conn.execute("INSERT INTO meta VALUES ('schema_version', '1') "
                                  "ON CONFLICT DO NOTHING")
        self.conn.execute(f"SET search_path TO {self.schema}, {where[0]}")
        self.check_dimension()

    def hidden_paths(self, groups):
        """The paths hidden from these groups, sorted ([] for a reader of everything, or an index
        without rules)."""
        if groups is None or not self.conn.execute(
                "SELECT to_regclass('access') IS NOT NULL").fetchone()[0]:
            return []
        sql, params = access.hidden_sql(groups, "%s")
        return sorted(p for p, in self.conn.execute(sql, params))

    def hiding(self):
        """(" AND path NOT IN (…)", params) that hides the reader's pages; ("", []) when nothing is
        hidden. A hashed subquery: NOT (path = ANY(array)) compares each row with every path in a
        generic plan (psycopg prepares)."""
        return ((" AND path NOT IN (SELECT unnest(%s::text[]))", [self.hidden]) if self.hidden
                else ("", []))

    def column_dimension(self):
        """D of the column vector(D); -1 while no vector fixed it."""
        return self.conn.execute("SELECT atttypmod FROM pg_attribute "
                                 "WHERE attrelid = 'docs'::regclass "
                                 "AND attname = 'embedding'").fetchone()[0]

    def check_dimension(self):
        """meta's dim must be the embedding column's (a table altered by hand, or a half-migrated
        index)."""
        typmod, dim = self.column_dimension(), self.meta().get("dim")
        if dim and typmod not in (-1, int(dim)):
            raise StoreError(f"{self.label}: die Spalte embedding hat Dimension {typmod}, der "
                             f"Index {dim} – neu bauen mit: python3 build_index.py --rebuild")

    # -- meta, vocabulary, sizes
    def meta(self):
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def write_meta(self, **values):
        with self.conn.transaction():
            self.set_meta(**values)
            # the first vector fixes the type: vector(D)
            if "dim" in values and self.column_dimension() == -1:
                self.conn.execute(f"ALTER TABLE docs ALTER COLUMN embedding "
                                  f"TYPE vector({int(values['dim'])})")

    def set_meta(self, **values):
        self.conn.cursor().executemany(
            "INSERT INTO meta VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            [(k, str(v)) for k, v in values.items()])

    def vocab(self):
        return frozenset(w for w, in self.conn.execute("SELECT word FROM vocab"))

    def has_lexical(self):
        return True

    def count(self):
        return self.conn.execute("SELECT count(*) FROM docs").fetchone()[0]

    # -- writing (the writer lock is held from open_store(create=True) to close)
    def pages(self):
        return dict(self.conn.execute("SELECT path, file_hash FROM pages").fetchall())

    def reusable(self, hashes):
        rows = self.conn.execute("SELECT DISTINCT ON (content_hash) content_hash, "
                                 "embedding::real[] FROM docs WHERE content_hash = ANY(%s) "
                                 "ORDER BY content_hash, id", (list(hashes),))
        return {h: list(vectors.floats(vectors.pack(v))) for h, v in rows}

    def write_page(self, path, page_hash, chunks):
        """Replace one page's chunks in one transaction: a crash leaves the page entirely old or
        new."""
        rows = [(path, i, c.heading, c.content, vector_text(c.vector), c.content_hash,
                 json.dumps(c.flags), *c.search,
                 len(c.search[0].split()) + len(c.search[1].split()))
                for i, c in enumerate(chunks)]
        with self.conn.transaction():
            self.remove(path)
            self.conn.cursor().executemany(
                "INSERT INTO docs (path, chunk_index, heading, content, embedding, content_hash, "
                "flags, search_heading, search_body, search_len) "
                "VALUES (%s, %s, %s, %s, %s::vector, %s, %s, %s, %s, %s)", rows)
            self.conn.execute("INSERT INTO pages VALUES (%s, %s, %s) ON CONFLICT (path) DO UPDATE "
                              "SET file_hash = EXCLUDED.file_hash, chunks = EXCLUDED.chunks",
                              (path, page_hash, len(chunks)))
            self.count_lexical(len(rows), sum(r[-1] for r in rows))
            largest = max((packed.norm2(c.vector) for c in chunks), default=0.0)
            self.set_meta(vocab_dirty=1,
                          max_norm2=max(largest, float(self.meta().get("max_norm2", 0))))

    def remove(self, path):
        """Delete a page's chunks and its pages row (caller holds the transaction)."""
        gone = self.conn.execute("DELETE FROM docs WHERE path = %s RETURNING search_len",
                                 (path,)).fetchall()
        self.conn.execute("DELETE FROM pages WHERE path = %s", (path,))
        self.count_lexical(-len(gone), -sum(n for n, in gone))

    def delete_page(self, path):
        with self.conn.transaction():
            self.remove(path)
            self.drop_questions(path)  # not in write_page: a section that stays keeps its questions
            # forgotten: its rule goes with it
            self.conn.execute("DELETE FROM access WHERE path = %s", (path,))
            self.set_meta(vocab_dirty=1)

    def scrub(self, vacuum):
        """After deletions, the bytes too (rag/store/postgres_erase.py): VACUUM FULL, or plain
        VACUUM."""
        postgres_erase.scrub(self.conn, full=vacuum, memory=BUILD_MEMORY)
        return 0

    def raw_files(self):
        return postgres_erase.raw_files(self.conn, self.schema)

    def leftovers(self, needles):
        return postgres_erase.leftovers(self.conn, needles)

    def access(self):  # as SQLiteStore's
        return access.rules(self.conn.execute("SELECT path, grp FROM access "
                                              "ORDER BY path, grp").fetchall())

    def write_access(self, rules):
        with self.conn.transaction():
            for path, groups in sorted(rules.items()):
                self.conn.execute("DELETE FROM access WHERE path = %s", (path,))
                self.conn.cursor().executemany("INSERT INTO access VALUES (%s, %s)",
                                               access.rows(path, groups))
            self.set_meta(vocab_dirty=1)

    def restricted_ids(self):
        return {i for i, in self.conn.execute("SELECT id FROM docs WHERE path IN "
                                              "(SELECT path FROM access)")}

    def texts(self):
        return self.conn.execute("SELECT id, heading, content FROM docs ORDER BY id").fetchall()

    def replace_search(self, vocab, rows, **meta):
        """New vocabulary; search text [(id, heading, body)] of these chunks (others keep theirs),
        one transaction."""
        with self.conn.transaction():
            self.conn.execute("DELETE FROM vocab")
            with self.conn.cursor().copy("COPY vocab (word) FROM STDIN") as copy:
                for word in sorted(vocab):
                    copy.write_row((word,))
            self.conn.execute("CREATE TEMP TABLE new_search (id bigint, h text, b text, n integer) "
                              "ON COMMIT DROP")
            with self.conn.cursor().copy("COPY new_search FROM STDIN") as copy:
                for doc_id, heading, body in rows:
                    copy.write_row((doc_id, heading, body,
                                    len(heading.split()) + len(body.split())))
            self.conn.execute("UPDATE docs SET search_heading = n.h, search_body = n.b, "
                              "search_len = n.n FROM new_search n WHERE docs.id = n.id")
            total = self.conn.execute("SELECT count(*), coalesce(sum(search_len), 0) "
                                      "FROM docs").fetchone()
            self.set_meta(lexical_rows=total[0], lexical_tokens=total[1], **meta)

    def flagged(self):
        return self.conn.execute("SELECT path, heading, flags FROM docs WHERE flags <> '[]' "
                                 "ORDER BY path, chunk_index").fetchall()

    def page_contents(self, path):
        return [c for c, in self.conn.execute("SELECT content FROM docs WHERE path = %s "
                                              "ORDER BY chunk_index", (path,))]

    def finish(self, ann=None):
        """End of an index run: the HNSW index when asked or large enough; after --rebuild the
        swap."""
        has_index = self.conn.execute("SELECT to_regclass('docs_hnsw') IS NOT NULL").fetchone()[0]
        if not has_index and self.meta().get("dim") and (ann or self.count() >= ANN_MIN_CHUNKS):
            print(f"HNSW-Index für die Vektorsuche wird angelegt ({HNSW_OPTIONS}) …",
                  file=sys.stderr, flush=True)
            with self.conn.transaction():
                self.conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
                self.conn.execute(f"CREATE INDEX docs_hnsw ON docs USING hnsw "
                                  f"(embedding vector_ip_ops) WITH ({HNSW_OPTIONS})")
        # readers move from the old index to the new one at this commit
        if self.schema == REBUILD_SCHEMA:
            with self.conn.transaction():
                self.conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA}_old CASCADE")
                if self.conn.execute("SELECT to_regnamespace(%s) IS NOT NULL",
                                     (SCHEMA,)).fetchone()[0]:
                    self.conn.execute(f"ALTER SCHEMA {SCHEMA} RENAME TO {SCHEMA}_old")
                self.conn.execute(f"ALTER SCHEMA {REBUILD_SCHEMA} RENAME TO {SCHEMA}")
                self.conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA}_old CASCADE")
            self.schema = SCHEMA

    def close(self):
        if not self.conn.closed:
            self.conn.close()

    # -- reading: chunks and vectors
    def folders(self):
        """The index's top-level folders, sorted (as SQLiteStore.folders)."""
        hide, params = self.hiding()
        rows = self.conn.execute(f"SELECT DISTINCT substr(path, 1, strpos(path, '/')) FROM docs "
                                 f"WHERE strpos(path, '/') > 0{hide}", params)
        return sorted(row[0] for row in rows)

    def ids_below(self, prefix):
        hide, params = self.hiding()
        return {d for d, in self.conn.execute(f"SELECT id FROM docs "
                                              f"WHERE starts_with(path, %s){hide}",
                                              (prefix, *params))}

    def section(self, path, heading):
        hide, params = self.hiding()
        return self.conn.execute(f"SELECT chunk_index, content FROM docs WHERE path = %s "
                                 f"AND heading = %s{hide} "
                                 "ORDER BY chunk_index", (path, heading, *params)).fetchall()

    def sources(self, doc_ids):
        hide, params = self.hiding()
        rows = self.conn.execute(f"SELECT id, path, chunk_index, heading, content, flags FROM docs "
                                 f"WHERE id = ANY(%s){hide}", (list(doc_ids), *params))
        return {r[0]: Row(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows}

    def chunk_similarities(self, q, doc_ids):
        q = q if isinstance(q, vectors.Query) else vectors.prepare(q)
        return {d: vectors.similarity(q, v, n2) for d, (v, n2) in self.stored(doc_ids).items()}

    def use_ann(self, ann):
        """ann True: HNSW (it must exist), False: exact, None: HNSW when it exists and the index is
        large."""
        if ann is False:
            return False
        has_index, rows = self.conn.execute("SELECT to_regclass('docs_hnsw') IS NOT NULL, "
                                            "reltuples FROM pg_class "
                                            "WHERE oid = 'docs'::regclass").fetchone()
        if not has_index and ann:
            raise StoreError(f"{self.label} hat keinen HNSW-Index – anlegen mit: "
                             f"python3 build_index.py --db '{self.label}' --ann")
        # reltuples: the planner's estimate, no count(*)
        return has_index and (ann or rows >= ANN_MIN_CHUNKS)

    def settings(self, **values):
        """Session settings for the next query, sent only when they change (each SET is a round
        trip)."""
        changed = {k: v for k, v in values.items() if self.session.get(k) != v}
        if changed:
            self.conn.execute("SELECT " + ", ".join("set_config(%s, %s, false)" for _ in changed),
                              [x for k, v in changed.items() for x in (k, str(v))])
            self.session.update(changed)

    def chunk_scan(self, q, limit, ann=None):
        """The best `limit` (score, doc_id), scores with rag/store/vectors.py's arithmetic; exact or
        HNSW + rescoring."""
        q = q if isinstance(q, vectors.Query) else vectors.prepare(q)
        if self.use_ann(ann):
            # the graph search keeps ef_search; Python rescores only its best (the cost)
            wanted = limit + MARGIN
            # hnsw.iterative_scan: pgvector ≥ 0.8
            self.settings(**{"enable_indexscan": "on", "hnsw.ef_search": max(EF_SEARCH, wanted)},
                          **({"hnsw.iterative_scan": "strict_order"} if self.hidden else {}))
            hide, params = self.hiding()
            ids = [d for d, in self.conn.execute(f"SELECT id FROM docs WHERE true{hide} "
                                                 f"ORDER BY embedding <#> %s::vector "
                                                 "LIMIT %s",
                                                 (*params, vector_text(q.values), wanted))]
            return vectors.Scan(self.rescore(q, ids, limit), "hnsw", 1, len(ids))
        return vectors.Scan(self.rescore(q, self.exact_candidates(q, limit), limit),
                            "pgvector", 1)
