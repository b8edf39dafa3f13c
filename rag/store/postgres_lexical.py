"""The full-text side of the PostgreSQL store: BM25 as SQLite's FTS5 computes it, in SQL over the
tsvector's positions and weights, and the counts it needs in meta.

    index.lexical([[("drucker", False)]], 50) -> [(3.75, 17, "drucker toner wechseln"), …]
    index.matching([("ton", True)]) -> 4

PostgresStore (rag/store/postgres.py) inherits these methods; self.conn, self.meta(),
self.set_meta(), self.hiding() and self.hidden come from there.

Does not handle: the tsvector itself (a GENERATED column: rag/store/postgres_setup.py), the
cascade of stages (rag/search/lexical.py).
"""
from rag.store import access
from rag.store.postgres_text import tsquery

K1, B = 1.2, 0.75  # BM25 as in FTS5
# BM25 weight of the heading (tsvector weight A) over the body (D), as bm25(fts, 2.0, 1.0)
HEADING_WEIGHT = 2.0

BM25_SQL = f"""
WITH phrase AS (
    SELECT * FROM unnest(%(words)s::text[], %(prefix)s::bool[], %(idf)s::float8[]) \
AS p(word, prefix, idf)
), hit AS (
    SELECT id, tsv, search_len, search_heading || ' ' || search_body AS text FROM docs \
WHERE tsv @@ %(query)s::tsquery
    AND path NOT IN (SELECT unnest(%(hidden)s::text[]))
)
SELECT (SELECT coalesce(sum(p.idf * f.freq * {K1 + 1} / \
(f.freq + {K1} * ({1 - B} + {B} * h.search_len / %(avgdl)s))), 0)
        FROM phrase p CROSS JOIN LATERAL (
            SELECT sum(CASE WHEN w = 'A' THEN {HEADING_WEIGHT} ELSE 1.0 END) AS freq
            FROM unnest(h.tsv) AS t(lexeme, positions, weights), unnest(t.weights) AS w
            WHERE t.lexeme = p.word OR (p.prefix AND starts_with(t.lexeme, p.word))) f
        WHERE f.freq IS NOT NULL) AS score, h.id, h.text
FROM hit h ORDER BY 1 DESC, 2 LIMIT %(limit)s
"""


class PostgresLexical:
    """Mixed into PostgresStore: lexical candidates, their counts and search text."""

    def lexical_count(self):
        """Chunks the reader may see: meta's count less the hidden pages' chunks (counted by path,
        the unique index)."""
        # once, as the paths: one snapshot per store
        if self.hidden and getattr(self, "hidden_rows", None) is None:
            self.hidden_rows = self.conn.execute("SELECT count(*) FROM docs WHERE path = ANY(%s)",
                                                 (self.hidden,)).fetchone()[0]
        return int(self.meta().get("lexical_rows", 0)) - (self.hidden_rows if self.hidden else 0)

    def count_lexical(self, rows, tokens):
        """Keep BM25's N and total tokens in meta, in the caller's transaction (one writer: the
        lock)."""
        meta = self.meta()
        self.set_meta(lexical_rows=int(meta.get("lexical_rows", 0)) + rows,
                      lexical_tokens=int(meta.get("lexical_tokens", 0)) + tokens)

    def lexical(self, groups, limit):
        """[(BM25, doc_id, search text)] of the chunks matching one stage, best first, ties by id
        (see rag/store/postgres.py's docstring)."""
        phrases = [alt for group in groups for alt in group]
        meta = self.meta()
        rows, tokens = int(meta.get("lexical_rows", 0)), int(meta.get("lexical_tokens", 0))
        if not rows:
            return []
        # the reader's own N and document frequencies (access.idf); avgdl: the index's
        hide, params = self.hiding()
        counts = self.conn.execute(f"SELECT (SELECT count(*) FROM docs "
                                   f"WHERE tsv @@ q::tsquery{hide}) "
                                   "FROM unnest(%s::text[]) WITH ORDINALITY AS x(q, n) ORDER BY n",
                                   (*params, [tsquery([[alt]]) for alt in phrases])).fetchall()
        total = self.lexical_count() if self.hidden else rows
        idf = [access.idf(total, n) for n, in counts]
        return [tuple(r) for r in self.conn.execute(BM25_SQL, {
            "words": [w for w, _ in phrases], "prefix": [p for _, p in phrases], "idf": idf,
            "query": tsquery(groups), "avgdl": tokens / rows, "limit": limit,
            "hidden": self.hidden}).fetchall()]

    def matching(self, alternatives):
        hide, params = self.hiding()
        return self.conn.execute(f"SELECT count(*) FROM docs WHERE tsv @@ %s::tsquery{hide}",
                                 (tsquery([alternatives]), *params)).fetchone()[0]

    def search_text(self, doc_id):
        hide, params = self.hiding()
        row = self.conn.execute(f"SELECT search_heading || ' ' || search_body FROM docs "
                                f"WHERE id = %s{hide}", (doc_id, *params)).fetchone()
        return row[0] if row else ""
