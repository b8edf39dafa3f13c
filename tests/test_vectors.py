"""The vector layout (rag/store/vectors.py) and every way of scanning it give the same exact ranking.

Oracle: math.fsum of the products, sorted by (−score, doc id). Every available way (pure Python in
one process, forked over several, numpy, sqlite-vec) must return the oracle's ids in order and its
scores to 1e-9; the ways that are not installed are skipped, the pure-Python ones always run.
"""
import json
import math
import os
import random
import sqlite3
import sys

import pytest

from conftest import SMALL_WIKI, run_script, write_wiki
from rag.search import ranking as search
from rag.store import sqlite as store
from rag.store import sqlite_file
from rag.store import vectors

WAYS = [("python", 1), ("python", 3), ("numpy", 1), ("sqlite-vec", 1)]


def unit(values):
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values]


def printed(values):
    """As llama-embedding prints them: 7 decimals. Example: [0.123456789] -> [0.1234568]"""
    return [round(x, 7) for x in values]


def make_index(path, rows):
    """An index with only vectors: {doc_id: vector}; returns the open connection."""
    conn = sqlite_file.connect(str(path), create=True)
    with conn:
        for doc_id, vector in rows.items():
            sqlite_file.write_vector(conn, doc_id, vector)
    return conn


def stored(conn):
    """{doc_id: vector as floats} of every stored vector, read through the scan's `blocks`, by doc id."""
    out = {}
    for first, norms, vecs, dim in vectors.blocks(conn):
        values = vectors.floats(vecs)
        out.update((first + k, list(values[k * dim:(k + 1) * dim])) for k, n2 in enumerate(vectors.floats(norms, "d"))
                   if n2)
    return out


def oracle(rows, q, limit):
    """[(score, doc_id)]: fsum of float32-stored values times q, best first, ties by doc id."""
    stored = {d: list(vectors.floats(vectors.pack(v))) for d, v in rows.items()}
    scored = [(math.fsum(a * b for a, b in zip(q, v)), d) for d, v in stored.items()]
    return sorted(scored, key=lambda t: (-t[0], t[1]))[:limit]


def available(conn, method):
    if method == "numpy" and not vectors.numpy_available():
        pytest.skip("numpy nicht installiert")
    if method == "sqlite-vec" and not vectors.load_sqlite_vec(conn):
        pytest.skip("sqlite-vec nicht ladbar (Paket fehlt oder sqlite3 ohne enable_load_extension)")


def random_rows(rnd, n, dim, ids):
    rows = {d: printed(unit([rnd.gauss(0, 1) for _ in range(dim)])) for d in ids}
    duplicated = sorted(rows)[: n // 10]  # exact ties: the same vector under several doc ids
    for a, b in zip(duplicated[::2], duplicated[1::2]):
        rows[b] = rows[a]
    return rows


def clustered_rows(rnd, n, dim):
    """Real-ish: like a small embedding model, every cosine between about 0.9 and 0.97."""
    centre = [rnd.gauss(0, 1) for _ in range(dim)]
    return {d: printed(unit([c + rnd.gauss(0, 0.25) for c in centre])) for d in range(1, n + 1)}, centre


# -- layout ----------------------------------------------------------------------------------------
def test_slots_blocks_and_deletes(tmp_path):
    ids = [1, 2, 1023, 1024, 1025, 3000]
    conn = make_index(tmp_path / "k.db", {d: [float(d), 1.0, 0.0] for d in ids})
    assert list(stored(conn)) == ids
    assert [b for b, in conn.execute("SELECT block FROM vector_blocks ORDER BY block")] == [0, 1, 2]
    assert vectors.read_vectors(conn, [1025]) == {1025: ([1025.0, 1.0, 0.0], 1025.0 ** 2 + 1.0)}
    assert vectors.read_vectors(conn, [5, 99999]) == {}
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'nothing'")  # opens the transaction
        sqlite_file.delete_vectors(conn, [1024, 1025, 3000, 7777])
    assert list(stored(conn)) == [1, 2, 1023]
    assert [b for b, in conn.execute("SELECT block FROM vector_blocks")] == [0]  # empty blocks dropped
    assert vectors.read_vectors(conn, [1024]) == {}
    block = conn.execute("SELECT vecs FROM vector_blocks WHERE block = 0").fetchone()[0]
    assert len(block) == vectors.BLOCK_SIZE * 3 * 4  # fixed slots: D float32 per doc id


def test_rolled_back_page_write_leaves_no_vector(tmp_path):
    conn = make_index(tmp_path / "k.db", {1: [1.0, 0.0]})
    with pytest.raises(RuntimeError):
        with conn:
            sqlite_file.write_vector(conn, 2, [0.0, 1.0])
            sqlite_file.write_vector(conn, 5000, [0.0, 1.0])  # a new block
            sqlite_file.delete_vectors(conn, [1])
            raise RuntimeError("crash in the middle of a page")
    assert stored(conn) == {1: [1.0, 0.0]}
    assert conn.execute("SELECT COUNT(*) FROM vector_blocks").fetchone() == (1,)


# -- the same result from every way ----------------------------------------------------------------
@pytest.mark.parametrize("method,processes", WAYS)
@pytest.mark.parametrize("data", ["random", "clustered"])
def test_every_way_returns_the_exact_ranking(tmp_path, method, processes, data):
    rnd = random.Random(12)
    dim, n = 48, 2600  # three blocks, the last one partly used
    if data == "random":
        rows = random_rows(rnd, n, dim, range(1, n + 1))
        q = unit([rnd.gauss(0, 1) for _ in range(dim)])
    else:
        rows, centre = clustered_rows(rnd, n, dim)
        q = unit([c + rnd.gauss(0, 0.25) for c in centre])
    conn = make_index(tmp_path / "k.db", rows)
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'nothing'")
        sqlite_file.delete_vectors(conn, range(500, 700))  # holes, as after edited pages
        for d in range(500, 700):
            del rows[d]
    available(conn, method)
    expected = oracle(rows, q, 50)
    found = vectors.scan(conn, q, 50, method=method, processes=processes)
    assert (found.method, found.processes) == (method, processes)
    assert [d for _, d in found.ranking] == [d for _, d in expected]
    assert max(abs(a - b) for (a, _), (b, _) in zip(found.ranking, expected)) < 1e-9
    single = vectors.scan(conn, q, 50, method="python", processes=1)
    assert found.ranking == single.ranking  # bit for bit: the fast ways rescore with the same arithmetic


@pytest.mark.parametrize("method,processes", WAYS)
def test_ties_are_broken_by_doc_id(tmp_path, method, processes):
    rows = {d: [1.0, 0.0, 0.0] for d in (7, 3, 1500, 2)} | {9: [0.0, 1.0, 0.0]}
    conn = make_index(tmp_path / "k.db", rows)
    available(conn, method)
    found = vectors.scan(conn, [1.0, 0.0, 0.0], 3, method=method, processes=processes)
    assert found.ranking == [(1.0, 2), (1.0, 3), (1.0, 7)]


def test_without_fork_one_process(tmp_path, monkeypatch):
    rows = random_rows(random.Random(3), 50, 8, range(1, 51))
    conn = make_index(tmp_path / "k.db", rows)
    q = unit([1.0] * 8)
    forked = vectors.scan(conn, q, 10, method="python", processes=2)
    monkeypatch.delattr(os, "fork")
    plain = vectors.scan(conn, q, 10, method="python", processes=2)
    assert (forked.processes, plain.processes) == (2, 1) and forked.ranking == plain.ranking


def test_in_memory_index_is_scanned_in_one_process(tmp_path):
    conn = make_index(":memory:", {1: [1.0, 0.0], 2: [0.6, 0.8]})
    found = vectors.scan(conn, [0.0, 1.0], 5, method="python", processes=4)
    assert [d for _, d in found.ranking] == [2, 1] and (found.method, found.processes) == ("python", 1)


def test_pure_python_is_forced_and_small_indexes_skip_the_imports(tmp_path, monkeypatch):
    conn = make_index(tmp_path / "k.db", {1: [1.0, 0.0]})
    monkeypatch.setenv("RAG_SCAN", "numpy")
    monkeypatch.setenv("RAG_PURE_PYTHON", "1")
    assert vectors.choose(conn, 10 ** 9) == "python"
    monkeypatch.delenv("RAG_PURE_PYTHON")
    monkeypatch.setenv("RAG_SCAN", "")
    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    assert vectors.choose(conn, 191 * 640) == "python"  # importing numpy would cost more than it saves


# -- through the scripts ---------------------------------------------------------------------------
@pytest.fixture
def small_index(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", SMALL_WIKI)
    result = run_script("build_index.py", "--wiki", wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    return fake_embedding


def ask_json(env, *args):
    result = run_script("ask_rag.py", "--retrieve-only", "--json", *args, "Mailbox anlegen", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("method", ["python", "numpy", "sqlite-vec"])
def test_ask_rag_says_which_way_ran_and_ranks_the_same(small_index, method):
    pure = ask_json({**small_index, "RAG_PURE_PYTHON": "1"}, "--mode", "vector")
    assert (pure["scan"], pure["scan_processes"]) == ("python", 1)  # a small index: one process
    got = ask_json({**small_index, "RAG_SCAN": method}, "--mode", "vector")
    if got["scan"] != method:  # not installed: falls back to the teaching path
        assert got["scan"] == "python"
        assert method != "python"
    assert got["sources"] == pure["sources"]
    explain = run_script("ask_rag.py", "--retrieve-only", "--explain", "--mode", "vector", "Mailbox",
                         env={**small_index, "RAG_PURE_PYTHON": "1"})
    assert "Vektorsuche: python (exakt, alle Vektoren)" in explain.stdout


def test_hybrid_cosines_match_the_vector_scan(small_index):
    hybrid = ask_json({**small_index, "RAG_PURE_PYTHON": "1"}, "--mode", "hybrid", "--top-k", "6")
    vector = ask_json({**small_index, "RAG_PURE_PYTHON": "1"}, "--mode", "vector", "--top-k", "50",
                      "--max-per-file", "50")
    cosines = {(s["path"], s["chunk_index"]): s["cosine"] for s in vector["sources"]}
    assert hybrid["scan"] == "python"
    assert all(s["cosine"] == cosines[(s["path"], s["chunk_index"])] for s in hybrid["sources"])


# -- schema 1 -> 2 ---------------------------------------------------------------------------------
def downgrade_to_v1(db):
    """Turn a schema-2 index back into schema 1: one `vectors` row per chunk (as before blocks)."""
    conn = sqlite_file.connect(db)
    rows = [(d, vectors.pack(v)) for d, v in stored(conn).items()]
    with conn:
        conn.execute("CREATE TABLE vectors (doc_id INTEGER PRIMARY KEY, vec BLOB NOT NULL)")
        conn.executemany("INSERT INTO vectors VALUES (?, ?)", rows)
        conn.execute("DROP TABLE vector_blocks")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()
    return rows


def test_schema_1_is_migrated_on_first_use(small_index):
    db = small_index["RAG_DB"]
    before = ask_json(small_index, "--mode", "vector")
    rows = downgrade_to_v1(db)
    result = run_script("ask_rag.py", "--retrieve-only", "--json", "--mode", "vector", "Mailbox anlegen",
                        env=small_index)
    assert result.returncode == 0 and "einmalig auf Schema-Version 2 umgestellt" in result.stderr
    assert json.loads(result.stdout)["sources"] == before["sources"]
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'vectors'").fetchone() is None
    assert [(d, vectors.pack(v)) for d, v in stored(conn).items()] == rows


def test_schema_1_that_cannot_be_written_names_the_fix(small_index):
    db = small_index["RAG_DB"]
    downgrade_to_v1(db)
    read_only = sqlite3.connect(f"file:{db}?mode=ro", uri=True)  # read-only even for root
    with pytest.raises(store.StoreError, match="neu bauen mit: python3 build_index.py --rebuild"):
        sqlite_file.migrate_1_to_2(read_only, db)
    assert read_only.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)


def test_vector_ranking_keeps_its_signature(small_index):
    conn = sqlite_file.connect(small_index["RAG_DB"])
    ranking = store.as_store(conn).vector_scan(search.normalise([1.0, 0, 0, 0, 1.0]), 3).ranking
    assert len(ranking) == 3 and ranking == sorted(ranking, key=lambda t: (-t[0], t[1]))
