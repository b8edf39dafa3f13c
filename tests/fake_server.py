"""A fake llama-server in a thread: the same endpoints and bytes, an answer a test chooses.

    with FakeLlamaServer(answer=["Mit cm", " [1]."]) as server:
        run_script("ask_rag.py", "Frage?", env={"LLAMA_SERVER_URL": server.url, ...})
        server.requests[-1]["path"]   # -> "/v1/completions"

What it copies from llama-server (captured from the real one): GET /health ({"status":"ok"} or
503 "Loading model"), GET /props (the model's chat template, or llama-server's ChatML fallback
when the model has none), and POST /v1/completions and /v1/chat/completions streamed as
Server-Sent Events over chunked HTTP/1.1: one `data: {…}` event per piece, a last chunk with
finish_reason "stop" and "timings", then `data: [DONE]`.

mode   ok          the answer, as above (answer_for: a function of the request's body picks it)
       error       half the answer, then `data: {"error": {"code": 500, …}}` (as llama-server)
       error-event half the answer, then `error: {"code": 500, …}` (as older llama-server builds)
       no-done     the whole answer, the stream ends cleanly but without `data: [DONE]`
       cut         half the answer, then the connection closes mid-stream (a crashed server)
       http-500    HTTP 500 with llama-server's JSON error body, no stream
       stall       headers and the first half of the answer, then silence until the `with` ends

Every completion reports llama-server's "timings" (the response's, or the last chunk's): prompt_n, the
prompt tokens read, is the prompt's characters / 4 (messages: their contents) less `cached`, the tokens
the fake pretends to have served from its prompt cache (cache_n); timings=False: no timings at all
(another OpenAI-compatible server).

A request with "stream": false is the answerability check (rag/answer/answerable.py): one token, "Ja" or
"Nein", with top_logprobs that give "Ja" the probability p_yes. One with "stream": false and a
"response_format" (rag/models/llm.py complete_json: search phrases, a rewritten follow-up) gets one JSON
body whose message content is the next of `replies` (the last one repeats), e.g.
FakeLlamaServer(replies=['["Quota erhöhen"]']), as llama-server answers under a JSON schema.

Does not handle: tokenisation, anything the scripts do not call.
"""
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from timeouts import RUN

FALLBACK_TEMPLATE = ("{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\n' + message.content"
                     " + '<|im_end|>\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n"
                     "  {{- '<|im_start|>assistant\n' -}}\n{%- endif -%}")  # as llama-server reports it
GEMMA_TEMPLATE = "{{ bos_token }}{%- for message in messages -%}<start_of_turn>{{ message.role }}\n…"
MODEL_PATH = "/models/fake-llm.gguf"
ERROR = {"code": 500, "message": "KV-Cache voll", "type": "server_error"}  # a mid-stream failure
TIMINGS = {"cache_n": 0, "prompt_n": 120, "prompt_ms": 80.0, "prompt_per_token_ms": 0.67,
           "prompt_per_second": 1500.0, "predicted_n": 5, "predicted_ms": 50.0,
           "predicted_per_token_ms": 10.0, "predicted_per_second": 100.0}
CHARS_PER_TOKEN = 4  # the fake's tokeniser: prompt_n + cache_n = characters / 4
MS_PER_TOKEN = 5.0  # the fake reads 200 prompt tokens/s


def prompt_tokens(body):
    """The tokens of a request's prompt. Example: {"messages": [{"content": "x" * 40}]} -> 10"""
    text = body.get("prompt") or "".join(str(m.get("content") or "") for m in body.get("messages", []))
    return max(1, len(text) // CHARS_PER_TOKEN)


def timings_for(body, cached=0):
    """llama-server's timings of one request: the prompt's tokens less those served from the cache.

    Example: timings_for({"prompt": "x" * 400}, cached=60) -> {"prompt_n": 40, "cache_n": 60, "prompt_ms": 200.0, …}
    """
    total = prompt_tokens(body)
    cache_n = min(cached, total - 1) if body.get("cache_prompt", True) else 0  # llama-server reads at least one
    read = total - cache_n
    return {**TIMINGS, "cache_n": cache_n, "prompt_n": read, "prompt_ms": read * MS_PER_TOKEN,
            "prompt_per_token_ms": MS_PER_TOKEN, "prompt_per_second": 1000 / MS_PER_TOKEN}



class LocalServer:
    """A ThreadingHTTPServer on 127.0.0.1 (a free port), served from a thread inside a `with` block."""

    def listen(self, handler):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeLlamaServer(LocalServer):
    def __init__(self, answer=("Mit cyradm", " [1]."), mode="ok", health=200, template=FALLBACK_TEMPLATE, p_yes=0.9,
                 replies=("[]",), cached=0, timings=True, answer_for=None):
        self.answer, self.mode, self.health, self.template = list(answer), mode, health, template
        self.answer_for = answer_for  # body -> the pieces of this request's answer (else `answer`)
        self.cached, self.timings = cached, timings  # tokens served from the "prompt cache"; False: no timings
        self.p_yes, self.replies = p_yes, list(replies)
        self.requests = []  # {"method", "path", "body"} in arrival order
        self.streaming = threading.Event()  # set when a completion request arrived
        self.release = threading.Event()  # ends a stall
        self.listen(make_handler(self))

    def completions(self):
        """The answer requests (streamed), in order."""
        return [r for r in self.requests if r["path"].endswith("completions") and r["body"].get("stream", True)]

    def checks(self):
        """The answerability checks (not streamed), in order."""
        return [r for r in self.requests if r["path"].endswith("completions") and not r["body"].get("stream", True)
                and "response_format" not in r["body"] and r not in self.warms()]

    def warms(self):
        """The requests that only let the server read the system message (rag/models/llm.py warm), in order."""
        return [r for r in self.requests if r["path"].endswith("completions") and not r["body"].get("stream", True)
                and (r["body"].get("messages") or [{}])[-1].get("content") == "" and "response_format" not in r["body"]]

    def structured(self):
        """The requests under a JSON schema (search phrases, rewritten follow-ups), in order."""
        return [r for r in self.requests if r["path"].endswith("completions") and "response_format" in r["body"]]

    def __exit__(self, *exc):
        self.release.set()
        super().__exit__(*exc)


def chunk(piece, chat, finish=None, timings=None):
    """One streamed event. Example: chunk("Hi", chat=False) -> {"choices": [{"text": "Hi", …}], …}"""
    choice = {"delta": {"content": piece} if piece else {}} if chat else {"text": piece or "", "logprobs": None}
    data = {"choices": [{**choice, "index": 0, "finish_reason": finish}], "model": MODEL_PATH,
            "object": "chat.completion.chunk" if chat else "text_completion", "id": "chatcmpl-fake"}
    if finish and timings:
        data["timings"] = timings
    return data


def check_answer(p_yes, timings=None):
    """llama-server's non-streamed chat answer of one token, with its top_logprobs (as captured)."""
    token = "Ja" if p_yes >= 0.5 else "Nein"
    top = [{"token": "Ja", "logprob": math.log(max(p_yes, 1e-9))},
           {"token": "Nein", "logprob": math.log(max(1 - p_yes, 1e-9))}, {"token": "ja", "logprob": -9.0}]
    top.sort(key=lambda t: -t["logprob"])
    return {"choices": [{"finish_reason": "length", "index": 0, "message": {"role": "assistant", "content": token},
                         "logprobs": {"content": [{"token": token, "logprob": top[0]["logprob"], "top_logprobs": top}]}}],
            "model": MODEL_PATH, "object": "chat.completion", **({"timings": timings} if timings else {})}


def make_handler(fake):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # chunked streaming, as llama-server

        def log_message(self, *args):  # keep pytest output clean
            pass

        def send_json(self, status, payload):
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def send_event(self, payload, field=b"data"):
            data = field + b": " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def do_GET(self):
            fake.requests.append({"method": "GET", "path": self.path, "body": None})
            if fake.health != 200:
                self.send_json(fake.health, {"error": {"code": fake.health, "message": "Loading model",
                                                       "type": "unavailable_error"}})
            elif self.path == "/health":
                self.send_json(200, {"status": "ok"})
            elif self.path == "/props":
                self.send_json(200, {"model_path": MODEL_PATH, "model_alias": MODEL_PATH, "total_slots": 1,
                                     "chat_template": fake.template, "build_info": "b0-fake"})
            else:
                self.send_json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append({"method": "POST", "path": self.path, "body": body})
            fake.streaming.set()
            chat = self.path == "/v1/chat/completions"
            timings = timings_for(body, fake.cached) if fake.timings else None
            if fake.mode == "http-500":
                return self.send_json(500, {"error": {"code": 500, "message": "failed to decode the batch",
                                                      "type": "server_error"}})
            if "response_format" in body:
                reply = fake.replies[min(len(fake.structured()) - 1, len(fake.replies) - 1)]
                return self.send_json(200, {"choices": [{"index": 0, "finish_reason": "stop",
                                                         "message": {"role": "assistant", "content": reply}}],
                                            "model": MODEL_PATH, "object": "chat.completion",
                                            **({"timings": timings} if timings else {})})
            if not body.get("stream", True):
                return self.send_json(200, check_answer(fake.p_yes, timings))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            answer = fake.answer_for(body) if fake.answer_for else fake.answer
            pieces = answer if fake.mode in ("ok", "no-done") else answer[:max(1, len(answer) // 2)]
            if chat:
                self.send_event({"choices": [{"finish_reason": None, "index": 0,
                                              "delta": {"role": "assistant", "content": None}}]})
            for piece in pieces:
                self.send_event(chunk(piece, chat))
            if fake.mode == "stall":
                fake.release.wait(RUN)  # a stall ends when the test releases it
            elif fake.mode == "error":
                self.send_event({"error": ERROR})
            elif fake.mode == "error-event":
                self.send_event(ERROR, field=b"error")
            elif fake.mode == "cut":
                self.close_connection = True
                return  # no terminating chunk: the client sees a broken stream
            else:
                self.send_event(chunk("", chat, finish="stop", timings=timings))
                if fake.mode == "ok":
                    self.send_event(b"[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = True

    return Handler
