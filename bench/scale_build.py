"""Building bench/scale.py's synthetic indexes: the project's SQLite and PostgreSQL tables for a matrix of
vectors (doc ids 1…N, CHUNKS_PER_PAGE chunks a page, eight German words of search text each), the vocabulary and
search text a build_index.py run leaves behind, and --access's rules for a seeded share of the pages.
bench/forget_cost.py builds its indexes with the same functions.
"""
import json
import math
import random
import time

import common  # noqa: F401  (puts the repository on sys.path)
import scale_corpus
from common import GERMAN_WORDS

from rag import store
from rag.store import access, postgres
from rag.store import sqlite_file
from rag.store import vectors
from rag.text import german

SEED = 19
CHUNKS_PER_PAGE = 5
RESTRICTED = "geschuetzt"  # --access: the group of the restricted pages
NOISE = 0.02  # per-dimension noise of derived vectors (|noise| ≈ 0.4 at D = 384, before normalising)

def load_real(count):
    found = scale_corpus.load(count)
    if found is None:
        raise SystemExit(f"Fehler: keine e5-Vektoren im Cache – zuerst: python3 bench/scale_corpus.py --count {count}")
    import numpy as np
    texts, queries, dim = found
    return np.frombuffer(texts, dtype="<f4").reshape(-1, dim), np.frombuffer(queries, dtype="<f4").reshape(-1, dim)


def make_vectors(real, n):
    """n × D float32: the real vectors first, then derived ones (see the module docstring)."""
    import numpy as np
    if n <= len(real):
        return np.ascontiguousarray(real[:n])
    rng = np.random.default_rng(SEED)
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    out[:len(real)] = real
    for start in range(len(real), n, 100_000):
        k = min(100_000, n - start)
        a, b = real[rng.integers(0, len(real), k)], real[rng.integers(0, len(real), k)]
        alpha = rng.uniform(0.5, 1.0, (k, 1)).astype(np.float32)
        mixed = alpha * a + (1 - alpha) * b + rng.normal(0, NOISE, a.shape).astype(np.float32)
        out[start:start + k] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


def restricted_pages(n, share):
    """The page numbers with a rule: `share` of the pages of n chunks, seeded. Example: (100, 0.1) -> 2 of 20 pages"""
    count = math.ceil(n / CHUNKS_PER_PAGE)
    return sorted(random.Random(SEED).sample(range(count), round(share * count))) if share else []


def access_rows(pages):
    """The access table's rows for these page numbers (rag/store/access.py rows)."""
    return [row for p in pages for row in access.rows(f"seite{p}.md", (RESTRICTED,))]


def hidden_ids(pages):
    """The doc ids (1-based) of these pages' chunks. Example: [0, 2] -> {1, 2, 3, 4, 5, 11, 12, 13, 14, 15}"""
    return {p * CHUNKS_PER_PAGE + c + 1 for p in pages for c in range(CHUNKS_PER_PAGE)}


def texts_for(i):
    """A short German search text for chunk i (the benchmark measures vectors; text only fills the tables)."""
    rnd = random.Random(i)
    return " ".join(rnd.choice(GERMAN_WORDS) for _ in range(8))


def search_text(n):
    """The vocabulary and a function i -> (heading, body) search text, as build_index.py leaves them after a run
    (so a later run or --forget finds the index settled: bench/forget_cost.py)."""
    vocab = german.learn_vocabulary("Abschnitt\n" + texts_for(i) for i in range(1, n + 1))
    heading = german.index_text("Abschnitt", vocab)
    return vocab, lambda i: (heading, german.index_text(texts_for(i), vocab))


# -- building --------------------------------------------------------------------------------------
def build_sqlite(path, matrix, rules=()):
    """The project's SQLite tables for `matrix` (doc ids 1…N) and the access rows `rules`, in bulk; returns seconds."""
    import numpy as np
    started = time.monotonic()
    conn = sqlite_file.connect(str(path), create=True)
    n, dim = matrix.shape
    with conn:
        vocab, search = search_text(n)
        sqlite_file.write_meta(conn, dim=dim, embed_model="multilingual-e5-small-q4_0.gguf", vocab_dirty=0,
                               search_version=german.SEARCH_VERSION)
        conn.executemany("INSERT INTO vocab VALUES (?)", [(w,) for w in sorted(vocab)])
        rows = ((i, f"seite{(i - 1) // CHUNKS_PER_PAGE}.md", (i - 1) % CHUNKS_PER_PAGE, "Abschnitt", texts_for(i),
                 json.dumps(np.round(matrix[i - 1].astype(np.float64), 7).tolist()), f"h{i}", "[]")
                for i in range(1, n + 1))
        conn.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.executemany("INSERT INTO fts (rowid, heading, body) VALUES (?, ?, ?)",
                         ((i, *search(i)) for i in range(1, n + 1)))
        conn.executemany("INSERT INTO pages VALUES (?, ?, ?)",
                         ((f"seite{p}.md", f"p{p}", CHUNKS_PER_PAGE) for p in range(math.ceil(n / CHUNKS_PER_PAGE))))
        norms = (matrix.astype(np.float64) ** 2).sum(axis=1)
        for block in range((n + 1) // vectors.BLOCK_SIZE + 1):
            lo, hi = block * vectors.BLOCK_SIZE, (block + 1) * vectors.BLOCK_SIZE  # doc ids of the block
            vecs = np.zeros((vectors.BLOCK_SIZE, dim), dtype="<f4")
            n2 = np.zeros(vectors.BLOCK_SIZE, dtype="<f8")
            ids = np.arange(max(lo, 1), min(hi, n + 1))
            if len(ids):
                vecs[ids - lo], n2[ids - lo] = matrix[ids - 1], norms[ids - 1]
                conn.execute("INSERT INTO vector_blocks VALUES (?, ?, ?)", (block, n2.tobytes(), vecs.tobytes()))
        conn.executemany("INSERT INTO access VALUES (?, ?)", rules)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.monotonic() - started


def build_postgres(dsn, matrix, rules=()):
    """The project's PostgreSQL tables via COPY (and the access rows `rules`), then the HNSW index;
    returns (copy seconds, HNSW seconds)."""
    import numpy as np
    n, dim = matrix.shape
    started = time.monotonic()
    index = store.open_store(dsn, create=True, rebuild=True)
    vocab, search = search_text(n)
    index.write_meta(dim=dim, embed_model="multilingual-e5-small-q4_0.gguf", vocab_dirty=0)
    tokens = 0
    with index.conn.cursor().copy("COPY docs (id, path, chunk_index, heading, content, embedding, content_hash, "
                                  "search_heading, search_body, search_len) FROM STDIN") as copy:
        for i in range(1, n + 1):
            (heading, body), text = search(i), texts_for(i)
            length = len(heading.split()) + len(body.split())
            tokens += length
            copy.write_row((i, f"seite{(i - 1) // CHUNKS_PER_PAGE}.md", (i - 1) % CHUNKS_PER_PAGE, "Abschnitt", text,
                            "[" + ",".join(map(repr, matrix[i - 1].astype(np.float64).tolist())) + "]", f"h{i}",
                            heading, body, length))
    with index.conn.cursor().copy("COPY pages FROM STDIN") as copy:
        for p in range(math.ceil(n / CHUNKS_PER_PAGE)):
            copy.write_row((f"seite{p}.md", f"p{p}", CHUNKS_PER_PAGE))
    with index.conn.cursor().copy("COPY access FROM STDIN") as copy:
        for row in rules:
            copy.write_row(row)
    largest = float((matrix.astype(np.float64) ** 2).sum(axis=1).max())
    index.replace_search(vocab, [], search_version=german.SEARCH_VERSION)  # the vocabulary; no row rewritten
    index.write_meta(lexical_rows=n, lexical_tokens=tokens, max_norm2=largest)
    index.conn.execute("SELECT setval(pg_get_serial_sequence('docs', 'id'), %s)", (n,))
    index.conn.execute("ANALYZE docs")
    copied = time.monotonic() - started
    index.finish(ann=True)  # the HNSW index, then rag_rebuild becomes rag
    index.close()
    return copied, time.monotonic() - started - copied


def postgres_sizes(dsn):
    conn = postgres.connect(dsn)
    row = conn.execute("SELECT pg_total_relation_size('rag.docs'), pg_relation_size('rag.docs_hnsw')").fetchone()
    conn.close()
    return row[0] - row[1], row[1]
