"""Votes on answers (rag/audit/feedback.py) at every door: the terminal's --rate, POST /v1/feedback,
MCP's rate_answer; the answer's id in every answer; --audit-days on votes. Tests with `stores` run
against SQLite and against PostgreSQL (conftest.py). The walk of a new user through --serve, with
the report, is in tests/test_report.py; --forget of votes in tests/test_forget.py.
"""
import json
import os
from pathlib import Path

import pytest
import requests

from conftest import run_script
from fake_server import FakeLlamaServer
from rag import core
from rag.audit import log as audit
from rag.audit import feedback
from rag.doors import mcp_server
from serving import Serving

ANSWER = ["Die Mailbox bekommt", " 2 GB [1]."]
QUESTION = "Wie groß ist die Quota einer Mailbox?"


def ok(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def entry(answer_id="a-0123456789abcdef", user=None, paths=("a.md", "b.md"), valid=(2,), **more):
    """An audit line as rag/audit/log.py writes it, small."""
    return {"id": answer_id, "time": "2026-01-01T00:00:00+00:00", "question": "Wie?",
            "answer": "So [2].", "user": user, "citations": {"valid": list(valid)},
            "chunks": [{"path": p, "heading": p.upper(), "sha256": "00"} for p in paths], **more}


# -- units ------------------------------------------------------------------------------------
def test_find_searches_the_log_from_its_end(tmp_path):
    log = tmp_path / "audit.jsonl"
    lines = [entry(f"a-{n:016x}", question="x" * (n * 7)) for n in range(30)]
    lines[12] = audit.redacted(lines[12], set(), {"a.md"}, "T")  # forgotten: its id stays, no vote
    text = "".join(json.dumps(e, sort_keys=True) + "\n" for e in lines) + "kein JSON\n"
    log.write_text(text, encoding="utf-8")
    for n in (0, 1, 17, 29):
        assert feedback.find(str(log), f"a-{n:016x}")["question"] == "x" * (n * 7)
    assert feedback.find(str(log), f"a-{12:016x}") is None
    assert feedback.find(str(log), "a-ffffffffffffffff") is None
    assert feedback.find(str(tmp_path / "fehlt.jsonl"), "a-1") is None
    (tmp_path / "leer.jsonl").write_text("")
    assert feedback.find(str(tmp_path / "leer.jsonl"), "a-1") is None
    quoted = entry("a-quoted", question='Was heißt "id": "a-0000000000000005"?')
    log.write_text(json.dumps(entry(f"a-{5:016x}")) + "\n" + json.dumps(quoted) + "\n", encoding="utf-8")
    assert feedback.find(str(log), f"a-{5:016x}")["question"] == "Wie?"  # not the quoting line


def test_cited_is_the_valid_citations_or_every_source():
    a, b = {"path": "a.md", "heading": "A.MD"}, {"path": "b.md", "heading": "B.MD"}
    assert feedback.cited(entry()) == [b]
    assert feedback.cited(entry(valid=())) == [a, b]  # a refusal cites nothing: what it was shown
    assert feedback.cited(entry(valid=(9,), paths=("a.md", "a.md"))) == [a]


@pytest.mark.parametrize("vote, comment, message", [
    (2, "", "vote muss +1"), (True, "", "vote muss +1"), ("gut", "", "vote muss +1"),
    (None, "", "vote muss"), (1, 5, "comment muss Text"), (-1, "x" * 2001, "länger als 2000")])
def test_a_bad_vote_is_one_german_line(vote, comment, message):
    with pytest.raises(feedback.FeedbackError) as caught:
        feedback.check(vote, comment)
    assert message in str(caught.value) and caught.value.status == 400


def test_only_the_asker_may_vote_and_an_unknown_id_is_404(tmp_path):
    db = str(tmp_path / "knowledge.db")
    with pytest.raises(feedback.FeedbackError) as unknown:
        feedback.rate(db, None, 1)
    with pytest.raises(feedback.FeedbackError) as other:
        feedback.rate(db, entry(user="p-jana"), 1, voter="p-tom")
    assert (unknown.value.status, other.value.status) == (404, 403)
    assert feedback.votes(db) == []  # nothing written, no file made
    row = feedback.rate(db, entry(user="p-jana"), -1, "fehlt", voter="p-jana")
    assert row["cited"] == [{"path": "b.md", "heading": "B.MD"}]
    assert Path(feedback.file_for(db)).name == "knowledge.feedback.db"


# -- both stores ------------------------------------------------------------------------------
def test_a_second_vote_replaces_the_first_and_audit_days_drops_old_votes(stores):
    db = stores.new()
    feedback.rate(db, entry("a-1"), 1)
    feedback.rate(db, entry("a-1"), -1, "doch nicht")
    feedback.rate(db, entry("a-2"), 1)
    found = sorted(feedback.votes(db), key=lambda v: v["id"])
    assert [(v["id"], v["vote"], v["comment"]) for v in found] == [("a-1", -1, "doch nicht"),
                                                                   ("a-2", 1, "")]
    table = feedback.Table(db)
    table.write(("UPDATE votes SET voted_at = ? WHERE id = ?", (feedback.days_ago(40), "a-2")))
    table.close()
    assert [v["id"] for v in feedback.votes(db, since=feedback.days_ago(30))] == ["a-1"]
    feedback.rate(db, entry("a-3"), 1, keep_days=30)  # --audit-days 30: older votes go, as lines do
    assert sorted(v["id"] for v in feedback.votes(db)) == ["a-1", "a-3"]
    assert feedback.forget(db, ["b.md"]) == 2 and feedback.votes(db) == []


def asked(env, *args):
    """One question through the terminal with --json; returns its result."""
    with FakeLlamaServer(answer=ANSWER) as fake:
        env = {**env, "LLAMA_SERVER_URL": fake.url}
        result = ok(run_script("ask_rag.py", "--json", *args, QUESTION, env=env))
    return json.loads(result.stdout)


def test_every_answer_has_an_id_and_rate_stores_the_vote(stores, store_env, small_wiki):
    ok(run_script("build_index.py", "--wiki", small_wiki, env=store_env))
    first, second = asked(store_env), asked(store_env)
    assert first["id"].startswith("a-") and len(first["id"]) == 18 and first["id"] != second["id"]
    lines = [json.loads(x) for x in Path(store_env["RAG_AUDIT"]).read_text("utf-8").splitlines()]
    assert [x["id"] for x in lines] == [first["id"], second["id"]]
    comment = "Die Quota ist 5 GB, Tel. 030 23125123"
    result = ok(run_script("ask_rag.py", "--rate", first["id"], "-1", comment, env=store_env))
    assert result.stdout.startswith(f"Bewertung gespeichert: {first['id']} 👎 (zitiert: "
                                    f"mail/mailbox-anlegen.md")
    [vote] = feedback.votes(store_env["RAG_DB"])
    assert vote["comment"] == "Die Quota ist 5 GB, Tel. [TELEFON 1]"  # masked as the audit log does
    assert vote["cited"] == feedback.cited(lines[0])
    assert vote["cited"][0]["path"] == "mail/mailbox-anlegen.md"
    unknown = run_script("ask_rag.py", "--rate", "a-ffffffffffffffff", "+1", env=store_env)
    bad = run_script("ask_rag.py", "--rate", first["id"], "gut", env=store_env)
    short = run_script("ask_rag.py", "--rate", first["id"], env=store_env)
    for result, code, words in ((unknown, 1, "nicht im Audit-Log"), (bad, 1, "+1"),
                                (short, 2, "--rate braucht")):
        assert result.returncode == code and "Traceback" not in result.stderr
        assert result.stderr.startswith("Fehler: ") and words in result.stderr
        assert result.stderr.count("\n") == 1


def test_the_terminal_names_the_id_to_rate_after_the_answer(fake_embedding, small_wiki):
    ok(run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding))
    with FakeLlamaServer(answer=ANSWER) as fake:
        env = {**fake_embedding, "LLAMA_SERVER_URL": fake.url}
        shown = ok(run_script("ask_rag.py", QUESTION, env=env)).stdout.splitlines()[-1]
        quiet = ok(run_script("ask_rag.py", "--no-audit", QUESTION, env=env)).stdout
    answer_id = json.loads(Path(fake_embedding["RAG_AUDIT"]).read_text(encoding="utf-8"))["id"]
    assert shown == (f"Antwort-Id: {answer_id} · bewerten: python3 ask_rag.py --rate {answer_id} "
                     f'+1 (oder -1 "Kommentar")')
    assert "Antwort-Id" not in quiet  # no audit line: nothing to rate


def test_post_v1_feedback_and_the_mcp_tool(fake_embedding, small_wiki):
    ok(run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding))
    env = {**os.environ, **fake_embedding, "RAG_SERVE_KEY": ""}
    with FakeLlamaServer(answer=ANSWER) as fake, \
            Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        reply = requests.post(server.url + "/v1/chat/completions", timeout=30,
                              json={"messages": [{"role": "user", "content": QUESTION}]}).json()
        answer_id = reply["rag"]["id"]

        def post(body):
            return requests.post(server.url + "/v1/feedback", json=body, timeout=30)
        stored = post({"id": answer_id, "vote": -1, "comment": "<script>x</script> fehlt"})
        unknown = post({"id": "a-ffffffffffffffff", "vote": 1})
        bad = post({"id": answer_id, "vote": 0})
        empty = requests.post(server.url + "/v1/feedback", data="", timeout=30)
    assert stored.status_code == 200 and stored.json() == {
        "id": answer_id, "vote": -1, "comment": "<script>x</script> fehlt", "stored": True}
    assert unknown.status_code == 404 and "nicht im Audit-Log" in unknown.json()["error"]["message"]
    assert bad.status_code == 400 and "+1" in bad.json()["error"]["message"]
    assert empty.status_code == 400
    settings = core.Settings(db=fake_embedding["RAG_DB"], audit=fake_embedding["RAG_AUDIT"])
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "rate_answer", "arguments": {"id": answer_id, "vote": 1}}}
    assert mcp_server.handle(call, settings)["result"]["structuredContent"]["vote"] == 1
    call["params"]["arguments"]["id"] = "a-nope"
    failed = mcp_server.handle(call, settings)["result"]
    assert failed["isError"] and failed["content"][0]["text"].startswith("Fehler: diese Antwort-Id")
    assert "rate_answer" in [t["name"] for t in mcp_server.tools(settings)]
    assert [v["vote"] for v in feedback.votes(fake_embedding["RAG_DB"])] == [1]
