"""PostgreSQL: the questions of each section, and the exact scan over one table of vectors.

    index.write_questions("mail/quota.md", "Mail › Quota", "9f2c…", ["Postfach voll, was tun?"],
                          [[0.6, 0.8]], [(17, "mail quota", "die quota … postfach voll was tun")])
    index.exact_candidates(q, 50, "questions") -> [4, 9, …]   (ids that can be in the exact top 50)
    index.rescore(q, [4, 9, …], 50, "questions") -> [(0.962, 4), …]

Table questions (rag/store/postgres_setup.py): id, path, heading, section_hash, question, embedding;
a question belongs to the chunks of its page with its heading path. Its vectors are scanned exactly,
never through HNSW: pgvector's float32 inner product preselects, rag/store/vectors.py's arithmetic
rescores, as for the chunks (the table argument: "docs" or "questions"). PostgresStore
(rag/store/postgres.py) inherits these methods; its own scan is chunk_scan, the merge with the
questions is rag/store/questions.py. An index built before questions existed gets the table at the
next build_index.py; until then it has no questions.

Does not handle: what the questions say or when they are written (rag/ingest/questions.py), HNSW
over question vectors.
"""
import math
import operator

from rag.store import questions, vectors
from rag.store.postgres_text import vector_text

MARGIN = 32  # exact scan: rows fetched beyond the limit, so that rescoring rarely needs a 2nd query


class PostgresQuestions(questions.Questions):
    """Mixed into PostgresStore: self.conn, self.hiding(), self.meta(), self.set_meta(),
    self.settings() and self.count_lexical() come from there."""
    question_table = None  # does the schema have the table questions (checked once per store)
    PARAM = "%s"  # the driver's placeholder

    # -- the exact scan over one table of vectors
    def stored(self, ids, table="docs"):
        """{id: (float32 values as Python floats, |v|²)}, as rag/store/vectors.py reads SQLite's."""
        hide, params = self.hiding()
        rows = self.conn.cursor(binary=True).execute(
            f"SELECT id, embedding::real[] FROM {table} WHERE id = ANY(%s){hide}",
            (list(ids), *params))
        out = {}
        for row_id, values in rows:
            exact = list(vectors.floats(vectors.pack(values)))
            out[row_id] = (exact, math.fsum(map(operator.mul, exact, exact)))  # = vectors.norm2
        return out

    def exact_candidates(self, q, limit, table="docs"):
        """Every id that can be in the exact top `limit`: pgvector's float32 inner product over all
        rows, kept while within 2 · error of the limit-th estimate (vectors.float32_error)."""
        meta = self.meta()
        dim = int(meta.get("dim") or len(q.values))
        largest = float(meta.get("max_norm2", 1.0))
        error = (2 * dim + 16) * vectors.FLOAT32_ERROR * math.sqrt(largest) + 1e-12
        self.settings(enable_indexscan="off")  # exact: never the HNSW index
        fetch = limit + MARGIN
        while True:
            hide, params = self.hiding()
            rows = self.conn.execute(f"SELECT id, -(embedding <#> %s::vector) FROM {table} "
                                     f"WHERE true{hide} ORDER BY 2 DESC LIMIT %s",
                                     (vector_text(q.values), *params, fetch)).fetchall()
            if not rows:
                return []
            kth = rows[min(limit, len(rows)) - 1][1]
            if len(rows) < fetch or rows[-1][1] < kth - 2 * error:
                return [d for d, estimate in rows if estimate >= kth - 2 * error]
            fetch *= 4

    def rescore(self, q, ids, limit, table="docs"):
        """[(score, id)] of these rows, best `limit` first, in rag/store/vectors.py's arithmetic."""
        found = self.stored(ids, table)
        scored = [(vectors.similarity(q, v, n2), i) for i, (v, n2) in found.items()]
        return vectors.top(scored, limit)

    # -- the questions
    def has_questions(self):
        """Does the index hold a question? (False for an index built before questions existed.)"""
        if self.question_table is None:
            found = self.conn.execute("SELECT to_regclass('questions') IS NOT NULL").fetchone()
            self.question_table = found[0]
        return bool(self.question_table) and self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM questions)").fetchone()[0]

    def write_questions(self, path, heading, section_hash, texts, vecs, search):
        """Replace one section's questions and their vectors, and write its chunks' search text
        [(doc_id, heading text, body text)], in one transaction (BM25's token count in meta)."""
        assert len(texts) == len(vecs) <= questions.MAX_QUESTIONS, "at most MAX_QUESTIONS a section"
        rows = [(path, heading, section_hash, text, vector_text(v)) for text, v in zip(texts, vecs)]
        new = [(h, b, len(h.split()) + len(b.split()), doc_id) for doc_id, h, b in search]
        with self.conn.transaction():
            self.drop_questions(path, heading)
            self.conn.cursor().executemany(
                "INSERT INTO questions (path, heading, section_hash, question, embedding) "
                "VALUES (%s, %s, %s, %s, %s::vector)", rows)
            before = self.conn.execute("SELECT coalesce(sum(search_len), 0) FROM docs WHERE id = "
                                       "ANY(%s)", ([row[-1] for row in new],)).fetchone()[0]
            self.conn.cursor().executemany("UPDATE docs SET search_heading = %s, search_body = %s, "
                                           "search_len = %s WHERE id = %s", new)
            self.count_lexical(0, sum(n for _, _, n, _ in new) - before)
            largest = max((vectors.norm2(v) for v in vecs), default=0.0)
            self.set_meta(max_norm2=max(largest, float(self.meta().get("max_norm2", 0))))

    def drop_questions(self, path, heading=None):
        """Delete a page's questions (or one section's); the caller holds the transaction."""
        if heading is None:
            self.conn.execute("DELETE FROM questions WHERE path = %s", (path,))
        else:
            self.conn.execute("DELETE FROM questions WHERE path = %s AND heading = %s",
                              (path, heading))

    def question_pairs(self, doc_ids=None, question_ids=None):
        """[(doc_id, question id, question)] of these chunks or questions, the reader's only."""
        column, ids = ("d.id", doc_ids) if question_ids is None else ("q.id", question_ids)
        hide, params = self.hiding()
        return self.conn.execute(f"SELECT d.id, q.id, q.question FROM (SELECT id, path, heading "
                                 f"FROM docs WHERE true{hide}) d JOIN questions q "
                                 f"ON d.path = q.path AND d.heading = q.heading "
                                 f"WHERE {column} = ANY(%s) ORDER BY d.id, q.id",
                                 (*params, list(ids))).fetchall()

    def question_scan(self, q, limit):
        """[(score, question id)] of the best `limit` questions the reader may see, exact."""
        return self.rescore(q, self.exact_candidates(q, limit, "questions"), limit, "questions")

    def question_scores(self, q, question_ids):
        """{question id: score} with the scan's arithmetic."""
        found = self.stored(question_ids, "questions")
        return {i: vectors.similarity(q, v, n2) for i, (v, n2) in found.items()}
