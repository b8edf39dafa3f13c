"""Permissions (issue 30): rules from the wiki, kept by the store, enforced in every candidate query, on both
stores; the users file, keys and proxy headers; no canary byte through any door for a user without the right.
Fakes: conftest's llama-embedding (vectors count mailbox, vpn, drucker, passwort), fake_server.py's llama-server.
The real stack is in test_real_access.py.
"""
import dataclasses
import json
import os

import pytest
import requests

from conftest import assert_one_error_line, run_script, write_wiki
from fake_server import FakeLlamaServer
from rag import core
from rag.audit import log as audit
from rag import store
from rag.doors import common, mcp_server
from rag.store import users
from rag.ingest import access_rules
from rag.store import access, sqlite_lexical
from rag.store.access import EVERYTHING, Reader
from serving import Serving, sse_events
from timeouts import REQUEST

SECRET = {  # canary pages: made-up words and numbers found nowhere else; "drucker" puts them in the vector top
    "personal/.access": "# nur die Personalabteilung\npersonal\n",
    "personal/gehalt.md": "# Gehaltsband Drucker\n\nDas Gehaltsband Zorblax für Drucker-Techniker liegt bei 98765 Euro.\n",
    "personal/abmahnung/fall.md": "# Abmahnung Drucker\n\nDie Abmahnung Quibbelwitz betrifft den Drucker PR-204, Akte 55443.\n",
    "leitung.md": "---\ntitle: Leitung\naccess: [leitung]\n---\n# Drucker-Budget\n\nDas Budget Flarnkraut für Drucker: 31337 Euro.\n",
}
CANARIES = ["Zorblax", "zorblax", "98765", "Quibbelwitz", "quibbelwitz", "55443", "Flarnkraut", "flarnkraut", "31337",
            "gehalt.md", "fall.md", "leitung.md"]  # not in any question: a door may echo the asker's own words


def leaked(text):
    return [c for c in CANARIES if c in text]


@pytest.fixture
def wiki(small_wiki):
    return write_wiki(small_wiki, SECRET)


def build(wiki, env, *args):
    result = run_script("build_index.py", "--wiki", wiki, *args, env=env)
    assert result.returncode == 0, result.stderr
    return result


# -- rules from the wiki --------------------------------------------------------------------------
def test_rules_inherit_and_the_page_wins(tmp_path):
    write_wiki(tmp_path, {"a/.access": "hr\n# Kommentar\nleitung\n", "a/b/c.md": "x", "a/d.md": "---\naccess: [it]\n---\nx",
                          "a/e/.access": "", "a/e/f.md": "x", "g.md": "x", "h.md": "\n---\naccess: []\n---\nx"})
    (tmp_path / "u16.md").write_bytes("---\naccess: [hr]\n---\nx".encode("utf-16"))  # with its byte order mark
    os.mkfifo(tmp_path / "fifo.md")  # pages.py skips it; reading its rule must not block
    rules = access_rules.read_rules(tmp_path, ["a/b/c.md", "a/d.md", "a/e/f.md", "g.md", "h.md", "u16.md", "fifo.md"])
    assert rules == {"a/b/c.md": ("hr", "leitung"), "a/d.md": ("it",), "a/e/f.md": (), "g.md": None, "h.md": (),
                     "u16.md": ("hr",), "fifo.md": None}


def test_a_malformed_rule_stops_the_run_naming_file_and_line(wiki, fake_embedding):
    (wiki / "personal" / ".access").write_text("personal\nHR Abteilung!\n", encoding="utf-8")
    result = run_script("build_index.py", "--wiki", wiki, env=fake_embedding)
    assert_one_error_line(result, "personal/.access", "Zeile 2")
    assert not leaked(result.stderr)


def test_an_unknown_group_is_a_warning(wiki, fake_embedding, tmp_path):
    path = tmp_path / "users.toml"
    users.add_user(str(path), "jana", ["personal"])
    result = build(wiki, fake_embedding, "--users", path)
    assert "Warnung: Gruppe „leitung“" in result.stderr and "personal“" not in result.stderr


# -- the store: every reading method, both stores -------------------------------------------------
def visible(db, reader):
    """Everything a reader can get out of the store's reading methods, as one text."""
    index = store.open_store(db, reader=reader)
    try:
        ids = set(range(1, 40))
        rows = index.sources(ids)
        q = [0.0, 0.0, 1.0, 0.0, 1.0]  # "drucker"
        scan = index.vector_scan(q, 50)
        stage = [[("drucker", False), ("druck", True)]]
        parts = [rows, index.folders(), index.lexical(stage, None), [index.search_text(i) for i in ids],
                 [index.section(r.path, r.heading) for r in index.sources(ids).values()], index.similarities(q, ids),
                 [index.sources([i]) for _, i in scan.ranking]]
        return " ".join(map(str, parts)), scan, index.matching(stage[0]), index.lexical_count(), index.ids_below("personal/")
    finally:
        index.close()


def test_the_store_hides_what_a_reader_may_not_read(wiki, store_env):
    build(wiki, store_env)
    db = store_env["RAG_DB"]
    everything, scan_all, match_all, count_all, below_all = visible(db, EVERYTHING)
    it, scan_it, match_it, count_it, below_it = visible(db, Reader("max", ("it",)))
    hr, _, _, _, below_hr = visible(db, Reader("jana", ("personal",)))
    assert not leaked(it) and below_it == set()
    assert "Zorblax" in hr and "Quibbelwitz" in hr and "Flarnkraut" not in hr and len(below_hr) == 2
    assert all(c in everything for c in ("Zorblax", "Quibbelwitz", "Flarnkraut")) and len(below_all) == 2
    assert len(scan_it.ranking) == count_it == count_all - 3  # all the others still come: no starving top k
    assert match_it == match_all - 3  # document frequencies count only what the reader may see


STAGES = [[[("drucker", False), ("druck", True)]], [[("mailbox", False)], [("quota", False), ("cyradm", False)]],
          [[("vpn", False), ("notebook", False), ("anmel", True), ("drucker", False), ("mailbox", False)]]]


def test_bm25_in_python_is_fts5s_own(wiki, fake_embedding):
    """access.bm25 (a restricted reader's rescoring) against the oracle: FTS5's bm25() over the whole index."""
    build(wiki, fake_embedding)
    index = store.open_store(fake_embedding["RAG_DB"])
    try:
        rows, tokens = index.fts_totals()
        assert rows == index.conn.execute("SELECT COUNT(*) FROM fts").fetchone()[0] == index.lexical_count()
        for groups in STAGES:
            phrases = [p for group in groups for p in group]
            idfs = [access.idf(rows, index.conn.execute(
                        "SELECT COUNT(*) FROM fts WHERE fts MATCH ?",
                        (sqlite_lexical.match_query([[p]]),)).fetchone()[0]) for p in phrases]
            found = index.conn.execute(
                "SELECT -bm25(fts, 2.0, 1.0), heading, body FROM fts WHERE fts MATCH ?",
                (sqlite_lexical.match_query(groups),)).fetchall()
            assert found and all(abs(access.bm25(h, b, phrases, idfs, tokens / rows) - w) < 1e-12 * w
                                 for w, h, b in found)
    finally:
        index.close()


def test_a_restricted_readers_top_k_is_the_top_of_every_match_rescored(wiki, fake_embedding, monkeypatch):
    """own_frequencies fetches a few rows by FTS5's order and stops by a bound; fetching only `limit` the bound decides
    at every limit, and the result is the head of every match rescored."""
    build(wiki, fake_embedding)
    monkeypatch.setattr(sqlite_lexical, "FETCH_FACTOR", 1)
    index = store.open_store(fake_embedding["RAG_DB"], reader=Reader("max", ("it",)))
    try:
        for groups in STAGES:
            every = index.lexical(groups, None)
            assert every == sorted(every, key=lambda row: (-row[0], row[1]))
            assert all(index.lexical(groups, k) == every[:k] for k in range(1, len(every) + 2))
    finally:
        index.close()


def test_hnsw_keeps_searching_until_enough_allowed_chunks_came(wiki, fake_embedding, pg_server):
    env = {**fake_embedding, "RAG_DB": pg_server.database("hnsw")}
    build(wiki, env, "--ann")  # the HNSW index now, not from 50,000 chunks on
    q = [0.0, 0.0, 1.0, 0.0, 1.0]  # "drucker": the three hidden pages are the nearest
    hidden, seen = store.open_store(env["RAG_DB"], reader=Reader("max", ("it",))), store.open_store(env["RAG_DB"])
    try:
        scan, everything = hidden.vector_scan(q, 3, ann=True), seen.vector_scan(q, 3, ann=True)
        paths = {r.path for r in hidden.sources([i for _, i in scan.ranking]).values()}
        top = {r.path for r in seen.sources([i for _, i in everything.ranking]).values()}
    finally:
        hidden.close(), seen.close()
    assert scan.method == "hnsw" and len(scan.ranking) == 3 and not leaked(" ".join(paths))
    assert {"personal/gehalt.md", "leitung.md"} <= top  # without the rule they would have come first


def test_a_changed_rule_needs_no_new_embeddings(wiki, store_env):
    build(wiki, store_env)
    (wiki / "personal" / ".access").write_text("personal\nit\n", encoding="utf-8")
    (wiki / "leitung.md").write_text(SECRET["leitung.md"].replace("access: [leitung]", "access: [leitung, it]"))
    again = build(wiki, store_env)
    assert "0 eingebettet" in again.stdout  # the page's text is the same: its vectors are reused
    it, *_ = visible(store_env["RAG_DB"], Reader("max", ("it",)))
    assert "Zorblax" in it and "Flarnkraut" in it
    (wiki / "personal" / ".access").unlink()
    (wiki / "personal" / "abmahnung" / ".access").write_text("", encoding="utf-8")  # nobody but a reader of all
    build(wiki, store_env)
    it, *_ = visible(store_env["RAG_DB"], Reader("max", ("it",)))
    assert "Zorblax" in it and "Quibbelwitz" not in it


# -- users file, keys, proxy ----------------------------------------------------------------------
def test_add_user_prints_the_key_once_as_the_last_line_and_stores_only_its_hash(tmp_path, fake_embedding):
    path = tmp_path / "users.toml"
    result = run_script("ask_rag.py", "--users", path, "--add-user", "jana", "--groups", "personal,leitung",
                        env=fake_embedding)
    key = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0 and len(key) >= 40 and key not in path.read_text()
    table = users.load(str(path))
    assert table["jana"].groups == ("leitung", "personal")
    assert users.identify({"Authorization": f"Bearer {key}"}, "127.0.0.1", users.Auth(table)) == ("jana", table["jana"].groups)
    again = run_script("ask_rag.py", "--users", path, "--add-user", "jana", "--groups", "x", env=fake_embedding)
    assert_one_error_line(again, "jana", "schon")


@pytest.mark.parametrize("text, words", [
    ('[users.jana]\ngroups = [personal]\n', ["users.toml", "Zeile 2", "kein gültiges TOML"]),
    ('[users.jana]\ngroups = ["personal"\n', ["users.toml", "Zeile 3"]),
    ('\n\n[users.jana]\ngroups = "personal"\nkey = "x"\n', ["users.toml", "Zeile 3", "groups"]),
    ('[users.jana]\ngroups = ["personal"]\nkey = "klartext"\n', ["users.toml", "Zeile 1", "key"]),
])
def test_a_malformed_users_file_is_one_line_and_the_server_does_not_start(tmp_path, fake_embedding, text, words):
    path = tmp_path / "users.toml"
    path.write_text(text, encoding="utf-8")
    result = run_script("ask_rag.py", "--serve", "--port", "0", "--users", path, env=fake_embedding)
    assert_one_error_line(result, *words)


def test_every_entry_is_checked_whichever_key_is_tried(tmp_path, monkeypatch):
    table = {name: users.User((name,), users.hash_key(name + "-key", cost=(16, 1, 1))) for name in ("a", "b", "c")}
    calls = []
    real = users.key_matches
    monkeypatch.setattr(users, "key_matches", lambda given, stored: calls.append(stored) or real(given, stored))
    auth = users.Auth(table)
    for given in ("a-key", "c-key", "falsch", ""):
        calls.clear()
        users.identify({"Authorization": f"Bearer {given}"}, "127.0.0.1", auth)
        assert len(calls) == 3  # no early exit: the work is the same for every user and for a wrong key
    assert users.identify({"Authorization": "Bearer falsch"}, "127.0.0.1", auth) is None
    assert users.identify({"Authorization": "Bearer geheim"}, "::1", users.Auth(table, "geheim")) == EVERYTHING


def test_proxy_headers_count_only_when_trusted_and_only_from_the_proxy():
    headers = {"X-Forwarded-User": "jana", "X-Forwarded-Groups": "personal, leitung"}
    table = {"jana": users.User(("extra",), users.hash_key("k", cost=(16, 1, 1)))}
    assert users.identify(headers, "127.0.0.1", users.Auth(table)) is None  # off by default: a key is needed
    trusted = users.Auth(table, None, True, ("10.0.0.5",))
    assert users.identify(headers, "127.0.0.1", trusted) == ("jana", ("extra", "leitung", "personal"))
    assert users.identify(headers, "10.0.0.5", trusted) == ("jana", ("extra", "leitung", "personal"))
    assert users.identify(headers, "10.0.0.6", trusted) is None
    assert users.identify({"Remote-User": "max", "Remote-Groups": "it"}, "::1", trusted) == ("max", ("it",))


# -- every door, as a user with and without the right, on both stores --------------------------
@pytest.fixture
def served(wiki, store_env, tmp_path):
    build(wiki, store_env)
    path = tmp_path / "users.toml"
    keys = {name: users.add_user(str(path), name, groups) for name, groups in
            (("jana", ["personal"]), ("max", ["it"]))}
    return {**os.environ, **store_env, "RAG_SERVE_KEY": "", "RAG_USERS": str(path)}, keys, path


ATTACKS = ["Wie hoch ist das Gehaltsband der Drucker-Techniker?", "Gibt es eine Abmahnung wegen des Druckers?",
           "Welches Budget haben die Drucker?", "Drucker", "Gehaltsband", "Was verdienen Techniker im Jahr?",
           "Welches Aktenzeichen hat die Abmahnung zum PR-204?", "Budget für Drucker in Euro",
           "Personalakte Drucker-Techniker", "Wer hat eine Abmahnung bekommen?", "Gehaltsbänder aller Abteilungen",
           "Leitung Budget Drucker"]
SEARCH_PHRASES = '["Gehaltsband Techniker", "Abmahnung Akte", "Budget Euro"]'  # an expansion aimed at the canaries


def page_and_api(server, auth, questions):
    """Every answer of the page (plain, folder filter personal/, follow-up) and the API (plain, streamed)."""
    history = [{"role": "user", "content": questions[0]}, {"role": "assistant", "content": "Dazu?"}]
    got = [requests.get(server.url + p, headers=auth, timeout=REQUEST)
           for p in ("/api/folders", "/v1/models")]
    for question in questions:
        for body in ({"question": question}, {"question": question, "under": "personal/"},
                     {"question": "Und wie viel genau?", "history": history}):
            got.append(requests.post(server.url + "/api/ask", json=body, headers=auth,
                                     timeout=REQUEST))
        for stream in (False, True):
            got.append(requests.post(server.url + "/v1/chat/completions", headers=auth,
                                     timeout=REQUEST, json={
                "model": "wiki/personal", "stream": stream, "messages": [{"role": "user", "content": question}]}))
    return got


def test_no_canary_byte_through_any_door_without_the_right(served):
    env, keys, _ = served
    seen, asked = [], 0
    with FakeLlamaServer(answer=["Siehe", " [1]."]) as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        for who in ("max", "jana"):
            got = page_and_api(server, {"Authorization": f"Bearer {keys[who]}"}, ATTACKS if who == "max" else ATTACKS[:2])
            asked += len(got) - 2 if who == "max" else 0
            seen.append(" ".join(f"{r.status_code} {dict(r.headers)} {r.text}" for r in got))
            seen.append(json.dumps(fake.requests, ensure_ascii=False))  # what the model was shown
            fake.requests.clear()
        wrong = requests.post(server.url + "/api/ask", json={"question": ATTACKS[0]},
                              timeout=REQUEST, headers={"Authorization": "Bearer falsch"})
    assert asked == 60 and leaked(seen[0]) == [] and leaked(seen[1]) == []  # max: no response, header or prompt
    assert '{"folders": ["mail/", "netzwerk/"]}' in seen[0] and "wiki/personal" not in seen[0].split("/v1")[0]
    assert "Zorblax" in seen[2] and "98765" in seen[2] and "personal/" in seen[2]  # jana gets her pages
    assert "Flarnkraut" not in seen[2] + seen[3]  # leitung.md: neither of them
    assert wrong.status_code == 401 and "Schlüssel" in wrong.json()["error"] and not leaked(wrong.text)


@pytest.mark.parametrize("method, replies", [("phrases", [SEARCH_PHRASES]), ("choose", ["[1, 2, 3]"]), ("prf", None)])
def test_expansions_search_only_the_readers_pages(served, method, replies):
    env, keys, _ = served
    with FakeLlamaServer(answer=["Siehe", " [1]."], replies=replies or ["[]"]) as fake, \
            Serving({**env, "LLAMA_SERVER_URL": fake.url}, "--expand", "--expand-method", method) as server:
        got = [requests.post(server.url + "/api/ask", json={"question": q}, timeout=REQUEST,
                             headers={"Authorization": f"Bearer {keys['max']}"}) for q in ATTACKS]
        shown = json.dumps(fake.requests, ensure_ascii=False)
    text = " ".join(r.text for r in got)
    assert all(r.status_code == 200 for r in got) and leaked(text + shown) == []
    assert '"searched"' in text or method == "prf"  # the expansion ran


def test_terminal_as_and_mcp_see_only_the_readers_pages(served):
    env, _, path = served
    for question in ATTACKS:
        max_ = run_script("ask_rag.py", "--as", "max", "--retrieve-only", "--json", "--explain", question, env=env)
        assert max_.returncode == 0 and not leaked(max_.stdout + max_.stderr), max_.stdout
    for question in ATTACKS[:3]:
        jana = run_script("ask_rag.py", "--as", "jana", "--retrieve-only", "--json", question, env=env)
        assert "gehalt.md" in jana.stdout or "fall.md" in jana.stdout or question == ATTACKS[2], jana.stdout
    unknown = run_script("ask_rag.py", "--as", "niemand", "Frage?", env=env)
    assert_one_error_line(unknown, "niemand", "Benutzerdatei")
    settings = core.Settings(db=env["RAG_DB"], embedding_bin=env["LLAMA_EMBEDDING"], model=env["RAG_EMBED_MODEL"],
                             reader=Reader("max", ("it",)), audit="")
    listed = mcp_server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, settings)
    found = [mcp_server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "search_wiki", "arguments": {"query": q, "k": 20, **folder}}}, settings)
        for q in ATTACKS for folder in ({}, {"folder": "personal/"})]
    with FakeLlamaServer(answer=["Siehe", " [1]."]) as fake:
        answered = [mcp_server.handle({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "ask_wiki", "arguments": {"question": q}}}, dataclasses.replace(settings, server=fake.url))
            for q in ATTACKS]
        shown = json.dumps(fake.requests, ensure_ascii=False)
    assert not leaked(json.dumps([listed, found, answered], ensure_ascii=False) + shown)
    assert all(not a["result"].get("isError") for a in answered)
    assert common.folders(settings) == ["mail/", "netzwerk/"]


# -- the audit log, for a works council -----------------------------------------------------------
def test_the_audit_line_names_a_pseudonym_and_can_keep_no_text(served, tmp_path):
    env, _, _ = served
    log = tmp_path / "audit.jsonl"
    old = {"time": "2020-01-01T00:00:00+00:00", "question": "alt", "chunks": []}
    log.write_text(json.dumps(old) + "\n", encoding="utf-8")
    env = {**env, "RAG_AUDIT": str(log), "RAG_AUDIT_SECRET": "nur-die-admin"}
    with FakeLlamaServer(answer=["Der Drucker heißt PR-204", " [1]."]) as fake:
        for extra in ((), ("--audit-no-text",)):
            result = run_script("ask_rag.py", "--as", "max", "--audit-days", "30", *extra, "Wie heißt der Drucker?",
                                env={**env, "LLAMA_SERVER_URL": fake.url})
            assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2  # the 2020 line is gone (--audit-days 30)
    assert lines[0]["user"] == lines[1]["user"] == audit.pseudonym("max", "nur-die-admin") != audit.pseudonym("max", "x")
    assert "max" not in json.dumps(lines) and lines[0]["question"] == "Wie heißt der Drucker?"
    assert lines[1]["question"] is None and lines[1]["answer"] is None and "Drucker?" not in json.dumps(lines[1])
    assert lines[1]["question_sha256"] == audit.sha256("Wie heißt der Drucker?") and lines[1]["citations"]


# -- what the shared statistics tell: measured -----------------------------------------------------
PROBES = ["Zorblax", "Zorblax Drucker", "Drucker Mailbox", "Mailbox Quota Drucker", "Zorblaxgehalt", "Drucker Toner",
          "Toner Mailbox", "Quota Drucker"]
HIDDEN_PAGE = {  # the same length of search text: only which words it holds differs ("drucker" is on open pages too)
    "with": "# Akte\n\nZorblax Drucker Drucker Drucker Mailbox Quota Toner Zorblax.\n",
    "without": "# Akte\n\nZorblax Tisch Tisch Tisch Mailbox Quota Toner Zorblax Stuhl Bank Brett.\n"}


def test_shared_statistics_do_not_tell_a_forbidden_word(small_wiki, store_env, stores, tmp_path):
    """Two indexes that differ only in whether a hidden page holds "drucker": a reader without the right gets
    byte for byte the same --json --explain output (scores, ranks, coverage, search text) for every probe.
    Before BM25 counted the reader's own document frequencies, 6 of 16 probes differed (docs/rechte.md)."""
    path = tmp_path / "users.toml"
    users.add_user(str(path), "max", ["it"])
    write_wiki(small_wiki, {"drucker2.md": "# Drucker Toner\n\nToner für den Drucker wechseln, Mailbox für Störungen.\n",
                            "mail/quota.md": "# Quota Mailbox\n\nDie Quota der Mailbox erhöhen: Drucker egal.\n",
                            "personal/.access": "personal\n"})
    outputs = {}
    for name, text in HIDDEN_PAGE.items():
        write_wiki(small_wiki, {"personal/akte.md": text})
        env = {**store_env, "RAG_DB": stores.new(name), "RAG_USERS": str(path)}
        build(small_wiki, env)
        for mode, question in [("lexical", q) for q in PROBES] + [("hybrid", q) for q in PROBES[:3]]:
            result = run_script("ask_rag.py", "--as", "max", "--retrieve-only", "--json", "--explain", "--mode", mode,
                                question, env=env)
            shown = json.loads(result.stdout)
            shown.pop("timings"), shown.pop("id")  # each answer has its own id
            outputs.setdefault((mode, question), []).append(shown)
    differ = [key for key, (a, b) in outputs.items() if a != b]
    assert differ == [] and len(outputs) == 11
    assert all("akte" not in json.dumps(a) for a, _ in outputs.values())
    assert outputs[("lexical", "Zorblaxgehalt")][0]["query_text"].split()[0] == "zorblaxgehalt"  # not split: no vocab
