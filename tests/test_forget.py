"""build_index.py --forget: a canary page indexed, asked about, audited, forgotten, and searched for byte for byte.

The canary page holds strings that no other page has (CANARY_STRINGS). After --forget none of their bytes
may remain in any file under the test's folder (database, -wal, -shm, audit log, deletion log) nor, for
PostgreSQL, in the live rows or the database's relation files; the other pages must be stored exactly as a
clean build without the canary stores them (same rows, same search text: the same ranking). Tests with
`stores` run against SQLite and against PostgreSQL (conftest.py). The unit tests come first.
"""
import json
import os
import sqlite3
from pathlib import Path

import pytest
import requests

from conftest import SMALL_WIKI, run_script, write_wiki
from fake_server import FakeLlamaServer
from rag import store
from rag.audit import feedback
from rag.audit import log as audit
from rag.doors import audit_show
from rag.ingest import forget
from rag.store import proof, sqlite_file
from serving import Serving, sse_events
from timeouts import REQUEST

CANARY_PATH = "kunden/liste.md"
CANARY = """\
    # Kundenliste Zwetschgenhain

    Die Quarkbrotmanufaktur Zwetschgenhain hat die Kundennummer 4711-080815 und zahlt per Lastschrift.

    ## Zugang

    Das Passwort der Quarkbrotmanufaktur lautet Sonnenblumenfeld.
    """
CANARY_STRINGS = ["Quarkbrotmanufaktur", "quarkbrotmanufaktur", "Zwetschgenhain", "zwetschgenhain", "4711-080815",
                  "Sonnenblumenfeld", "sonnenblumenfeld", "Lastschrift", "lastschrift"]
QUESTION = "Welche Kundennummer hat die Quarkbrotmanufaktur?"
ANSWER = ["Die Quarkbrotmanufaktur hat", " 4711-080815 [1]."]


# -- units -----------------------------------------------------------------------------------------
def test_needles_are_the_pages_own_long_words_and_numbers_as_written_and_folded():
    found = proof.needles(["Die Müllerstraße der Quarkbrotmanufaktur, Tel. 0221 4711-0815, Mailbox 2024"],
                          ["Mailbox anlegen in der Quarkbrotmanufaktur-Zentrale"], ["kunden/muellerstrasse.md"])
    assert found == ["0221 4711-0815"]  # Quarkbrot… is on another page, Müllerstraße in the path, 2024 too short


def test_needles_skip_words_every_index_keeps():
    assert proof.needles(["Passwort Zwetschgenhain"], []) == ["Zwetschgenhain", "zwetschgenhain"]


def test_scan_names_the_file_and_counts_every_occurrence(tmp_path):
    (tmp_path / "a").write_bytes(b"x Zwetschgenhain y zwetschgenhain Zwetschgenhain")
    (tmp_path / "b").write_bytes(b"")
    found = proof.scan([str(tmp_path / n) for n in ("a", "b", "fehlt")], ["Zwetschgenhain", "zwetschgenhain"])
    assert found == {str(tmp_path / "a"): 3}


def line(time, path, sha, question="Wer?", answer="Die Quarkbrotmanufaktur."):
    return {"time": time, "question": question, "answer": answer, "evidence": [{"n": 1, "text": answer}],
            "model": "m", "chunks": [{"path": path, "heading": "Kundenliste", "chunk_index": 0, "sha256": sha,
                                      "flags": []}]}


def test_redact_keeps_count_time_and_hashes_and_nothing_of_the_text(tmp_path):
    log = tmp_path / "audit.jsonl"
    entries = [line("T1", CANARY_PATH, "a" * 64), line("T2", "mail/a.md", "b" * 64, "Mailbox?", "Mit cm."),
               line("T3", "alt/liste.md", "c" * 64)]
    log.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    assert audit.redact(str(log), {"c" * 64}, {CANARY_PATH}) == 2  # by path, and by hash (a moved copy)
    after = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert [e["time"] for e in after] == ["T1", "T2", "T3"]
    assert after[1] == entries[1]
    for e in (after[0], after[2]):
        assert e["question"] == e["answer"] == audit.FORGOTTEN and "evidence" not in e and e["model"] == "m"
        assert e["chunks"][0]["sha256"] in ("a" * 64, "c" * 64) and "heading" not in e["chunks"][0]
    assert "Quarkbrot" not in log.read_text(encoding="utf-8").replace("Mit cm.", "")
    assert audit.redact(str(log), {"c" * 64}, {CANARY_PATH}) == 0  # done is done
    assert "Frage:     [vergessen]" in audit_show.show(str(log), 1)


def test_select_refuses_a_page_still_in_the_wiki_and_an_unknown_one(tmp_path):
    write_wiki(tmp_path, {"kunden/a.md": "# A\n\nText."})
    indexed = {"kunden/a.md": "1", "kunden/b.md": "2", "x.md": "3"}
    assert forget.select(["kunden/b.md"], indexed, tmp_path, set()) == ["kunden/b.md"]
    assert forget.select(["alt.md"], indexed, tmp_path, {"alt.md"}) == ["alt.md"]  # known from the audit log
    with pytest.raises(SystemExit, match="kunden/a.md liegt noch im Wiki – zuerst dort löschen"):
        forget.select(["kunden/"], indexed, tmp_path, set())
    with pytest.raises(SystemExit, match="weder im Index noch im Audit-Log"):
        forget.select(["gibtsnicht.md"], indexed, tmp_path, set())


def test_every_sqlite_connection_deletes_securely(tmp_path):
    conn = sqlite_file.connect(str(tmp_path / "k.db"), create=True)
    assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)


# -- the canary, end to end ------------------------------------------------------------------------
def build(wiki, env, *args):
    return run_script("build_index.py", "--wiki", wiki, *args, env=env)


def ok(result):
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result


@pytest.fixture
def canary(tmp_path, store_env, stores):
    """The small wiki plus the canary page, indexed, asked twice (once about the canary), then the canary's file
    deleted from the wiki. Returns (wiki, env, clean db: the wiki without the canary, built from scratch)."""
    wiki = write_wiki(tmp_path / "wiki", {**SMALL_WIKI, CANARY_PATH: CANARY})
    ok(build(wiki, store_env))
    for question, answer in ((QUESTION, ANSWER), ("Wie starte ich das VPN?", ["VPN-Client starten [1]."])):
        with FakeLlamaServer(answer=answer) as server:
            env = {**store_env, "LLAMA_SERVER_URL": server.url, "RAG_TOP_K": "1"}
            ok(run_script("ask_rag.py", question, env=env))
    assert held(tmp_path)  # the canary is in the files before
    if stores.kind == "postgres":  # its rows written out of the server's buffers into the relation files
        import psycopg
        with psycopg.connect(store_env["RAG_DB"], autocommit=True) as conn:
            conn.execute("ANALYZE")  # as autovacuum may at any time: the planner's samples hold the canary too
            conn.execute("CHECKPOINT")
        assert postgres_left(stores, store_env["RAG_DB"])[2]
    (wiki / CANARY_PATH).unlink()
    clean = stores.new("clean")
    clean_wiki = write_wiki(tmp_path / "clean-wiki", SMALL_WIKI)
    ok(build(clean_wiki, {**store_env, "RAG_DB": clean}))
    return wiki, store_env, clean


def held(folder):
    """{file: canary hits} of every file below `folder`, searched here without the project's code."""
    found = {}
    for path in Path(folder).rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits = sum(data.count(s.encode()) for s in CANARY_STRINGS)
            if hits:
                found[str(path.relative_to(folder))] = hits
    return found


def postgres_left(stores, db):
    """PostgreSQL: canary rows through SQL, and canary bytes in the database's files (base/<oid>/)."""
    rows = stores.query(db, "SELECT count(*) FROM docs WHERE " + " OR ".join(
        ["content || heading || search_body || search_heading || tsv::text LIKE ?"] * len(CANARY_STRINGS)),
        [f"%{s}%" for s in CANARY_STRINGS])[0][0]
    words = stores.query(db, "SELECT count(*) FROM vocab WHERE word IN (" + ",".join("?" * len(CANARY_STRINGS)) + ")",
                         CANARY_STRINGS)[0][0]
    base, oid = stores.query(db, "SELECT current_setting('data_directory'), (SELECT oid FROM pg_database "
                                 "WHERE datname = current_database())")[0]
    return rows, words, held(Path(base) / "base" / str(oid))


def audit_lines(env):
    return [json.loads(x) for x in Path(env["RAG_AUDIT"]).read_text(encoding="utf-8").splitlines()]


def check_forgotten(tmp_path, env, stores, clean, audited):
    """No canary byte anywhere, the audit log as long as before, the other pages as a clean build has them."""
    db = env["RAG_DB"]
    assert held(tmp_path) == {}
    if stores.kind == "postgres":
        assert postgres_left(stores, db) == (0, 0, {})
    lines = audit_lines(env)
    assert len(lines) == audited and lines[0]["question"] == audit.FORGOTTEN and len(lines[0]["chunks"]) == 1
    assert stores.rows(db) == stores.rows(clean)  # the same chunks and vectors: the same ranking
    assert stores.search_rows(db) == stores.search_rows(clean)
    stores.check_consistent(db)


def test_forget_leaves_no_byte_of_the_canary_and_prints_a_receipt(canary, stores, tmp_path):
    wiki, env, clean = canary
    result = ok(build(wiki, env, "--forget", CANARY_PATH))
    assert result.stdout.startswith(f"Vergessen: {CANARY_PATH} · 2 Chunks, 2 Vektoren, "
                                    f"1 Audit-Zeilen, 0 Bewertungen · Prüfung: 0 Treffer für ")
    assert not any(s in result.stdout + result.stderr for s in CANARY_STRINGS)
    check_forgotten(tmp_path, env, stores, clean, audited=2)
    receipt = json.loads(Path(env["RAG_AUDIT"] + ".forget.jsonl").read_text(encoding="utf-8"))
    assert (receipt["paths"], receipt["chunks"], receipt["audit_lines"]) == ([CANARY_PATH], 2, 1)
    assert receipt["check"]["hits"] == {} and receipt["check"]["rows"] == {} and receipt["check"]["needles"] >= 8
    assert audit_lines(env)[1]["question"] == "Wie starte ich das VPN?"  # a line without the canary stays


def test_forget_removes_the_votes_citing_the_page_and_proves_it(canary, stores, tmp_path):
    wiki, env, clean = canary
    canary_line, vpn_line = audit_lines(env)
    ok(run_script("ask_rag.py", "--rate", canary_line["id"], "-1", "Zwetschgenhain fehlt", env=env))
    ok(run_script("ask_rag.py", "--rate", vpn_line["id"], "+1", env=env))
    before = feedback.leftovers(env["RAG_DB"], ["Zwetschgenhain"])
    files = feedback.files(env["RAG_DB"])
    assert before == {"votes": 1} and files  # the proof would see it: in the rows and files
    if stores.kind == "sqlite":
        assert any("feedback" in name for name in held(tmp_path))
    ok(run_script("ask_rag.py", "--report", "--json", "--wiki", wiki, env=env))  # keeps a result
    hard = ("SELECT count(*) FROM kept WHERE key LIKE ?", ("hard:%",))
    assert feedback.Table(env["RAG_DB"]).rows(*hard) == [(1,)]
    result = ok(build(wiki, env, "--forget", CANARY_PATH))
    assert "1 Audit-Zeilen, 1 Bewertungen · Prüfung: 0 Treffer" in result.stdout
    receipt = json.loads(Path(env["RAG_AUDIT"] + ".forget.jsonl").read_text(encoding="utf-8"))
    assert receipt["votes"] == 1
    assert receipt["check"]["hits"] == {} and receipt["check"]["rows"] == {}
    assert receipt["check"]["files"] >= len(files) + 2
    assert [(v["id"], v["vote"]) for v in feedback.votes(env["RAG_DB"])] == [(vpn_line["id"], 1)]
    assert feedback.Table(env["RAG_DB"]).rows("SELECT count(*) FROM kept") == [(0,)]
    check_forgotten(tmp_path, env, stores, clean, audited=2)  # no byte left, in the votes' too
    again = run_script("ask_rag.py", "--rate", canary_line["id"], "-1", env=env)
    assert again.returncode == 1 and "nicht im Audit-Log" in again.stderr  # forgotten: no vote


def test_the_check_finds_the_canary_before_it_is_forgotten(canary, stores):
    index = store.open_store(canary[1]["RAG_DB"])
    try:
        rows, files = index.leftovers(["Zwetschgenhain", "50%_x"]), index.raw_files()
    finally:
        index.close()
    assert rows["docs"] == 2 and set(rows) <= {"docs", "fts", "meta", "vocab"}  # "50%_x" matches nothing
    assert files and any(proof.scan(files, ["Zwetschgenhain", "zwetschgenhain"]).values())


def test_forget_on_a_missing_index_is_one_line_and_creates_nothing(tmp_path, fake_embedding):
    result = build(tmp_path, fake_embedding, "--forget", CANARY_PATH)
    assert result.returncode == 1 and result.stderr.startswith("Fehler: Index ") and "Traceback" not in result.stderr
    assert not os.path.exists(fake_embedding["RAG_DB"])


def test_forget_refuses_a_page_still_in_the_wiki(canary, tmp_path):
    wiki, env, _ = canary
    write_wiki(wiki, {CANARY_PATH: CANARY})
    result = build(wiki, env, "--forget", CANARY_PATH)
    assert result.returncode == 1 and result.stderr.strip().startswith("Fehler: kunden/liste.md liegt noch im Wiki")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("kill_at", ["note", "index", "audit", "scrub"])
def test_sigkill_at_every_step_then_the_same_command_completes_it(canary, stores, tmp_path, kill_at):
    wiki, env, clean = canary
    killed = build(wiki, {**env, forget.KILL_AT: kill_at}, "--forget", "kunden/")
    assert killed.returncode == -9, killed.stderr
    pending = Path(env["RAG_AUDIT"] + ".forget.jsonl.offen")
    assert pending.exists() and oct(pending.stat().st_mode & 0o777) == "0o600"
    assert len(audit_lines(env)) == 2  # nothing lost meanwhile
    ok(build(wiki, env, "--forget", "kunden/"))
    assert not pending.exists()
    check_forgotten(tmp_path, env, stores, clean, audited=2)


def test_a_removed_page_leaves_no_bytes_in_the_sqlite_file_on_the_next_run(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", {**SMALL_WIKI, CANARY_PATH: CANARY})
    ok(build(wiki, fake_embedding))
    (wiki / CANARY_PATH).unlink()
    assert "1 entfernt" in ok(build(wiki, fake_embedding)).stdout
    assert held(tmp_path) == {}  # secure_delete, FTS5 merged, the WAL truncated: without --forget (no audit log)


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)
def test_vacuum_shrinks_the_file_and_keeps_the_rows(canary, tmp_path):
    wiki, env, clean = canary
    ok(build(wiki, env, "--forget", CANARY_PATH, "--vacuum"))
    assert held(tmp_path) == {}
    conn = sqlite3.connect(env["RAG_DB"])
    assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_running_server_stops_showing_the_page_at_once(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", {**SMALL_WIKI, CANARY_PATH: CANARY})
    ok(build(wiki, fake_embedding))
    env = {**os.environ, **fake_embedding, "RAG_SERVE_KEY": ""}
    with FakeLlamaServer(answer=["Siehe [1]."]) as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        before = ask(server.url, QUESTION)
        assert CANARY_PATH in json.dumps(before) and "4711-080815" in json.dumps(before)
        (wiki / CANARY_PATH).unlink()
        ok(build(wiki, fake_embedding, "--forget", CANARY_PATH))  # while the server runs
        assert held(tmp_path) == {}  # its audit line of before is redacted, its connection let the WAL go
        history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "".join(ANSWER)}]
        after = [ask(server.url, "Und wie lautet ihr Passwort?", history=history), ask(server.url, QUESTION)]
    for events in after:
        sources = [e for kind, e in events if kind == "sources"][0]
        assert CANARY_PATH not in json.dumps(sources, ensure_ascii=False)
        assert not any(s in json.dumps(events, ensure_ascii=False) for s in ("Sonnenblumenfeld", "Zwetschgenhain"))


def ask(url, question, **body):
    with requests.post(url + "/api/ask", json={"question": question, **body}, stream=True,
                       timeout=REQUEST) as response:
        assert response.status_code == 200
        return sse_events(response)
