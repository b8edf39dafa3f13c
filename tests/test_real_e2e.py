"""End to end against the real llama-embedding, the real llama-server and the real GGUF model.

No fakes here. A few pages of the sample wiki are indexed once per module (about 10 s on two
cores); the server is started on a free 127.0.0.1 port and always stopped.
"""
import json
import re
import shutil
import sqlite3

import pytest

from conftest import ROOT, answer_model, load_json, run_script
from rag import config
from rag.answer import prompt as answer
from rag.models.server_process import ServerProcess

PAGES = ["mail/cyrus-imap/mailbox-anlegen.md", "mail/cyrus-imap/mailbox-quota.md",
         "mail/cyrus-imap/shared-folders.md", "netzwerk/vpn-linux.md", "arbeitsplatz/drucker.md",
         "vertraege/rahmenvertrag-elbe-systemhaus.md", "sicherheit/phishing-erkennen.md"]
QUESTION = "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"


@pytest.fixture(scope="module")
def indexed(real, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    for rel in PAGES:
        (tmp / "wiki" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "wiki" / rel, tmp / "wiki" / rel)
    env = {"LLAMA_EMBEDDING": real["embedding"], "RAG_EMBED_MODEL": real["model"],
           "RAG_DB": str(tmp / "knowledge.db"), "RAG_WIKI": str(tmp / "wiki"), "RAG_AUDIT": str(tmp / "audit.jsonl")}
    result = run_script("build_index.py", env=env)
    assert result.returncode == 0, result.stderr
    return tmp, env, result


def test_real_index_stores_one_valid_vector_per_chunk(indexed):
    tmp, _, result = indexed
    assert "7 neu" in result.stdout
    conn = sqlite3.connect(tmp / "knowledge.db")
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta["embed_model"] == "multilingual-e5-small-q4_0.gguf" and meta["dim"] == "384" and meta["pooling"] == "mean"
    assert (meta["query_prefix"], meta["passage_prefix"]) == ("query: ", "passage: ")  # e5 was trained with them
    from rag.store import vectors as packed
    rows = [(e, packed.read_vectors(conn, [i])[i][0]) for i, e in conn.execute("SELECT id, embedding FROM docs")]
    assert len(rows) >= 14
    vectors = [json.loads(e) for e, _ in rows]
    assert all(len(v) == 384 and len(p) == 384 for v, (_, p) in zip(vectors, rows))
    assert all(abs(a - b) < 1e-6 for v, (_, p) in zip(vectors, rows) for a, b in zip(v, p))  # one vector, two homes
    assert len({tuple(round(x, 5) for x in v) for v in vectors}) == len(vectors), "identical vectors: pooling bug"
    assert all(abs(sum(x * x for x in v) - 1) < 1e-3 for v in vectors)


def test_real_index_flags_the_phishing_example(indexed):
    _, _, result = indexed
    assert "sicherheit/phishing-erkennen.md" in result.stderr and "injection:ignore-previous" in result.stderr
    assert "sk-test-1234567890abcdef1234" not in result.stderr  # the key is masked


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_real_retrieval_finds_the_cyradm_page(indexed, mode):
    _, env, _ = indexed
    result = run_script("ask_rag.py", "--retrieve-only", "--json", "--mode", mode, QUESTION, env=env)
    assert result.returncode == 0, result.stderr
    out = load_json(result.stdout)
    assert out["answer"] is None and out["mode"] == mode
    paths = [s["path"] for s in out["sources"]]
    if mode == "vector":  # vector alone: among the candidates (e5 ranks hr-it/onboarding.md first on all of wiki/)
        assert "mail/cyrus-imap/mailbox-anlegen.md" in paths
    else:
        assert paths[0] == "mail/cyrus-imap/mailbox-anlegen.md"


def test_real_server_answers_with_sources_and_citation_check(indexed, real, tmp_path):
    _, env, _ = indexed
    with ServerProcess(model=config.default_llm_model(), binary=real["server"],  # real["model"] embeds only
                       log_path=str(tmp_path / "server.log")) as server:
        result = run_script("ask_rag.py", "--json", QUESTION, env={**env, "LLAMA_SERVER_URL": server.url})
        plain = run_script("ask_rag.py", QUESTION, env={**env, "LLAMA_SERVER_URL": server.url})
    assert result.returncode == 0, result.stderr
    out = load_json(result.stdout)
    assert out["llm_called"] is True
    assert out["answer"] and out["answer"].strip()
    assert out["sources"][0]["path"] == "mail/cyrus-imap/mailbox-anlegen.md"
    citations = out["citations"]
    assert set(citations) == {"cited", "valid", "unknown"}
    assert sorted(citations["valid"] + citations["unknown"]) == citations["cited"]
    assert all(1 <= c <= len(out["sources"]) for c in citations["valid"])
    assert out["timings"]["first_token_s"] > 0
    assert plain.returncode == 0, plain.stderr
    assert "Quellen:" in plain.stdout and "mail/cyrus-imap/mailbox-anlegen.md" in plain.stdout
    assert "Zitate:" in plain.stdout
    audit = [json.loads(line) for line in open(env["RAG_AUDIT"], encoding="utf-8")]
    assert audit[-1]["question"] == QUESTION and audit[-1]["chunks"] and audit[-1]["prompt_sha256"]


CONTRACT = "vertraege/rahmenvertrag-elbe-systemhaus.md"
FACT_QUESTION = "Mit welcher Frist kann der Rahmenvertrag mit der Elbe Systemhaus gekündigt werden?"  # § 7: 3 Monate
# Not in the wiki and far from it: the relevance floor answers, the model is not asked. (Questions close to
# the wiki, e.g. the hotline's number, which § 9 does not give, the 1.5B model answers anyway: 0 of 16
# out-of-wiki questions refused by the model in evaluate.py --answers, so there is no such test here.)
UNKNOWN_QUESTION = "Wie koche ich eine Spaghetti Carbonara?"


@pytest.fixture(scope="module")
def answer_server(real, tmp_path_factory):
    """One llama-server with the default answer model (scripts/setup_llama.py) for the answer tests."""
    model = answer_model()
    log = tmp_path_factory.mktemp("answer-server") / "server.log"
    with ServerProcess(model=model, binary=real["server"], log_path=str(log)) as server:
        yield server


def test_real_answer_model_states_the_fact_and_cites_its_source(indexed, answer_server):
    _, env, _ = indexed
    result = run_script("ask_rag.py", "--json", FACT_QUESTION, env={**env, "LLAMA_SERVER_URL": answer_server.url})
    assert result.returncode == 0, result.stderr
    out = load_json(result.stdout)
    assert out["llm_called"] is True
    assert re.search(r"\b(3|drei) Monat", out["answer"]), out["answer"]  # Gemma 270M said "14 Tage" here
    assert out["citations"]["valid"] and not out["citations"]["unknown"], out["answer"]
    assert CONTRACT in [out["sources"][n - 1]["path"] for n in out["citations"]["valid"]]


def test_real_far_question_is_refused_without_asking_the_model(indexed, answer_server):
    _, env, _ = indexed
    result = run_script("ask_rag.py", "--json", UNKNOWN_QUESTION, env={**env, "LLAMA_SERVER_URL": answer_server.url})
    assert result.returncode == 0, result.stderr
    out = load_json(result.stdout)
    assert out["llm_called"] is False and out["answer"] == answer.NO_INFO


LAYPERSON = ("Hallo zusammen, mein Mailprogramm meckert seit heute früh, dass mein Postfach fast voll ist. "
             "Wie bekomme ich mehr Platz? Danke, Birgit")


def test_real_expansion_and_rewrite_are_the_same_every_time(indexed, answer_server):
    """temperature 0 and a fixed seed (rag/models/llm.py): the same question gives the same phrases and the
    same standalone follow-up on the same model; both parse (JSON schema), neither is empty."""
    from rag.search import expand
    _, env, _ = indexed
    runs = []
    for _ in range(2):
        result = run_script("ask_rag.py", "--retrieve-only", "--expand", "--json", LAYPERSON,
                            env={**env, "LLAMA_SERVER_URL": answer_server.url})
        assert result.returncode == 0 and result.stderr == "", result.stderr
        runs.append(load_json(result.stdout)["searched"])
    assert runs[0]["expansions"] and runs[0]["warning"] is None
    assert runs[0]["expansions"] == runs[1]["expansions"]
    ask = expand.asker(answer_server.url)
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "Mit cm [2]."}]
    rewritten = [expand.prepare("Und wie lösche ich sie wieder?", history, ask=ask) for _ in range(2)]
    assert rewritten[0].warning is None and rewritten[0].question.strip()
    assert rewritten[0].question == rewritten[1].question and rewritten[0].expansions == rewritten[1].expansions


def test_real_server_down_is_one_line(indexed):
    _, env, _ = indexed
    from rag.models.server_process import free_port
    result = run_script("ask_rag.py", QUESTION, env={**env, "LLAMA_SERVER_URL": f"http://127.0.0.1:{free_port()}"})
    assert result.returncode == 1
    assert "nicht erreichbar" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_real_server_embeddings_rank_like_the_binary(indexed, real, tmp_path):
    _, env, _ = indexed
    binary = run_script("ask_rag.py", "--retrieve-only", "--json", QUESTION, env=env)
    with ServerProcess(model=real["model"], binary=real["server"], embeddings=True,
                       log_path=str(tmp_path / "server.log")) as server:
        served = run_script("ask_rag.py", "--retrieve-only", "--json", "--embed-via", "server", QUESTION,
                            env={**env, "LLAMA_SERVER_URL": server.url})
    assert binary.returncode == 0 and served.returncode == 0, served.stderr
    a, b = load_json(binary.stdout), load_json(served.stdout)
    assert [(s["path"], s["chunk_index"]) for s in a["sources"]] == [(s["path"], s["chunk_index"]) for s in b["sources"]]
    assert abs(a["best_cosine"] - b["best_cosine"]) < 1e-3


def test_real_server_without_embeddings_is_one_line(indexed, real, tmp_path):
    _, env, _ = indexed  # a chat server (the answer model); llama-server aborts on e5 without --embeddings
    with ServerProcess(model=config.default_llm_model(), binary=real["server"],
                       log_path=str(tmp_path / "server.log")) as server:
        result = run_script("ask_rag.py", "--retrieve-only", "--embed-via", "server", QUESTION,
                            env={**env, "LLAMA_SERVER_URL": server.url})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "--embeddings" in result.stderr
