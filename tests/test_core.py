"""rag/core.py, the pipeline every front door calls: its events, its result, its errors.

The terminal, the web page, the OpenAI-compatible API and the MCP server only turn these events
into their own formats, so what is asserted here holds for all of them.
"""
import json

import pytest

from conftest import run_script
from fake_server import GEMMA_TEMPLATE, FakeLlamaServer
from rag import core

QUESTION = "Wie lege ich eine Mailbox an?"


@pytest.fixture
def settings(fake_embedding, small_wiki, monkeypatch):
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    for key, value in fake_embedding.items():
        monkeypatch.setenv(key, value)
    return core.Settings(db=fake_embedding["RAG_DB"], model=fake_embedding["RAG_EMBED_MODEL"],
                         embedding_bin=fake_embedding["LLAMA_EMBEDDING"], audit=fake_embedding["RAG_AUDIT"])


def test_events_come_in_pipeline_order_and_end_with_the_answer(settings):
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Mit cm", " [1]", "."]) as server:
        settings.server = server.url
        events = list(core.ask(QUESTION, settings))
    kinds = [e.kind for e in events]
    assert kinds == ["sources", "prompt", "piece", "piece", "piece", "checks", "done"]
    done = events[-1].data
    assert "".join(e.data for e in events if e.kind == "piece") == done.text == "Mit cm [1]."
    assert done.llm_called and done.citations == {"cited": [1], "valid": [1], "unknown": []}
    assert events[0].data is done.retrieval and done.retrieval.sources[0].path == "mail/mailbox-anlegen.md"
    out = done.as_json()
    assert json.loads(json.dumps(out))["answer"] == "Mit cm [1]." and out["sources"][0]["path"].startswith("mail/")
    entry = json.loads(open(settings.audit, encoding="utf-8").read())
    assert entry["answer"] == done.text and len(entry["chunks"]) == len(done.retrieval.sources)


def test_weak_evidence_skips_the_model(settings):
    with FakeLlamaServer() as server:
        settings.server = server.url
        done = core.run("Was gibt es heute in der Kantine?", settings)
    assert done.text == "Dazu habe ich keine Information." and not done.llm_called
    assert server.completions() == []


def test_retrieve_only_writes_no_audit_and_asks_nothing(settings):
    settings.retrieve_only = True
    done = core.run(QUESTION, settings)
    assert done.text is None and done.retrieval.sources
    with pytest.raises(FileNotFoundError):
        open(settings.audit)


def test_folder_filter_keeps_only_pages_below_it(settings):
    settings.retrieve_only, settings.under = True, "netzwerk"
    done = core.run(QUESTION, settings)
    assert done.retrieval.under == "netzwerk/"
    assert done.retrieval.sources and all(s.path.startswith("netzwerk/") for s in done.retrieval.sources)


@pytest.mark.parametrize("under", ["gibtsnicht/", "mai"])  # "mai" is no folder, though "mail/" starts with it
def test_unknown_folder_is_one_german_line(settings, under):
    settings.retrieve_only, settings.under = True, under
    with pytest.raises(core.CoreError, match="liegt keine Seite im Index"):
        core.run(QUESTION, settings)


@pytest.mark.parametrize("question", ["", "   ", None])
def test_empty_question_is_a_core_error(settings, question):
    with pytest.raises(core.CoreError, match="keine Frage"):
        core.run(question, settings)


def test_missing_index_names_the_build_command(settings, tmp_path):
    settings.db = str(tmp_path / "nope.db")
    with pytest.raises(core.CoreError, match="python3 build_index.py"):
        core.run(QUESTION, settings)


@pytest.mark.parametrize("p_yes, refused", [(0.2, True), (0.8, False)])
def test_answerability_check_refuses_below_the_threshold_before_the_answer(settings, p_yes, refused):
    settings.answer_threshold = 0.5
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Mit cm", " [1]."], p_yes=p_yes) as server:
        settings.server = server.url
        events = list(core.ask(QUESTION, settings))
        (check,) = server.checks()
        answers = server.completions()
    done = events[-1].data
    assert done.answerable == {"p_yes": pytest.approx(p_yes, abs=1e-3), "threshold": 0.5, "refused": refused}
    assert check["body"]["max_tokens"] == 1 and check["body"]["logprobs"] is True
    assert check["body"]["messages"][1]["content"].endswith("Antworte nur mit ja oder nein.")
    if refused:
        assert done.text == "Dazu habe ich keine Information." and answers == [] and "piece" not in [e.kind for e in events]
    else:
        assert done.text == "Mit cm [1]." and len(answers) == 1
        # the check and the answer share everything up to the question: llama-server reuses that prefix
        head = lambda body: body["messages"][1]["content"].split("\nBeantworten")[0].split("\nAntworte")[0]  # noqa: E731
        assert head(check["body"]) == head(answers[0]["body"]) and answers[0]["body"]["messages"][0] == check["body"]["messages"][0]


def test_no_measured_threshold_means_no_check(settings):
    with FakeLlamaServer(template=GEMMA_TEMPLATE) as server:
        settings.server = server.url
        done = core.run(QUESTION, settings)
    assert server.checks() == [] and done.answerable is None and done.llm_called
