"""The full-text side of the SQLite store: FTS5's BM25 over the German search text, and a
restricted reader's BM25 with their own frequencies.

    match_query([[("frist", False), ("kuendi", True)], [("drucker", False)]])
    -> '("frist" OR "kuendi"*) AND ("drucker")'
    index.lexical([[("drucker", False)]], 50) -> [(3.75, 17, "drucker toner wechseln"), …]

SQLiteStore (rag/store/sqlite.py) inherits these methods; self.conn, self.groups,
self.hiding(column) and self.hidden_ids() come from there.

Does not handle: writing the search text (rag/store/sqlite_file.py insert_chunk, replace_search),
the cascade of stages (rag/search/lexical.py).
"""
from rag.store import access

# a restricted reader's lexical stage: rows fetched per row asked before the bound is checked;
# bench/scale.py --access 0.1, 20k, 100 questions: 1 stage had to fetch more (limit + 10 rows: 46)
FETCH_FACTOR = 2
TOLERANCE = 1e-9  # relative: FTS5's and Python's BM25 of the same chunk differ by rounding only


def match_query(groups):
    """One cascade stage as an FTS5 MATCH string: AND over groups, OR within a group, (word, prefix)
    each.

    Example: [[("frist", False), ("kuendi", True)], [("drucker", False)]]
             -> '("frist" OR "kuendi"*) AND ("drucker")'
    """
    def phrase(word, prefix):
        return '"' + word.replace('"', '""') + '"' + ("*" if prefix else "")
    return " AND ".join("(" + " OR ".join(phrase(w, p) for w, p in group) + ")" for group in groups)


class SQLiteLexical:
    """Mixed into SQLiteStore: lexical candidates, their counts and search text."""

    def lexical(self, groups, limit):
        """[(BM25, doc_id, search text)] of the chunks matching one cascade stage, best first, ties
        by id (limit None: all of them); only chunks the reader may see.

        BM25 as FTS5 computes it (k1 1.2, b 0.75), heading weighted 2:1 over the body.
        """
        if self.groups is not None:
            return self.own_frequencies(groups, limit)
        return self.conn.execute(
            "SELECT -bm25(fts, 2.0, 1.0), rowid, heading || ' ' || body FROM fts WHERE fts MATCH ? "
            "ORDER BY 1 DESC, rowid LIMIT ?",
            (match_query(groups), -1 if limit is None else limit)).fetchall()

    def own_frequencies(self, groups, limit):
        """lexical() for a restricted reader: BM25 with the reader's own N and document frequencies
        (avgdl stays the whole index's), so no score or rank depends on what a hidden page contains.

        The visible matches come in FTS5's order (its BM25 over the whole index, W), `fetch` at a
        time, and each is rescored in Python (access.bm25) with the reader's IDF. Both sum the same
        per-phrase terms, so a chunk's own score is at most `most` · W, most = the largest
        idf(reader) / idf(whole index) of the phrases: once `limit` rescored chunks score above
        `most` · W of the last one fetched, no chunk further down can enter.
        """
        hide, _ = self.hiding("rowid")
        fetch = limit and limit * FETCH_FACTOR

        def candidates(n):  # the best n visible matches by W (n None: all)
            return self.conn.execute(f"SELECT -bm25(fts, 2.0, 1.0), rowid, heading, body FROM fts "
                                     f"WHERE fts MATCH ?{hide} ORDER BY 1 DESC, rowid LIMIT ?",
                                     (match_query(groups), n or -1)).fetchall()
        found = candidates(fetch)
        if not found:
            return []
        phrases = [alt for group in groups for alt in group]
        # per phrase: matches in the whole index, visible ones
        counts = self.conn.execute("SELECT " + ", ".join(
            f"(SELECT COUNT(*) FROM fts WHERE fts MATCH ?), "
            f"(SELECT COUNT(*) FROM fts WHERE fts MATCH ?{hide})"
            for _ in phrases), [match_query([[p]]) for p in phrases for _ in (0, 1)]).fetchone()
        rows, tokens = self.fts_totals()
        visible = rows - len(self.hidden_ids())  # lexical_count(), without reading the record again
        idfs = [access.idf(visible, seen) for seen in counts[1::2]]
        most = max(own / access.idf(rows, whole) for own, whole in zip(idfs, counts[0::2]))
        while True:
            scored = sorted(((access.bm25(h, b, phrases, idfs, tokens / rows), i, h + " " + b)
                             for _, i, h, b in found),
                            key=lambda row: (-row[0], row[1]))[:limit]
            if (not fetch or len(found) < fetch
                    or scored[-1][0] > most * found[-1][0] * (1 + TOLERANCE)):
                return scored
            fetch *= 4
            found = candidates(fetch)

    def fts_totals(self):
        """(rows, tokens of all columns) of the full-text index: FTS5's averages record (fts_data id
        1, varints), from which FTS5 takes bm25's N and avgdl; committed rows only (a reader's view:
        this connection's own open write transaction is not in it yet).

        Example: bytes 81 9c 20 02 05 (hex) -> (20000, 2 + 5)
        """
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
        """Chunks in the full-text index the reader may see: FTS5's row count less the hidden chunks
        (every chunk has its row in fts)."""
        return self.fts_totals()[0] - len(self.hidden_ids())
