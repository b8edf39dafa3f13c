"""The OpenAI-compatible door of `ask_rag.py --serve` (rag/doors/openai_api.py), through the official
`openai` client and through plain `requests`, as Open WebUI and other clients call it."""
import os

import pytest
import requests

from conftest import run_script
from fake_server import FakeLlamaServer
from rag.doors import openai_api
from serving import Serving, sse_events
from timeouts import REQUEST

QUESTION = "Wie lege ich eine Mailbox an?"
MESSAGES = [{"role": "system", "content": "Du bist hilfreich."}, {"role": "user", "content": "Hallo"},
            {"role": "assistant", "content": "Hallo! Was möchtest du wissen?"}, {"role": "user", "content": QUESTION}]
# the runners-up of the answer "Mit cm [2].", before the sources as in the terminal
SEE_ALSO = "Siehe auch: [1] mail/mailbox-anlegen.md › Mailbox anlegen › Quota, [3] drucker.md › Drucker\n\n"


@pytest.fixture
def served(fake_embedding, small_wiki):
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    with FakeLlamaServer(answer=["Mit cm", " [2]."]) as fake:
        with Serving({**os.environ, **fake_embedding, "LLAMA_SERVER_URL": fake.url, "RAG_SERVE_KEY": "k"}) as server:
            yield server, fake


def client(server):
    from openai import OpenAI
    return OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0, timeout=REQUEST)


def test_openai_client_lists_the_wiki_and_its_folders(served):
    server, _ = served
    assert [m.id for m in client(server).models.list()] == ["wiki", "wiki/mail", "wiki/netzwerk"]


def test_openai_client_gets_the_answer_with_footnotes_and_structured_sources(served):
    server, fake = served
    completion = client(server).chat.completions.create(model="wiki", messages=MESSAGES)
    content = completion.choices[0].message.content
    assert content.startswith("Mit cm [2].\n\n" + SEE_ALSO + "Quellen:\n- [1] mail/mailbox-anlegen.md")
    assert "- [2] mail/mailbox-anlegen.md › Mailbox anlegen (zitiert)" in content and content.endswith("Zitate: [2] gültig")
    rag = completion.model_extra["rag"]
    assert [s["path"] for s in rag["sources"]][:2] == ["mail/mailbox-anlegen.md"] * 2
    assert rag["checks"]["citations"]["valid"] == [2] and completion.choices[0].finish_reason == "stop"
    sent = fake.completions()[-1]["body"]["prompt"]  # the fake has no chat template: the plain prompt
    assert "Frage: " + QUESTION in sent and "Hallo! Was möchtest du wissen?" not in sent  # the question, not the chat


def test_openai_client_streams_pieces_then_footnotes_then_the_result(served):
    server, _ = served
    stream = client(server).chat.completions.create(model="wiki", messages=MESSAGES, stream=True)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.startswith("Mit cm [2].\n\n" + SEE_ALSO + "Quellen:\n")
    assert text.endswith("Zitate: [2] gültig")
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["rag"]["answer"] == "Mit cm [2]." and len({c.id for c in chunks}) == 1


def test_model_name_chooses_the_folder(served):
    server, _ = served
    completion = client(server).chat.completions.create(model="wiki/netzwerk", messages=[
        {"role": "user", "content": "VPN starten"}])
    assert {s["path"] for s in completion.model_extra["rag"]["sources"]} == {"netzwerk/vpn.md"}


def test_wrong_key_is_an_authentication_error(served):
    from openai import AuthenticationError, OpenAI
    server, _ = served
    with pytest.raises(AuthenticationError, match="Schlüssel fehlt oder ist falsch"):
        OpenAI(base_url=server.url + "/v1", api_key="falsch", max_retries=0).models.list()


def test_plain_requests_stream_ends_with_done(served):
    server, _ = served
    with requests.post(server.url + "/v1/chat/completions", headers={"Authorization": "Bearer k"}, stream=True,
                       json={"model": "wiki", "stream": True, "messages": [{"role": "user", "content": QUESTION}]},
                       timeout=REQUEST) as response:
        events = sse_events(response)
    assert response.status_code == 200 and events[-1] == ("message", "[DONE]")
    assert all(e[1]["object"] == "chat.completion.chunk" for e in events[:-1])


@pytest.mark.parametrize("messages", [[], [{"role": "assistant", "content": "Hallo"}], "kein Array"])
def test_no_user_message_is_a_german_error(served, messages):
    server, _ = served
    response = requests.post(server.url + "/v1/chat/completions", headers={"Authorization": "Bearer k"},
                             json={"model": "wiki", "messages": messages}, timeout=REQUEST)
    assert response.status_code == 400 and "keine Frage" in response.json()["error"]["message"]


def test_question_and_history():
    assert openai_api.question_and_history(MESSAGES) == (QUESTION, [
        {"role": "user", "content": "Hallo"}, {"role": "assistant", "content": "Hallo! Was möchtest du wissen?"}])
    parts = [{"role": "user", "content": [{"type": "text", "text": "A"}, {"type": "image_url", "image_url": {}}]}]
    assert openai_api.question_and_history(parts) == ("A", [])


@pytest.mark.parametrize("model, folder", [("wiki", None), ("wiki/mail", "mail/"), ("wiki/mail/", "mail/"),
                                           ("gpt-4o", None), (None, None)])
def test_folder_of(model, folder):
    assert openai_api.folder_of(model) == folder


def test_footnotes_carry_the_guard_lines_as_the_terminal_shows_them():
    result = {"sources": [{"path": "mail/a.md", "heading": "A"}], "citations": {"cited": [1], "valid": [1], "unknown": []},
              "llm_called": True, "guard": {"removed": [{"source": 1, "rule": "injection:ignore-previous"}],
                                            "flagged": [], "withheld": [{"kind": "url", "value": "https://x.example"}],
                                            "replaced": None}}
    text = openai_api.footnotes(result)
    assert "Zurückgehalten: 1 Link(s)/Kontaktangabe(n)" in text and "Im Prompt entfernt: 1 anweisungsähnliche Stelle(n) in [1]" in text
    assert "https://x.example" not in text  # the withheld value stays out of the reader's text
    assert "Zurückgehalten" not in openai_api.footnotes({**result, "guard": {"removed": [], "withheld": []}})


@pytest.mark.parametrize("text, refused, words", [("Mit cm [1].", False, "Siehe auch: "),
                                                  ("Dazu habe ich keine Information.", True, "Vielleicht hilft: ")])
def test_footnotes_name_the_runners_up_before_the_sources(text, refused, words):
    result = {"answer": text, "no_info": refused, "llm_called": True,
              "sources": [{"path": "mail/a.md", "heading": "A"},
                                                              {"path": "mail/b.md", "heading": "B › C"}],
              "see_also": [{"n": 2, "path": "mail/b.md", "heading": "B › C"}]}
    assert openai_api.footnotes(result).startswith(f"\n\n{words}[2] mail/b.md › B › C\n\nQuellen:\n- [1] mail/a.md › A\n")
    assert openai_api.footnotes({**result, "see_also": []}).startswith("\n\nQuellen:\n")  # none: no line


def test_a_refused_answer_carries_no_citation_evidence_or_fact_lines():
    """The core decides the refusal (its "no_info" and "why"), not the answer's text: a fact answer
    withdrawn after the model wrote it keeps no "(zitiert)", "Zitate:", evidence or fact marks."""
    result = {"answer": "Dazu habe ich keine Information.", "no_info": True, "llm_called": True,
              "why": "zurückgezogen: die Zahl steht in keiner Quelle",
              "sources": [{"path": "mail/a.md", "heading": "A"}],
              "citations": {"cited": [1], "valid": [1], "unknown": []},
              "evidence": [{"n": 1, "text": "Die Quota ist 2 GB."}],
              "support": [{"text": "2 GB", "cited": [1], "supported_by": [1], "verdict": "gestützt"}],
              "unsupported": ["5 GB"]}
    text = openai_api.footnotes(result)
    assert text == "\n(zurückgezogen: die Zahl steht in keiner Quelle)\n\nQuellen:\n- [1] mail/a.md › A"
    answered = openai_api.footnotes({**result, "answer": "Die Quota ist 5 GB [1].", "no_info": False})
    assert "(zitiert)" in answered and "Zitate: " in answered and "Beleg [1]" in answered
    assert "Nicht in den Quellen: 5 GB" in answered


def test_with_rewrite_a_follow_up_is_rewritten_and_shown_before_the_answer(fake_embedding, small_wiki):
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    messages = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "Mit cm [2]."},
                {"role": "user", "content": "Und wie viel Platz hat sie?"}]
    with FakeLlamaServer(answer=["2 GB", " [1]."], replies=['"Welche Quota bekommt die Mailbox?"']) as fake:
        env = {**os.environ, **fake_embedding, "LLAMA_SERVER_URL": fake.url, "RAG_REWRITE": "1"}
        with Serving(env) as server:
            completion = client_without_key(server).chat.completions.create(model="wiki", messages=messages)
            stream = list(client_without_key(server).chat.completions.create(model="wiki", messages=messages,
                                                                             stream=True))
    content = completion.choices[0].message.content
    assert content.startswith("→ Gesucht: Welche Quota bekommt die Mailbox? (mit der Frage davor)\n\n2 GB [1].\n\n"
                              "Siehe auch: [2] mail/mailbox-anlegen.md › Mailbox anlegen, [3] drucker.md › Drucker\n\n"
                              "Quellen:")
    assert "".join(c.choices[0].delta.content or "" for c in stream) == content
    rag = completion.model_extra["rag"]
    assert rag["searched"]["original"] == "Und wie viel Platz hat sie?" and rag["question"] == rag["searched"]["question"]
    (rewrite, _) = fake.structured()
    assert "Frage: " + QUESTION in rewrite["body"]["messages"][-1]["content"]
    assert rag["searched"]["previous"] == QUESTION  # searched together with the question before it


def client_without_key(server):
    from openai import OpenAI
    return OpenAI(base_url=server.url + "/v1", api_key="-", max_retries=0, timeout=REQUEST)
