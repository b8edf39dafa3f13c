"""Questions written for each section at index time (doc2query), as both stores rank chunks by them.

    merge([(0.91, 7), (0.88, 3)], [(0.95, 12)], [(3, 12, "Wie groß …?"), (4, 12, "Wie groß …?")], 3)
    -> ([(0.95, 3), (0.95, 4), (0.91, 7)], {3: "Wie groß …?", 4: "Wie groß …?"})

A section (one page's chunks under one heading path) has at most MAX_QUESTIONS questions, each
with a vector of its own (rag/ingest/questions.py writes them). A chunk's score in the vector scan
is the best of its own vector and the vectors of its section's questions: the store scans the
chunks' vectors for the best `limit` and the question vectors for the best fetch(limit), and
`merge` takes the maximum per chunk. That is the exact top list of "max(chunk, its questions)":
a question scoring above the limit-th chunk of the exact list lifts a chunk above it, fewer than
`limit` chunks are there, and each has at most MAX_QUESTIONS questions, so fewer than fetch(limit)
questions score above it, and every one of them was fetched (ties at the last place aside, as in
every top list here).

Does not handle: SQL (rag/store/sqlite_questions.py, rag/store/postgres_questions.py), writing.
"""
from rag.store import vectors

MAX_QUESTIONS = 3  # questions per section, at most: the scan's exactness rests on it (fetch)


def fetch(limit):
    """Question vectors a scan reads for an exact top `limit` of chunks. Example: 50 -> 150"""
    return limit * MAX_QUESTIONS


def merge(own, asked, pairs, limit):
    """(ranking, via): the best `limit` chunks by the larger of their own score and their questions'
    scores, ties by doc id; via = {doc_id: question} where a question scored above the chunk itself.

    own: [(score, doc_id)] of the chunks' vectors; asked: [(score, question id)]; pairs: [(doc_id,
    question id, question)], each question with the chunks of its section.
    Example: own [(0.9, 7)], asked [(0.95, 12)], pairs [(3, 12, "Wie …?")]
             -> ([(0.95, 3), (0.9, 7)], {3: "Wie …?"})
    """
    best = {doc_id: (score, None) for score, doc_id in own}
    scores = {question_id: score for score, question_id in asked}
    texts = {}
    for doc_id, question_id, text in pairs:
        score = scores.get(question_id)
        if score is not None and (doc_id not in best or score > best[doc_id][0]):
            best[doc_id], texts[doc_id] = (score, question_id), text
    ranking = vectors.top([(score, doc_id) for doc_id, (score, _) in best.items()], limit)
    via = {doc_id: texts[doc_id] for _, doc_id in ranking if best[doc_id][1] is not None}
    return ranking, via


def raised(own, pairs, scores):
    """{doc_id: score} of `own`, raised where one of the chunk's questions scores higher.

    pairs: [(doc_id, question id)]; scores: {question id: score}. Chunks not in `own` (hidden from
    the reader) stay out. Example: own {3: 0.8}, pairs [(3, 12)], scores {12: 0.9} -> {3: 0.9}
    """
    out = dict(own)
    for doc_id, question_id in pairs:
        if doc_id in out and question_id in scores:
            out[doc_id] = max(out[doc_id], scores[question_id])
    return out


class Questions:
    """What both stores do alike with the questions; mixed into SQLiteStore and PostgresStore, whose
    modules (rag/store/sqlite_questions.py, rag/store/postgres_questions.py) give has_questions,
    question_pairs, question_scan (the best question ids, exact) and question_scores, and whose
    chunk_scan and chunk_similarities score the chunks' own vectors."""

    PARAM = "?"  # the driver's placeholder ("%s" for psycopg)

    def questions(self, path=None):
        """[(path, heading, section_hash, question)] of every stored question (or one page's), by
        path, heading, as written."""
        if not self.has_questions():
            return []
        where, params = (f"WHERE path = {self.PARAM} ", (path,)) if path is not None else ("", ())
        return self.conn.execute(f"SELECT path, heading, section_hash, question FROM questions "
                                 f"{where}ORDER BY path, heading, id", params).fetchall()

    def section_rows(self):
        """[(doc_id, path, heading, content)] of every chunk, by path and chunk index."""
        return self.conn.execute("SELECT id, path, heading, content FROM docs "
                                 "ORDER BY path, chunk_index").fetchall()

    def vector_scan(self, q, limit, ann=None):
        """chunk_scan, each chunk at the best of its own vector and its questions' (merge)."""
        q = q if isinstance(q, vectors.Query) else vectors.prepare(q)
        found = self.chunk_scan(q, limit, ann)
        if not self.has_questions():
            return found
        asked = self.question_scan(q, fetch(limit))
        pairs = self.question_pairs(question_ids=[i for _, i in asked])
        ranking, via = merge(found.ranking, asked, pairs, limit)
        return found._replace(ranking=ranking, questions=via)

    def similarities(self, q, doc_ids):
        """{doc_id: score} as vector_scan scores: the best of the chunk's and its questions'."""
        q = q if isinstance(q, vectors.Query) else vectors.prepare(q)
        own = self.chunk_similarities(q, doc_ids)
        if not own or not self.has_questions():
            return own
        pairs = [(doc_id, i) for doc_id, i, _ in self.question_pairs(doc_ids=list(own))]
        return raised(own, pairs, self.question_scores(q, [i for _, i in pairs]))

    def questions_of(self, doc_ids):
        """{doc_id: [question, …]} of these chunks (those with any). Example: {17: ["Wie …?"]}"""
        found = {}
        if doc_ids and self.has_questions():
            for doc_id, _, text in self.question_pairs(doc_ids=doc_ids):
                found.setdefault(doc_id, []).append(text)
        return found
