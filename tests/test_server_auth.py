"""Any OpenAI-compatible server: API key, model names, /v1/embeddings for questions and the index.

Unit tests run the scripts against a small stdlib fake of an OpenAI-compatible server that, like
Ollama or vLLM, has no /props and wants a Bearer key; its vectors are NOT normalised, so a test
can see that the scripts normalise them. Real tests start llama-server with --api-key and compare
rankings with those of llama-embedding.

    fake vectors: [count("mailbox"), count("vpn"), count("drucker"), 1.0] * 3   (length ≠ 1)
"""
import json
import math
import os
import sqlite3
from http.server import BaseHTTPRequestHandler

import pytest

from fake_server import LocalServer

from conftest import ROOT, SMALL_WIKI, assert_one_error_line, load_json, run_script, write_wiki
from rag.models.server_process import ServerProcess, free_port

KEY = "geheim-123"
QUESTION = "Wie lege ich eine Mailbox an?"
AXES = ["mailbox", "vpn", "drucker"]
CONTEXT = 200  # tokens (= characters) of the fake in mode "context"


class FakeOpenAI(LocalServer):
    """An OpenAI-compatible server in a thread: /v1/models, /v1/embeddings, streamed /v1/chat/completions.

    key: required Bearer key (None: none); model: what /v1/models lists; mode: ok | not-json | short |
    context (like llama-server with a 200-token context: a longer input -> HTTP 400, 1 character = 1 token).
    """

    def __init__(self, key=KEY, model="fake-embed", mode="ok"):
        self.key, self.model, self.mode = key, model, mode
        self.requests = []  # {"path", "auth", "body"}
        self.listen(make_handler(self))

    def posts(self, path):
        return [r for r in self.requests if r["path"] == path]


def vector(text):
    low = text.lower()
    return [3.0 * low.count(a) for a in AXES] + [3.0]


def make_handler(fake):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, payload, raw=None):
            body = raw if raw is not None else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def authorised(self, body=None):
            auth = self.headers.get("Authorization")
            fake.requests.append({"path": self.path, "auth": auth, "body": body})
            if fake.key and auth != f"Bearer {fake.key}":
                self.reply(401, {"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}})
                return False
            return True

        def do_GET(self):
            if self.path == "/health":  # public, as in llama-server
                fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": None})
                return self.reply(200, {"status": "ok"})
            if not self.authorised():
                return
            if self.path == "/v1/models":
                return self.reply(200, {"object": "list", "data": [{"id": fake.model, "object": "model"}]})
            self.reply(404, {"error": {"message": "Not Found"}})  # no /props: not a llama-server

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.authorised(body):
                return
            if self.path == "/v1/embeddings":
                if fake.mode == "not-json":
                    return self.reply(200, None, raw=b"<html>Proxy error</html>")
                too_long = [len(t) for t in body["input"] if len(t) > CONTEXT]
                if fake.mode == "context" and too_long:  # llama-server's error, byte for byte but the numbers
                    return self.reply(400, {"error": {
                        "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": too_long[0],
                        "n_ctx": CONTEXT, "message": f"input ({too_long[0]} tokens) is larger than the max context "
                                                     f"size ({CONTEXT} tokens). skipping"}})
                texts = body["input"][:-1] if fake.mode == "short" else body["input"]
                data = [{"object": "embedding", "index": i, "embedding": vector(t)} for i, t in enumerate(texts)]
                return self.reply(200, {"object": "list", "data": data, "model": body.get("model", fake.model)})
            if self.path == "/v1/chat/completions":
                events = [{"choices": [{"index": 0, "delta": {"content": "Mit cyradm [1]."}, "finish_reason": None}]},
                          {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
                data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.reply(404, {"error": {"message": "Not Found"}})

    return Handler


@pytest.fixture
def wiki(tmp_path):
    return write_wiki(tmp_path / "wiki", SMALL_WIKI)


@pytest.fixture
def env(tmp_path, wiki):
    """Environment for both scripts with every embedding going to a server (RAG_EMBED_VIA=server)."""
    return {"RAG_DB": str(tmp_path / "knowledge.db"), "RAG_AUDIT": str(tmp_path / "audit.jsonl"),
            "RAG_WIKI": str(wiki), "RAG_EMBED_VIA": "server", "RAG_API_KEY": "", "LLAMA_SERVER_URL": "",
            "LLAMA_EMBEDDING": str(tmp_path / "kein-llama-embedding"), "RAG_EMBED_MODEL": str(tmp_path / "kein.gguf")}


def build(env, server, *args, **extra):
    # LLAMA_SERVER_URL: the default when RAG_EMBED_URL is not set
    return run_script("build_index.py", "--quiet", *args,
                      env={**env, "LLAMA_SERVER_URL": server.url, **extra})


def ask(env, server, *args, **extra):
    return run_script("ask_rag.py", *args, env={**env, "LLAMA_SERVER_URL": server.url, **extra})


# -- the index through a server --------------------------------------------------------------------
def test_index_through_a_server_sends_key_and_model_and_normalises(env):
    with FakeOpenAI() as server:
        result = build(env, server, "--embed-model-name", "fake-embed", RAG_API_KEY=KEY)
    assert result.returncode == 0, result.stderr
    posts = server.posts("/v1/embeddings")
    assert posts and all(p["auth"] == f"Bearer {KEY}" and p["body"]["model"] == "fake-embed" for p in posts)
    assert sum(len(p["body"]["input"]) for p in posts) >= 4  # many inputs per request
    conn = sqlite3.connect(env["RAG_DB"])
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta["embed_model"] == "fake-embed" and meta["dim"] == "4" and meta.get("embed_model_size", "") == ""
    vectors = [json.loads(e) for (e,) in conn.execute("SELECT embedding FROM docs")]
    assert all(abs(math.fsum(x * x for x in v) - 1) < 1e-9 for v in vectors)


def test_index_names_the_model_the_server_lists(env):
    with FakeOpenAI(model="/models/nomic-embed-text.gguf") as server:
        result = build(env, server, "--api-key", KEY)
    assert result.returncode == 0, result.stderr
    meta = dict(sqlite3.connect(env["RAG_DB"]).execute("SELECT key, value FROM meta"))
    assert meta["embed_model"] == "nomic-embed-text.gguf"


def test_index_without_key_is_one_line_and_writes_nothing(env):
    with FakeOpenAI() as server:
        result = build(env, server)
    assert_one_error_line(result, "API-Schlüssel fehlt oder ist falsch", "--api-key / RAG_API_KEY")
    assert not os.path.exists(env["RAG_DB"])  # the server is asked before the index is opened


def test_index_with_another_server_model_names_rebuild(env):
    with FakeOpenAI(model="modell-a") as server:
        assert build(env, server, RAG_API_KEY=KEY).returncode == 0
    with FakeOpenAI(model="modell-b") as server:
        result = build(env, server, RAG_API_KEY=KEY)
        rebuilt = build(env, server, "--rebuild", RAG_API_KEY=KEY)
    assert_one_error_line(result, "modell-a", "modell-b", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert dict(sqlite3.connect(env["RAG_DB"]).execute("SELECT key, value FROM meta"))["embed_model"] == "modell-b"


@pytest.mark.parametrize("mode, words", [("not-json", ["kein JSON"]), ("short", ["statt", "Vektoren"])])
def test_index_bad_server_answers_are_one_line(env, mode, words):
    with FakeOpenAI(mode=mode) as server:
        result = build(env, server, RAG_API_KEY=KEY)
    assert_one_error_line(result, *words)


def test_index_cuts_a_text_longer_than_the_server_context(env):
    write_wiki(env["RAG_WIKI"], {"lang.md": "# Lang\n\n" + "Der Drucker druckt. " * 40})  # one 800-character chunk
    with FakeOpenAI(mode="context") as server:
        result = build(env, server, RAG_API_KEY=KEY)
    assert result.returncode == 0, result.stderr
    served = [t for p in server.posts("/v1/embeddings") for t in p["body"]["input"]]
    assert any(len(t) > CONTEXT for t in served)  # tried whole first
    assert any(t.startswith("Lang\n\nDer Drucker") and len(t) <= CONTEXT - 16 for t in served)  # then cut to fit
    count = sqlite3.connect(env["RAG_DB"]).execute("SELECT COUNT(*) FROM docs WHERE path = 'lang.md'").fetchone()
    assert count == (1,)


def test_index_server_down_is_one_line(env):
    unreachable = f"http://127.0.0.1:{free_port()}"
    result = run_script("build_index.py", env={**env, "RAG_EMBED_URL": unreachable})
    assert_one_error_line(result, "nicht erreichbar", "--embed-url")


def test_index_via_server_needs_a_url(env):
    result = run_script("build_index.py", env=env)
    assert_one_error_line(result, "--embed-url / RAG_EMBED_URL")


# -- questions and answers through a server ------------------------------------------------------
@pytest.fixture
def indexed(env):
    with FakeOpenAI() as server:
        assert build(env, server, RAG_API_KEY=KEY).returncode == 0
    return env


def test_question_through_a_server_ranks_and_sends_the_key(indexed):
    with FakeOpenAI() as server:
        result = ask(indexed, server, "--retrieve-only", "--json", QUESTION, RAG_API_KEY=KEY)
    assert result.returncode == 0, result.stderr
    assert load_json(result.stdout)["sources"][0]["path"] == "mail/mailbox-anlegen.md"
    assert server.posts("/v1/embeddings")[0]["auth"] == f"Bearer {KEY}"


def test_question_embed_url_defaults_to_the_chat_server_and_may_differ(indexed):
    with FakeOpenAI() as chat, FakeOpenAI() as embed:
        result = ask(indexed, chat, "--retrieve-only", QUESTION, RAG_API_KEY=KEY, RAG_EMBED_URL=embed.url + "/v1")
    assert result.returncode == 0, result.stderr
    assert embed.posts("/v1/embeddings") and not chat.posts("/v1/embeddings")


@pytest.mark.parametrize("key", ["", "falsch"])
def test_question_without_or_with_wrong_key_is_one_line(indexed, key):
    with FakeOpenAI() as server:
        result = ask(indexed, server, "--retrieve-only", QUESTION, RAG_API_KEY=key)
    assert_one_error_line(result, "API-Schlüssel fehlt oder ist falsch")


def test_question_with_another_server_model_names_rebuild(indexed):
    with FakeOpenAI(model="anderes-modell") as server:
        result = ask(indexed, server, "--retrieve-only", QUESTION, RAG_API_KEY=KEY)
    assert_one_error_line(result, "anderes-modell", "fake-embed", "--rebuild")


def test_chat_without_props_uses_chat_template_model_name_and_key(indexed):
    with FakeOpenAI() as server:
        result = ask(indexed, server, "--json", "--no-floor", "--steps", "model", QUESTION, RAG_API_KEY=KEY,
                     RAG_LLM_MODEL_NAME="qwen2.5:3b")  # the model writes the answer (a how-to question)
    assert result.returncode == 0, result.stderr
    out = load_json(result.stdout)
    assert out["answer"] == "Mit cyradm [1]." and out["citations"]["valid"] == [1]
    (chat,) = server.posts("/v1/chat/completions")
    assert chat["auth"] == f"Bearer {KEY}" and chat["body"]["model"] == "qwen2.5:3b"
    audit = open(indexed["RAG_AUDIT"], encoding="utf-8").read()
    assert KEY not in audit and "qwen2.5:3b" in audit


def test_chat_with_wrong_key_is_one_line(indexed):
    with FakeOpenAI() as embed, FakeOpenAI(key="anderer") as chat:
        result = ask(indexed, chat, "--no-floor", QUESTION, RAG_API_KEY=KEY, RAG_EMBED_URL=embed.url)
    assert_one_error_line(result, "API-Schlüssel fehlt oder ist falsch")
    assert not chat.posts("/v1/chat/completions")


# -- real llama-server with --api-key --------------------------------------------------------------
PAGES = ["mail/cyrus-imap/mailbox-anlegen.md", "mail/cyrus-imap/mailbox-quota.md", "netzwerk/vpn-linux.md",
         "arbeitsplatz/drucker.md", "vertraege/rahmenvertrag-elbe-systemhaus.md"]
REAL_QUESTION = "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"
SECRET = "SECRET"


@pytest.fixture(scope="module")
def real_setup(real, tmp_path_factory):
    """A few sample pages indexed with llama-embedding (the reference) and a llama-server with --api-key."""
    tmp = tmp_path_factory.mktemp("auth")
    write_wiki(tmp / "wiki", {rel: (ROOT / "wiki" / rel).read_text(encoding="utf-8") for rel in PAGES})
    env = {"LLAMA_EMBEDDING": real["embedding"], "RAG_EMBED_MODEL": real["model"], "RAG_WIKI": str(tmp / "wiki"),
           "RAG_DB": str(tmp / "binary.db"), "RAG_AUDIT": str(tmp / "audit.jsonl"), "RAG_API_KEY": "",
           "RAG_EMBED_VIA": ""}
    result = run_script("build_index.py", "--quiet", "--embed-via", "binary", env=env)
    assert result.returncode == 0, result.stderr
    server = ServerProcess(model=real["model"], binary=real["server"], embeddings=True, api_key=SECRET,
                           log_path=str(tmp / "server.log")).start()
    yield tmp, {**env, "LLAMA_SERVER_URL": server.url}
    server.stop()


def ranking(result):
    assert result.returncode == 0, result.stderr
    return [(s["path"], s["chunk_index"]) for s in load_json(result.stdout)["sources"]]


def test_real_without_key_every_path_is_one_line(real_setup):
    tmp, env = real_setup
    embed = run_script("ask_rag.py", "--retrieve-only", "--embed-via", "server", REAL_QUESTION, env=env)
    assert_one_error_line(embed, "API-Schlüssel fehlt oder ist falsch")
    chat = run_script("ask_rag.py", "--no-floor", REAL_QUESTION, env=env)  # question by llama-embedding
    assert_one_error_line(chat, "API-Schlüssel fehlt oder ist falsch")
    index = run_script("build_index.py", "--embed-via", "server", "--embed-url", env["LLAMA_SERVER_URL"],
                       env={**env, "RAG_DB": str(tmp / "nokey.db")})
    assert_one_error_line(index, "API-Schlüssel fehlt oder ist falsch")


def test_real_wrong_key_on_the_chat_path_is_one_line(real_setup):
    _, env = real_setup
    result = run_script("ask_rag.py", "--no-floor", "--api-key", "falsch", REAL_QUESTION, env=env)
    assert_one_error_line(result, "API-Schlüssel fehlt oder ist falsch")


def test_real_with_key_question_and_index_rank_like_llama_embedding(real_setup):
    tmp, env = real_setup
    reference = ranking(run_script("ask_rag.py", "--retrieve-only", "--json", REAL_QUESTION, env=env))
    keyed = {**env, "RAG_API_KEY": SECRET}
    assert ranking(run_script("ask_rag.py", "--retrieve-only", "--json", "--embed-via", "server", REAL_QUESTION,
                              env=keyed)) == reference
    served_db = str(tmp / "served.db")
    index = run_script("build_index.py", "--quiet", "--embed-via", "server", "--embed-url", env["LLAMA_SERVER_URL"],
                       env={**keyed, "RAG_DB": served_db})
    assert index.returncode == 0, index.stderr
    meta = dict(sqlite3.connect(served_db).execute("SELECT key, value FROM meta"))
    assert meta["embed_model"] == meta_of(env["RAG_DB"])["embed_model"]  # the file name, as llama-embedding's
    # an index built by the server answers questions embedded by llama-embedding, and the other way round
    assert ranking(run_script("ask_rag.py", "--retrieve-only", "--json", REAL_QUESTION,
                              env={**env, "RAG_DB": served_db})) == reference


def test_real_spawned_index_server_ranks_like_llama_embedding(real_setup):
    tmp, env = real_setup
    spawned_db = str(tmp / "spawned.db")
    result = run_script("build_index.py", "--embed-via", "spawn", env={**env, "RAG_DB": spawned_db})
    assert result.returncode == 0, result.stderr
    assert "Starte llama-server" in result.stderr
    assert meta_of(spawned_db)["embed_model_size"] == meta_of(env["RAG_DB"])["embed_model_size"]
    vectors = {h: json.loads(e) for h, e in sqlite3.connect(spawned_db).execute("SELECT content_hash, embedding FROM docs")}
    reference = {h: json.loads(e) for h, e in sqlite3.connect(env["RAG_DB"]).execute("SELECT content_hash, embedding FROM docs")}
    assert vectors.keys() == reference.keys()
    assert min(sum(a * b for a, b in zip(vectors[h], reference[h])) for h in vectors) > 0.999
    assert ranking(run_script("ask_rag.py", "--retrieve-only", "--json", REAL_QUESTION,
                              env={**env, "RAG_DB": spawned_db})) == \
        ranking(run_script("ask_rag.py", "--retrieve-only", "--json", REAL_QUESTION, env=env))


def meta_of(db):
    return dict(sqlite3.connect(db).execute("SELECT key, value FROM meta"))
