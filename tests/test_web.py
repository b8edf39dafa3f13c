"""`ask_rag.py --serve`, the page's door (rag/doors/web.py): the page itself, its event stream, the folder
filter, the key, the bound on questions in flight. Fakes: conftest's llama-embedding, fake_server.py.
The real browser is in test_browser.py.
"""
import base64
import contextlib
import os
import re
import socket
import threading
import time

import pytest
import requests

from conftest import assert_one_error_line, run_script, write_wiki
from fake_server import GEMMA_TEMPLATE, FakeLlamaServer
from rag import core
from rag.doors import gate, pages, web
from rag.store import users
from serving import Serving, sse_events
from timeouts import REQUEST, WAIT, wait_for

QUESTION = "Wie lege ich eine Mailbox an?"


@pytest.fixture
def env(fake_embedding, small_wiki):
    write_wiki(small_wiki, {"mail/xss.md": "# <script>alert(1)</script>\n\nMailbox <img src=x onerror=alert(2)>\n"})
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    return {**os.environ, **fake_embedding, "RAG_SERVE_KEY": ""}


def ask(url, question=QUESTION, **body):
    with requests.post(url + "/api/ask", json={"question": question, **body}, stream=True,
                       timeout=REQUEST) as response:
        assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/event-stream")
        return sse_events(response)


def test_page_is_one_file_with_nothing_external_and_a_strict_policy(env):
    with FakeLlamaServer() as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        response = requests.get(server.url + "/", timeout=REQUEST)
    page = response.text
    assert response.status_code == 200 and response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert '<html lang="de">' in page and "Wiki fragen" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and "<link" not in page and "@import" not in page
    assert "innerHTML" not in page and "insertAdjacentHTML" not in page and "document.write" not in page
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy and "connect-src 'self'" in policy
    assert policy == pages.csp(page)  # the hashes of exactly this page's script and style
    assert "function renderMarkdown(" in page and "<!-- markdown.js -->" not in page  # put in
    assert '<p id="siehe-auch" class="hidden"></p>' in page  # the runners-up under the answer, each a link that
    assert '"Vielleicht hilft: " : "Siehe auch: "' in page and "openSource(e.n)" in page  # opens its source


def test_both_pages_load_the_one_dom_helper_script():
    """page.html and bericht.html share $, el and clear from dom.js, put in by the server."""
    for page in (pages.PAGE, pages.REPORT_PAGE):
        text = pages.page_text(page)
        assert not re.search(r"^<!-- [a-z]+\.js -->$", text, re.M)  # every script named is put in
        assert text.count("function el(") == 1 and text.count("const $ = ") == 1, page.name
        assert text.index("function el(") < text.index('"use strict";\n// Every text')


def test_serve_lets_the_answer_server_read_the_system_message_once_at_start(env):
    from rag.answer import prompt
    with FakeLlamaServer() as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}):
        warm, checks = fake.warms(), fake.checks()  # before any question: one short request, not streamed
    assert checks == [] and fake.completions() == []
    assert len(warm) == 1 and warm[0]["body"]["messages"][0] == {"role": "system", "content": prompt.SYSTEM}
    assert warm[0]["body"]["cache_prompt"] is True and warm[0]["body"]["max_tokens"] == 1


def test_events_stream_in_order_with_the_chunk_text_as_data(env):
    with FakeLlamaServer(answer=["Mit cm", " [1]."]) as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        events = ask(server.url)
    kinds = [kind for kind, _ in events]
    # pieces stream word by word (rag/check/guard.py holds a word back until it is complete)
    assert kinds[:2] == ["sources", "asking"] and kinds[-2:] == ["checks", "done"] and set(kinds[2:-2]) == {"piece"}
    assert len(kinds) - 4 >= 2
    sources = events[0][1]["sources"]
    assert len(sources) == 4  # (top k) what the page's status line counts, before the first piece:
    assert events[1][1] == {"asking": "answer", "line": "4 Quellen gefunden · warte auf die Antwort des Modells …"}
    assert [s["n"] for s in sources] == list(range(1, len(sources) + 1))
    xss = [s for s in sources if s["path"] == "mail/xss.md"]
    assert xss and "<img src=x onerror=alert(2)>" in xss[0]["text"]  # data as it is: the page escapes it
    assert "".join(d["text"] for k, d in events if k == "piece") == "Mit cm [1]."
    assert events[-1][1]["answer"] == "Mit cm [1]." and not events[-1][1]["no_info"]
    runners_up = events[-1][1]["see_also"]  # what the page shows as "Siehe auch: …" under the answer
    assert runners_up == events[-2][1]["see_also"] and [e["n"] for e in runners_up] == [2, 3]
    assert all(e["path"] == sources[e["n"] - 1]["path"] and e["heading"] == sources[e["n"] - 1]["heading"]
               for e in runners_up)


def test_the_status_line_says_when_the_sources_are_checked_and_is_missing_when_no_model_is_asked(env):
    with FakeLlamaServer(template=GEMMA_TEMPLATE, p_yes=0.2) as fake, \
            Serving({**env, "LLAMA_SERVER_URL": fake.url, "RAG_ANSWER_THRESHOLD": "0.5"}) as server:
        refused = ask(server.url)  # the check says no: the status line, then the refusal, no piece
        floor = ask(server.url, "Was gibt es heute in der Kantine?")  # the floor says no: the model is not asked
    assert [k for k, _ in refused] == ["sources", "asking", "checks", "done"] and refused[-1][1]["no_info"]
    assert refused[1][1] == {"asking": "check", "line": "4 Quellen gefunden · prüfe, ob sie die Frage beantworten …"}
    assert [k for k, _ in floor] == ["sources", "done"] and floor[-1][1]["llm_called"] is False
    assert len(fake.checks()) == 1
    assert [e["n"] for e in refused[-1][1]["see_also"]] == [1, 2]  # the page: "Vielleicht hilft: [1] …, [2] …"
    assert refused[-1][1]["see_also"] == refused[-2][1]["see_also"] and len(floor[-1][1]["see_also"]) == 2


def test_a_follow_up_is_read_against_the_pages_history(env):
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "Mit cm [1]."},
               {"role": "system", "content": "dropped"}, "no message"]
    with FakeLlamaServer(answer=["Mit dm [1]."]) as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        events = ask(server.url, "Und wie lösche ich sie?", history=history)
        alone = ask(server.url, "Und wie lösche ich sie?")
        broken = ask(server.url, "Und wie lösche ich sie?", history="kein Verlauf")
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "searched" and kinds[1] == "sources"
    searched = events[0][1]
    assert searched["previous"] == QUESTION and searched["question"] == "Und wie lösche ich sie?"
    assert not searched["rewritten"]  # the model rewrites only with --rewrite; the history is searched without it
    assert [k for k, _ in alone][0] == "sources" and [k for k, _ in broken][0] == "sources"


def test_folder_list_and_filter(env):
    with FakeLlamaServer() as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        folders = requests.get(server.url + "/api/folders", timeout=REQUEST).json()
        events = ask(server.url, "VPN starten", under="netzwerk/")
        unknown = requests.post(server.url + "/api/ask", timeout=REQUEST,
                                json={"question": QUESTION, "under": "gibtsnicht"})
    assert folders == {"folders": ["mail/", "netzwerk/"]}
    assert {s["path"] for s in events[0][1]["sources"]} == {"netzwerk/vpn.md"} and events[-1][1]["under"] == "netzwerk/"
    assert unknown.status_code == 400 and "liegt keine Seite im Index" in unknown.json()["error"]


@pytest.mark.parametrize("body", [b"", b"[1, 2]", b"{kaputt"])
def test_bad_requests_are_one_german_line(env, body):
    with FakeLlamaServer() as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        response = requests.post(server.url + "/api/ask", data=body, timeout=REQUEST,
                                 headers={"Content-Type": "application/json"})
        empty = requests.post(server.url + "/api/ask", json={"question": "  "}, timeout=REQUEST)
        missing = requests.get(server.url + "/gibtsnicht", timeout=REQUEST)
    assert response.status_code == 400 and "JSON" in response.json()["error"]
    assert empty.status_code == 400 and "keine Frage" in empty.json()["error"]
    assert missing.status_code == 404 and "gibt es nicht" in missing.json()["error"]


def test_model_failure_mid_answer_is_an_error_event(env):
    with FakeLlamaServer(answer=["Mit", " cm", " [1]."], mode="cut") as fake, \
            Serving({**env, "LLAMA_SERVER_URL": fake.url}) as server:
        events = ask(server.url)
    assert [k for k, _ in events][0] == "sources" and events[-1][0] == "error"
    assert "brach mitten in der Antwort ab" in events[-1][1]["error"]


def test_other_addresses_need_a_key(env):
    result = run_script("ask_rag.py", "--serve", "--host", "0.0.0.0", "--port", "0", env=env)
    assert_one_error_line(result, "--serve-key", "RAG_SERVE_KEY")


@pytest.mark.parametrize("args, words", [(["--port", "70000"], ["--port 70000"]), (["--serve-slots", "0"], ["--serve-slots"]),
                                         (["--host", "127.0.0.1", "--port", "{busy}"], ["lässt sich nicht öffnen", "--port"])])
def test_bad_serve_flags_are_one_german_line(env, args, words):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        args = [a.format(busy=taken.getsockname()[1]) for a in args]
        result = run_script("ask_rag.py", "--serve", *args, env=env)
    assert_one_error_line(result, *words)


def test_with_a_key_every_request_needs_it(env):
    key = "geheim-17"
    with FakeLlamaServer() as fake, Serving({**env, "LLAMA_SERVER_URL": fake.url, "RAG_SERVE_KEY": key}) as server:
        paths = ["/", "/api/folders", "/v1/models", "/health"]
        without = [requests.get(server.url + p, timeout=REQUEST) for p in paths]
        wrong = requests.get(server.url + "/", headers={"Authorization": "Bearer falsch"},
                             timeout=REQUEST)
        post = requests.post(server.url + "/api/ask", json={"question": QUESTION}, timeout=REQUEST)
        bearer = requests.get(server.url + "/api/folders", timeout=REQUEST,
                              headers={"Authorization": f"Bearer {key}"})
        basic_key = base64.b64encode(f"kollegin:{key}".encode()).decode()  # the browser: HTTP
        basic = requests.get(server.url + "/", timeout=REQUEST,  # Basic, the key as password
                             headers={"Authorization": "Basic " + basic_key})
    assert [r.status_code for r in without + [wrong, post]] == [401] * 6
    assert without[0].headers["WWW-Authenticate"].startswith("Basic ") and "Schlüssel" in without[1].json()["error"]
    assert bearer.status_code == 200 and basic.status_code == 200 and "Wiki fragen" in basic.text
    assert key not in " ".join(server.lines)


def test_beyond_slots_and_queue_the_answer_is_busy_at_once(env):
    """The first question holds the one slot (the fake server stalls until released), the second
    waits in the queue; the third is told "ausgelastet" while both hold their places: no waiting."""
    with FakeLlamaServer(mode="stall") as fake, \
            Serving({**env, "LLAMA_SERVER_URL": fake.url}, "--serve-slots", "1", "--serve-queue", "1") as server:
        def health():
            return requests.get(server.url + "/health", timeout=REQUEST).json()
        def ask_in_background():
            requests.post(server.url + "/api/ask", json={"question": QUESTION}, timeout=REQUEST)
        asked = [threading.Thread(target=ask_in_background) for _ in range(2)]
        asked[0].start()
        assert fake.streaming.wait(WAIT)  # the first question holds the slot ...
        asked[1].start()
        wait_for(lambda: health()["waiting"] == 1)  # ... the second waits in the queue ...
        busy = requests.post(server.url + "/api/ask", json={"question": QUESTION},  # the third
                             timeout=REQUEST)
        during = health()
        fake.release.set()
        for thread in asked:
            thread.join(REQUEST)
        after = wait_for(lambda: health()["running"] == 0) and health()
    assert busy.status_code == 503
    assert re.fullmatch(r"Der Server ist ausgelastet, bitte in \d+ s erneut fragen\.", busy.json()["error"])
    assert busy.headers["Retry-After"] == re.search(r"in (\d+) s", busy.json()["error"]).group(1)
    assert during == {"status": "ok", "slots": 1, "queue": 1, "running": 1, "waiting": 1}
    assert after == {"status": "ok", "slots": 1, "queue": 1, "running": 0, "waiting": 0}


def test_a_place_is_free_before_the_answer_ends(monkeypatch):
    """One slot, no queue, and a handler thread slow to leave the gate after its answer (a busy
    machine): who read the whole answer and asks again at once is answered, not "ausgelastet"."""
    class SlowToLeave(gate.Gate):
        @contextlib.contextmanager
        def enter(self):
            with super().enter():
                yield
                time.sleep(0.5)  # descheduled after the answer, before the place is free

    events = [("sources", {"sources": []}), ("done", {"answer": "Mit cm [1]."})]
    monkeypatch.setattr(web.doors, "answer_events", lambda question, settings, history:
                        iter(events))
    state = web.State(core.Settings(), users.Auth(), SlowToLeave(1, 0))
    httpd = web.Server(("127.0.0.1", 0), state)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/api/ask"
        replies = [requests.post(url, json={"question": QUESTION}, timeout=REQUEST)
                   for _ in range(2)]
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert [r.status_code for r in replies] == [200, 200], replies[1].text
    assert replies[1].text.endswith('event: done\ndata: {"answer": "Mit cm [1]."}\n\n')


def test_sigterm_stops_the_server_cleanly(env):
    with FakeLlamaServer() as fake:
        server = Serving({**env, "LLAMA_SERVER_URL": fake.url}).__enter__()
        code, stderr = server.stop()
    assert code == 0 and "Traceback" not in stderr and server.lines[0].startswith("Web-Seite: http://127.0.0.1:")


@pytest.mark.parametrize("header, ok", [("Bearer k", True), ("bearer k", True), ("Bearer k2", False), ("k", False),
                                        ("Basic " + base64.b64encode(b"x:k").decode(), True),
                                        ("Basic " + base64.b64encode(b"k").decode(), False), ("Basic %%%", False), (None, False)])
def test_key_ok(header, ok):
    assert web.key_ok(header, "k") is ok


@pytest.mark.parametrize("host, ok", [("127.0.0.1", True), ("127.0.0.5", True), ("::1", True), ("localhost", True),
                                      ("0.0.0.0", False), ("192.168.1.10", False), ("::", False), ("wiki.intern", False)])
def test_loopback(host, ok):
    assert web.loopback(host) is ok
