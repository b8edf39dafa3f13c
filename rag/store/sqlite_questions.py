"""The questions of each section in the SQLite file, and their part of the vector scan.

    index.write_questions("mail/quota.md", "Mail › Quota", "9f2c…", ["Postfach voll, was tun?"],
                          [[0.6, 0.8]], [(17, "mail quota", "die quota … postfach voll was tun")])
    index.question_scan(q, 150) -> [(0.962, 4), …]    (question ids; merged: rag/store/questions.py)

Tables (rag/store/sqlite_file.py QUESTION_SCHEMA): questions (id, path, heading, section_hash,
question) and question_blocks, the question vectors packed exactly as the chunks' vector_blocks,
slot = questions.id, so rag/store/vectors.py scans both the same way. A question belongs to the
chunks of its page with its heading path. SQLiteStore (rag/store/sqlite.py) inherits these methods;
its own scan is chunk_scan. An index built before questions existed has no such tables until the
next build_index.py: until then it has no questions.

Does not handle: what the questions say or when they are written (rag/ingest/questions.py).
"""
import sqlite3

from rag.store import questions, vectors
from rag.store.sqlite_file import delete_vectors, write_vector

TABLE = "question_blocks"
SECTION_JOIN = "questions q JOIN docs d ON d.path = q.path AND d.heading = q.heading"


class SQLiteQuestions(questions.Questions):
    """Mixed into SQLiteStore: self.conn, self.hiding(column), self.hidden_ids() come from there;
    the scan with the questions from rag/store/questions.py Questions."""
    PARAM = "?"  # the driver's placeholder

    def has_questions(self):
        """Does the index hold a question? (False for an index built before questions existed.)"""
        try:
            return self.conn.execute("SELECT 1 FROM questions LIMIT 1").fetchone() is not None
        except sqlite3.OperationalError:
            return False

    def write_questions(self, path, heading, section_hash, texts, vecs, search):
        """Replace one section's questions and their vectors, and write its chunks' search text
        [(doc_id, heading text, body text)], in one transaction."""
        assert len(texts) == len(vecs) <= questions.MAX_QUESTIONS, "at most MAX_QUESTIONS a section"
        with self.conn:
            self.drop_questions(path, heading)
            for text, vector in zip(texts, vecs):
                cur = self.conn.execute("INSERT INTO questions (path, heading, section_hash, "
                                        "question) VALUES (?, ?, ?, ?)",
                                        (path, heading, section_hash, text))
                write_vector(self.conn, cur.lastrowid, vector, TABLE)
            if self.has_lexical():
                self.conn.executemany("DELETE FROM fts WHERE rowid = ?", [(r[0],) for r in search])
                self.conn.executemany("INSERT INTO fts (rowid, heading, body) VALUES (?, ?, ?)",
                                      search)

    def drop_questions(self, path, heading=None):
        """Delete a page's questions (or one section's) and their vectors (caller's transaction)."""
        where, params = ("path = ?", (path,))
        if heading is not None:
            where, params = "path = ? AND heading = ?", (path, heading)
        ids = [i for i, in self.conn.execute(f"SELECT id FROM questions WHERE {where}", params)]
        self.conn.execute(f"DELETE FROM questions WHERE {where}", params)  # opens the transaction
        delete_vectors(self.conn, ids, TABLE)

    def question_pairs(self, doc_ids=None, question_ids=None):
        """[(doc_id, question id, question)] of these chunks or questions, the reader's only."""
        column, ids = ("d.id", doc_ids) if question_ids is None else ("q.id", question_ids)
        hide, params, ids = *self.hiding("d.id"), list(ids)
        rows = []
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            rows += self.conn.execute(f"SELECT d.id, q.id, q.question FROM {SECTION_JOIN} WHERE "
                                      f"{column} IN ({','.join('?' * len(part))}){hide} "
                                      "ORDER BY d.id, q.id", [*part, *params]).fetchall()
        return rows

    def hidden_questions(self):
        """The ids of the questions of pages hidden from the reader (none for a reader of all)."""
        if not self.hidden_ids():
            return set()
        return {i for i, in self.conn.execute("SELECT id FROM questions WHERE path IN "
                                              "(SELECT path FROM docs WHERE id IN temp.hidden)")}

    def question_scan(self, q, limit):
        """[(score, question id)] of the best `limit` questions the reader may see, exact."""
        hidden = self.hidden_questions()
        return vectors.scan(self.conn, q, limit, hidden=hidden, table=TABLE).ranking

    def question_scores(self, q, question_ids):
        """{question id: score} with the scan's arithmetic."""
        return vectors.similarities(self.conn, q, question_ids, TABLE)
