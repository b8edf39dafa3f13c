"""What the indexer and the question pipeline need from a store: the interface, its rows and its
error.

    is_postgres("postgresql://rag@db/wiki") -> True;  is_postgres("knowledge.db") -> False
    index.pages() -> {"mail/quota.md": "9f2c…"};
    index.vector_scan(q, 50) -> Scan([(0.953, 17), …], "python", 1)

`Store` is the interface as a typing.Protocol: exactly the methods build_index.py, rag/ingest,
rag/search, rag/core.py and the doors call. SQLiteStore (rag/store/sqlite.py) and PostgresStore
(rag/store/postgres.py) implement it with the same parameter names (tests/test_vectors.py checks
it). German folding, compounds, the cascade, coverage, RRF, the floor and every check stay above it
in Python (rag/text/german.py, rag/search/ranking.py), so both stores rank the same way.
`open_store` is in rag/store/__init__.py.

Also here: the writer lock's waiting (both stores wait the same way, one line on stderr).

Does not handle: choosing a store (rag/store/__init__.py), anything SQL.
"""
import sys
import time
from collections import namedtuple
from typing import Protocol

from rag import config

# seconds a second indexer waits for the first, then stops
LOCK_WAIT = config.env_int("RAG_LOCK_WAIT", 600)
# --db values that mean PostgreSQL; anything else is a file
POSTGRES_PREFIXES = ("postgresql://", "postgres://")
# PostgreSQL: HNSW preselection from this many chunks on. bench/scale.py, 2 cores: exact p50 20.6 ms
# at 20,000 and 161 ms at 200,000 (≈ 45 ms at 50,000), HNSW (ef_search 200) 36 ms
ANN_MIN_CHUNKS = 50_000

# search: (heading, body) text
Chunk = namedtuple("Chunk", "heading content vector content_hash flags search")
Row = namedtuple("Row", "doc_id path chunk_index heading content flags")  # one stored chunk


class StoreError(Exception):
    """The index is missing, foreign or broken; the message is German and names the fix."""


def is_postgres(db):
    """Does --db name a PostgreSQL database?

    Example: "postgresql://rag@db/wiki" -> True, "knowledge.db" -> False
    """
    return db.startswith(POSTGRES_PREFIXES)


class Store(Protocol):
    """One index. A writer (open_store(create=True)) holds the writer lock until close(); a second
    one waits, then stops with one German line (never two writers interleaved)."""
    kind: str  # "sqlite" or "postgres"
    label: str  # the database as messages name it (a DSN without its password)

    # -- meta, vocabulary, sizes
    def meta(self) -> dict: """Key/value facts about the index (model, dim, thresholds), as text."""
    def write_meta(self, **values) -> None: """Set meta keys, one transaction."""
    def vocab(self) -> frozenset: """The words compounds are split against."""
    def has_lexical(self) -> bool: """Is there a lexical index (SQLite without FTS5: no)."""
    def count(self) -> int: """Chunks stored."""
    def lexical_count(self) -> int: """Chunks in the lexical index."""
    def folders(self) -> list:
        """Top-level folders, sorted. Example: mail/a.md, mail/b/c.md, x.md -> ["mail/"]"""

    # -- writing
    def pages(self) -> dict: """{path: file hash} of every indexed page (incremental runs)."""
    def reusable(self, hashes) -> dict:
        """{content hash: vector} of chunks already stored with these hashes."""
    def write_page(self, path, page_hash, chunks) -> None:
        """One page's Chunks and vectors, one transaction."""
    def delete_page(self, path) -> None: """One page out of every table, one transaction."""
    def texts(self) -> list: """[(doc_id, heading, content)] of every chunk, by id."""
    def replace_search(self, vocab, rows, **meta) -> None:
        """New vocabulary; these chunks' search text, one transaction."""
    def flagged(self) -> list: """[(path, heading, flags JSON)] of chunks with flags."""
    def page_contents(self, path) -> list: """The contents of one page's chunks, in order."""
    def scrub(self, vacuum) -> int:
        """After deletions the bytes too (secure delete, merges, WAL); the WAL bytes left."""
    def raw_files(self) -> list:
        """The files that hold the index's bytes, where this process can read them."""
    def leftovers(self, needles) -> dict:
        """{table: live rows whose text holds any of these strings}."""
    def access(self) -> dict:
        """{path: (groups…)} of every page with a rule (rag/store/access.py)."""
    def write_access(self, rules) -> None:
        """Set these pages' rules ({path: groups, None = open}), one transaction."""
    def restricted_ids(self) -> set:
        """Doc ids of the chunks of pages with a rule (kept out of the vocabulary)."""
    def section_rows(self) -> list: """[(doc_id, path, heading, content)], by path and index."""
    def questions(self, path=None) -> list: """[(path, heading, section_hash, question)]."""
    def write_questions(self, path, heading, section_hash, texts, vecs, search) -> None:
        """One section's questions and vectors, its chunks' search text [(id, heading, body)]."""
    def finish(self, ann=None) -> None:
        """End of an index run (--rebuild: the new index takes the old one's place)."""
    def close(self) -> None: """Close, and release the writer lock."""

    # -- reading: only what the reader of open_store(reader=…) may see (rag/store/access.py)
    def lexical(self, groups, limit) -> list:
        """[(BM25, doc_id, search text)] of one cascade stage, best first."""
    def matching(self, alternatives) -> int:
        """How many chunks contain any of these (word, prefix) alternatives."""
    def search_text(self, doc_id) -> str: """The folded search text of one chunk."""
    def sources(self, doc_ids) -> dict: """{doc_id: Row} for these chunks."""
    def ids_below(self, prefix) -> set:
        """Doc ids of every chunk below a folder prefix ("mail/")."""
    def section(self, path, heading) -> list:
        """[(chunk_index, content)] of one page's chunks under one heading."""
    def vector_scan(self, q, limit, ann=None):
        """vectors.Scan: exact, or HNSW preselection + exact rescoring."""
    def similarities(self, q, doc_ids) -> dict: """{doc_id: q · v} with the scan's arithmetic."""
    def has_questions(self) -> bool: """Are there questions? (rag/store/questions.py)"""
    def questions_of(self, doc_ids) -> dict: """{doc_id: [question, …]} of their sections."""


def wait_for(acquire, wait, label, poll=0.2):
    """Call acquire() until it returns True or `wait` seconds passed; one line on stderr when
    waiting."""
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
    return (f"ein anderer build_index.py schreibt seit über {wait} s in {label} – warten, bis er "
            f"fertig ist (läuft dort --watch?), oder länger warten mit RAG_LOCK_WAIT=Sekunden")
