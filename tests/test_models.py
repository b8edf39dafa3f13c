"""The one HTTP client (rag/models/http.py), split_chat, and the embedding contract (rag/models/embedding.py).

A slow server is a real HTTP server in a thread that answers its first request late: a busy machine
must cost a retry (one line on stderr), not the answer.

Does not handle: streamed answers (test_ask_rag.py and test_core.py run them against tests/fake_server.py).
"""
import json
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from fake_server import LocalServer

from rag.models import embed_server
from rag.models import embedding
from rag.models import http
from rag.models import answer_stream, llm
from rag.store import vectors
from timeouts import WAIT


class SlowServer(LocalServer):
    """Answers POST /v1/chat/completions with `reply` as the message content; the first `late` requests
    only when the `with` block ends (after the client gave up on them), the others at once."""

    def __init__(self, late=1, reply='["Quota erhöhen"]'):
        self.late, self.reply, self.requests = late, reply, 0
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.requests += 1
                if outer.requests <= outer.late:
                    outer.release.wait(WAIT)
                body = json.dumps({"choices": [{"message": {"content": outer.reply}}]}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on this one

            def log_message(self, *args):
                pass

        self.listen(Handler)

    def __exit__(self, *exc):
        self.release.set()
        super().__exit__(*exc)


CLIENT_TIMEOUT = 2  # the client's own timeout, which these tests make fire: held requests pass it
MESSAGES = [{"role": "user", "content": "Suchbegriffe für: Postfach voll"}]
SCHEMA = {"type": "array", "items": {"type": "string"}}


def test_read_timeout_grows_with_the_prompt_and_the_answer():
    assert http.read_timeout(30) == 30
    assert http.read_timeout(30, "x" * 600, 40) == 30 + 600 / 3 / http.PROMPT_FLOOR + 40 / http.GENERATE_FLOOR
    assert http.read_timeout(30, "ä" * 300) == http.read_timeout(30, "x" * 600)  # bytes, not characters


def test_a_late_answer_is_retried_once_and_says_so(capsys):
    with SlowServer() as server:  # the second request is answered at once, within CLIENT_TIMEOUT
        found = llm.complete_json(server.url, MESSAGES, SCHEMA, 8, timeout=CLIENT_TIMEOUT)
    assert found == ["Quota erhöhen"] and server.requests == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "zweiter Versuch" in err
    assert f"antwortete nicht innerhalb von {CLIENT_TIMEOUT} s" in err


def test_a_server_late_twice_is_one_german_line(capsys):
    with SlowServer(late=2) as server:
        late = rf"antwortete nicht innerhalb von {CLIENT_TIMEOUT} s – Server prüfen"
        with pytest.raises(llm.LLMError, match=late) as caught:
            llm.complete_json(server.url, MESSAGES, SCHEMA, 8, timeout=CLIENT_TIMEOUT)
    assert "\n" not in str(caught.value) and server.requests == 2


def test_complete_json_waits_longer_for_a_longer_prompt(monkeypatch):
    asked = []
    monkeypatch.setattr(llm, "send", lambda method, url, path, timeout, *a, **k: asked.append(timeout) or 1 / 0)
    for text in ("kurz", "lang " * 2000):
        with pytest.raises(ZeroDivisionError):
            llm.complete_json("http://127.0.0.1:9", [{"role": "user", "content": text}], SCHEMA, 40)
    assert asked[0] == http.read_timeout(llm.SHORT_TIMEOUT, "kurz", 40) < asked[1]


def test_unreachable_server_names_the_start_command():
    with pytest.raises(llm.LLMError, match="nicht erreichbar – starten mit: llama-server -m MODELL.gguf --host "
                                           "127.0.0.1 --port 9$"):
        llm.get_json("http://127.0.0.1:9", "/health")
    with pytest.raises(embedding.EmbeddingError, match="--embeddings --pooling mean --host 127.0.0.1 --port 9 "):
        embed_server.embed_texts(["Test"], "http://127.0.0.1:9/v1")


def test_error_lines_read_the_servers_own_message():
    assert http.error_message({"error": {"code": 500, "message": "KV-Cache voll"}}) == "KV-Cache voll"
    assert http.error_message({"detail": "model not found"}) == "model not found"
    assert http.auth_headers("geheim") == {"Authorization": "Bearer geheim"} and http.auth_headers(None) == {}
    assert http.base_url("http://127.0.0.1:11434/v1/embeddings") == "http://127.0.0.1:11434"


def test_split_chat_takes_the_system_message_apart():
    assert llm.split_chat("Regeln.\n\nFrage: x", "Regeln.") == [
        {"role": "system", "content": "Regeln."}, {"role": "user", "content": "Frage: x"}]
    assert llm.split_chat("Antworte kurz.\n\nFrage: x", "Regeln.") == [
        {"role": "user", "content": "Antworte kurz.\n\nFrage: x"}]


@pytest.mark.parametrize("meta, name, size, expected", [
    ({}, "a.gguf", "9", None),                                                   # a new index
    ({"embed_model": "a.gguf", "embed_model_size": "9"}, "a.gguf", "9", None),
    ({"embed_model": "a.gguf"}, "a.gguf", "", None),                             # a server reports no size
    ({"embed_model": "a.gguf", "embed_model_size": "9"}, "a.gguf", "", None),    # built from the file, asked a server
    ({"embed_model": "a.gguf"}, "b.gguf", "", ("a.gguf", "b.gguf")),
    ({"embed_model": "a.gguf", "embed_model_size": "9"}, "a.gguf", "19", ("a.gguf (9 Bytes)", "a.gguf (19 Bytes)")),
    ({"embed_model": "a.gguf"}, None, "", ("a.gguf", "unbekanntem Modell")),     # the server names no model
])
def test_model_mismatch(meta, name, size, expected):
    assert embedding.model_mismatch(meta, name, size) == expected


def test_one_l2_normaliser_for_every_embedder():
    assert vectors.normalise([3.0, 4.0]) == [0.6, 0.8] and vectors.normalise([0.0, 0.0]) == [0.0, 0.0]
    assert embed_server.normalise is vectors.normalise


# -- what the model read (rag/models/llm.py read_entry, total_read, prompt_speed) -------------------------
def test_only_the_tokens_evaluated_count_not_those_from_the_prompt_cache():
    assert llm.read_entry("check", {"timings": {"prompt_n": 12, "cache_n": 400}}) == \
        {"call": "check", "prompt_n": 12, "cached": 400}
    entries = [llm.read_entry("check", {"timings": {"prompt_n": 412, "cache_n": 0}}),
               llm.read_entry("answer", {"timings": {"prompt_n": 52, "cache_n": 400}})]
    assert llm.total_read(entries) == 464 and llm.total_read([]) == 0  # nothing asked: nothing read


@pytest.mark.parametrize("reply", [{}, None, {"timings": {}}, {"usage": {"prompt_tokens": 70}}])
def test_a_server_without_timings_gives_none_not_zero(reply):
    entry = llm.read_entry("answer", reply)
    assert entry == {"call": "answer", "prompt_n": None}
    assert llm.total_read([{"call": "check", "prompt_n": 412}, entry]) is None


def test_complete_json_records_what_it_read():
    from fake_server import FakeLlamaServer
    read = []
    messages = [{"role": "user", "content": "x" * 400}]
    with FakeLlamaServer(replies=['["Quota"]'], cached=60) as server:
        assert llm.complete_json(server.url, messages, SCHEMA, 40, read=read, call="search") == ["Quota"]
    assert read == [{"call": "search", "prompt_n": 100, "cached": 0}]  # no prompt cache for these calls: all read


def test_the_calibration_reads_a_fixed_prompt_without_the_cache():
    from fake_server import CHARS_PER_TOKEN, FakeLlamaServer
    with FakeLlamaServer(cached=200) as server:
        speed = llm.prompt_speed(server.url)
        (request,) = [r for r in server.requests if r["method"] == "POST"]
    tokens = len(llm.CALIBRATION) // CHARS_PER_TOKEN
    assert request["body"]["cache_prompt"] is False and request["body"]["prompt"] == llm.CALIBRATION
    assert speed == {"prompt_n": tokens, "prompt_ms": tokens * 5.0, "tokens_per_s": 200.0}  # the fake: 5 ms a token
    with FakeLlamaServer(timings=False) as server:
        assert llm.prompt_speed(server.url) is None


def test_an_answer_that_repeats_itself_is_ended_and_its_stream_closed():
    closed = []

    def looping():
        try:
            yield "Ein Postfach darf 25 MB groß sein,"
            while True:
                yield " einschließlich aller Anhänge"
        finally:
            closed.append(True)

    text = "".join(answer_stream.until_loop(looping()))
    assert text.count("einschließlich aller Anhänge") == 3 and closed == [True]
    steps = ["1. `cm user/a`\n", "2. `sq user/a 100`\n", "3. `lq user/a`\n", "| - | - | - | - |"]
    assert list(answer_stream.until_loop(iter(steps))) == steps  # different steps, and a row of dashes, are no loop
    # what the page, the API and the log keep: the phrase once
    assert answer_stream.without_loop(text) == "Ein Postfach darf 25 MB groß sein, einschließlich aller Anhänge"
    assert answer_stream.without_loop("".join(steps)) == "".join(steps)


def test_warm_lets_the_server_read_the_system_message_and_never_fails():
    from fake_server import FakeLlamaServer
    with FakeLlamaServer() as fake:
        entry = llm.warm(fake.url, "Regeln: nur aus den Quellen.")
    (request,) = fake.warms()
    assert request["body"]["messages"][0] == {"role": "system", "content": "Regeln: nur aus den Quellen."}
    assert request["body"]["cache_prompt"] is True and entry["call"] == "warm" and entry["prompt_n"] > 0
    assert llm.warm("http://127.0.0.1:9", "Regeln.") is None  # nobody listens: the first question will say so
