"""The web page and the OpenAI-compatible API of `python3 ask_rag.py --serve`, on one stdlib server.

    python3 ask_rag.py --serve                                  # http://127.0.0.1:8090/
    RAG_SERVE_KEY=geheim python3 ask_rag.py --serve --host 0.0.0.0

Routes (every one turns the core's events into its own format, rag/doors/common.py):
    GET  /                       the page: rag/doors/page.html, HTML, CSS and JS in one file,
                                 nothing external (rag/doors/markdown.js, the answer's Markdown as
                                 DOM nodes, put in)
    GET  /api/folders            {"folders": ["mail/", …]}: the index's top-level folders (folder
                                 filter)
    POST /api/ask                {"question", "under"} -> Server-Sent Events: sources, asking,
                                 piece …, checks, done (or error); each `data:` is one JSON
                                 object; asking (only when the model is asked) carries the
                                 terminal's status line, e.g. {"asking": "check",
                                 "line": "4 Quellen gefunden · prüfe, ob sie die Frage beantworten
                                 …"}
    GET  /v1/models, POST /v1/chat/completions    the wiki as an OpenAI "model"
                                 (rag/doors/openai_api.py)
    POST /v1/feedback            {"id", "vote": 1 | -1, "comment"}: a vote (404: no such answer id)
    GET  /bericht, /api/bericht  the report for the wiki's authors, page and JSON (doors/ratings.py)
    GET  /health                 {"status": "ok", "slots": N, "queue": M, "running": R,
                                 "waiting": W}: the gate's places, and how many are taken now

Security: binds 127.0.0.1 unless a key is set (--serve-key / RAG_SERVE_KEY); with a key every
request needs it, as `Authorization: Bearer KEY` (API clients) or HTTP Basic with the key as
password (the browser asks once). The page builds its DOM with textContent only, and a
Content-Security-Policy allows nothing but the page's own inline script and style (by hash) and
requests to this server.

Load: at most SLOTS questions run at once (the answer server's slots, its /props `total_slots`),
QUEUE more wait for one; beyond that the reply comes at once: HTTP 503 with Retry-After and
"Der Server ist ausgelastet, bitte in N s erneut fragen." (rag/doors/gate.py). A question's place
is free before its stream ends: who read an answer to the end may ask again at once.

Users (--users FILE) each get answers only from the pages they may read: the request's Reader goes
into the settings, the store hides the rest (rag/store/users.py, rag/store/access.py,
docs/rechte.md).

Does not handle: TLS (put a reverse proxy in front), limits per client.
"""
import ipaddress
import itertools
import json
import signal
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from rag import core
from rag.doors import common as doors
from rag.doors import openai_api
from rag.doors import pages
from rag.doors import ratings
from rag.doors import terminal
from rag.doors.gate import Busy, Gate
from rag.store import users
from rag.store.users import key_ok  # noqa: F401  (the one key check, rag/store/users.py)
from rag.models import llm

HOST = "127.0.0.1"  # loopback only, unless a key is set
PORT = 8090
MAX_BODY = 1_000_000  # bytes of a request body
SOCKET_TIMEOUT = 300  # seconds a client may stall a read or write before its thread gives up


def loopback(host):
    """Example: loopback("127.0.0.1") -> True; loopback("localhost") -> True;
    loopback("0.0.0.0") -> False"""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def answer_slots(settings):
    """The answer server's parallel slots (llama-server /props total_slots), else 1."""
    try:
        props = llm.get_json(settings.server, "/props", api_key=settings.api_key,
                             missing=True) or {}
    except llm.LLMError as exc:
        print(f"Warnung: {exc} – Fragen scheitern, bis er läuft", file=sys.stderr)
        return 1
    return max(1, int(props.get("total_slots") or 1))


def with_status_line(events):
    """The page's events, "asking" with the status line the terminal shows (rag/doors/terminal.py
    status_line).

    Example: ("sources", {"sources": [four]}), ("asking", {"asking": "answer"})
             -> the sources as they are, then
             ("asking", {"asking": "answer",
                         "line": "4 Quellen gefunden · warte auf die Antwort des Modells …"})
    """
    found = 0
    for kind, data in events:
        if kind == "sources":
            found = len(data["sources"])
        elif kind == "asking":
            data = {**data, "line": terminal.status_line(found, data["asking"])}
        yield kind, data


class State:
    def __init__(self, settings, auth, gate, wiki=None):
        self.settings, self.auth, self.gate = settings, auth, gate  # auth: rag/store/users.py Auth
        self.wiki = wiki  # the wiki folder: the report reads the pages' owners there
        texts = {"/": pages.page_text(), "/bericht": pages.page_text(pages.REPORT_PAGE)}
        self.pages = {path: (text.encode("utf-8"), pages.csp(text))
                      for path, text in texts.items()}


class Handler(BaseHTTPRequestHandler):
    """One request: the routes of the module docstring; the server's State holds the settings, key
    and gate."""
    server_version = "rag-ohne-magie"
    protocol_version = "HTTP/1.1"  # streams chunked, replies with Content-Length, connections kept
    timeout = SOCKET_TIMEOUT
    streaming = False  # an event stream was started (stream()); end_stream() ends it

    @property
    def state(self):
        return self.server.state

    def setup(self):
        super().setup()
        # each event leaves at once
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    # -- replies ---------------------------------------------------------------------------
    def send_json(self, status, payload, headers=()):
        body = doors.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def send_error_json(self, status, message, api=False, headers=()):
        # an unread request body must not be taken for the next request
        self.close_connection = True
        kind = {401: "authentication_error", 503: "server_busy"}.get(status,
                                                                     "invalid_request_error")
        self.send_json(status, openai_api.error(message, kind) if api else {"error": message},
                       headers)

    def stream(self):
        """Start a text/event-stream response, chunked: each event is one HTTP chunk, sent at once;
        end_stream() ends it, after the question's place in the gate is free."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        # a proxy in front must not hold the events back
        self.send_header("X-Accel-Buffering", "no")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = self.streaming = True

    def end_stream(self):
        if self.streaming:
            self.wfile.write(b"0\r\n\r\n")

    def send_page(self, path="/"):
        """A page (/ or /bericht), with its Content-Security-Policy."""
        page, policy = self.state.pages[path]
        self.send_response(200)
        for name, value in (("Content-Type", "text/html; charset=utf-8"),
                            ("Content-Security-Policy", policy),
                            ("X-Content-Type-Options", "nosniff"),
                            ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store"),
                            ("Content-Length", str(len(page)))):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(page)

    def send_event(self, data, event=None):
        head = f"event: {event}\n" if event else ""
        body = (f"{head}data: {data if isinstance(data, str) else doors.dumps(data)}"
                f"\n\n").encode("utf-8")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(body), body))

    # -- requests --------------------------------------------------------------------------
    def authorised(self):
        """Who asks (rag/store/users.py): self.settings becomes the door's settings for that
        reader."""
        reader = users.identify(self.headers, self.client_address[0], self.state.auth)
        if reader is not None:
            self.settings = doors.request_settings(self.state.settings, reader=reader)
            return True
        self.send_error_json(401, "Schlüssel fehlt oder ist falsch – Authorization: Bearer "
                                  "SCHLÜSSEL senden (--serve-key / RAG_SERVE_KEY)",
                                  api=self.path.startswith("/v1/"),
                             headers=[("WWW-Authenticate",
                                       'Basic realm="RAG ohne Magie", charset="UTF-8"')])
        return False

    def read_json(self):
        """The request body as a JSON object, or None after an error reply."""
        api = self.path.startswith("/v1/")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY:
            self.send_error_json(413 if length > MAX_BODY else 400, f"Anfrage braucht einen "
                                 f"JSON-Körper (Content-Length 1 bis {MAX_BODY} Bytes)", api)
            return None
        try:
            body = json.loads(self.rfile.read(length))
        except (ValueError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict):
            self.send_error_json(400, "Anfrage ist kein JSON-Objekt – z. B. "
                                      "{\"question\": \"…\"} senden", api)
            return None
        return body

    def do_GET(self):
        if not self.authorised():
            return
        path = urlsplit(self.path).path
        if path in self.state.pages:
            self.send_page(path)
        elif path == "/api/bericht":
            self.send_json(*ratings.report_reply(self.settings, self.state.wiki, self.path))
        elif path == "/api/folders":
            self.send_json(200, {"folders": doors.folders(self.settings)})
        elif path == "/v1/models":
            self.send_json(200, openai_api.models(doors.folders(self.settings)))
        elif path == "/health":
            self.send_json(200, {"status": "ok", **self.state.gate.health()})
        else:
            self.send_error_json(404, f"{path} gibt es nicht – die Seite liegt unter /",
                                 path.startswith("/v1/"))

    def do_POST(self):
        if not self.authorised():
            return
        path = urlsplit(self.path).path
        if path not in ("/api/ask", "/v1/chat/completions", "/v1/feedback"):
            return self.send_error_json(404,
                                        f"{path} gibt es nicht – POST /api/ask oder "
                                        f"/v1/chat/completions", path.startswith("/v1/"))
        body = self.read_json()
        if body is None:
            return
        if path == "/v1/feedback":
            return self.send_json(*ratings.vote_reply(self.settings, body))
        api = path.startswith("/v1/")
        try:
            with self.state.gate.enter():
                (self.ask_openai if api else self.ask_page)(body)
            self.end_stream()  # the reader sees the end only once the place is free again
        except Busy as busy:
            self.send_error_json(503, str(busy), api, headers=[("Retry-After", str(busy.seconds))])
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass  # the reader went away; answer_events closed the model's stream

    def first(self, events, api):
        """The first event, or None after an error reply (an expected failure before any answer)."""
        try:
            return next(events)
        except core.CoreError as exc:
            self.send_error_json(400, str(exc), api)
            return None

    def ask_page(self, body):
        under = body.get("under") if isinstance(body.get("under"), str) else None
        question = body.get("question") if isinstance(body.get("question"), str) else ""
        # the page's last turns: a follow-up is read against them
        history = openai_api.turns(body.get("history"))
        events = doors.answer_events(question, doors.request_settings(self.settings, under),
                                     history)
        first = self.first(events, api=False)
        if first is None:
            return
        self.stream()
        try:
            for kind, data in with_status_line(itertools.chain([first], events)):
                self.send_event(data, kind)
        except core.CoreError as exc:
            self.send_event({"error": str(exc)}, "error")

    def ask_openai(self, body):
        question, history = openai_api.question_and_history(body.get("messages"))
        model = body.get("model") if isinstance(body.get("model"), str) else openai_api.MODEL
        under = (body.get("under") if isinstance(body.get("under"), str)
                 else openai_api.folder_of(model))
        events = doors.answer_events(question, doors.request_settings(self.settings, under),
                                     history)
        first = self.first(events, api=True)
        if first is None:
            return
        if body.get("stream") is not True:
            try:
                result = [data for kind, data in itertools.chain([first], events)
                          if kind == "done"][0]
            except core.CoreError as exc:
                return self.send_error_json(502, str(exc), api=True)
            return self.send_json(200, openai_api.completion(result, model))
        cid, streamed = openai_api.new_id(), False
        self.stream()
        self.send_event(openai_api.chunk(cid, model, {"role": "assistant", "content": ""}))
        try:
            for kind, data in itertools.chain([first], events):
                if kind == "searched" and openai_api.searched_line(data):
                    line = openai_api.searched_line(data)
                    self.send_event(openai_api.chunk(cid, model, {"content": line}))
                elif kind == "piece":
                    streamed = True
                    self.send_event(openai_api.chunk(cid, model, {"content": data["text"]}))
                elif kind == "done":
                    text = ("" if streamed else data["answer"] or "") + openai_api.footnotes(data)
                    self.send_event(openai_api.chunk(cid, model, {"content": text}))
                    self.send_event(openai_api.chunk(cid, model, finish="stop", result=data))
        except core.CoreError as exc:
            self.send_event(openai_api.error(str(exc), "server_error"))
        self.send_event("[DONE]")


class Server(ThreadingHTTPServer):
    """The threading HTTP server with the door's State; IPv6 when the host has a colon."""
    daemon_threads = True

    def __init__(self, address, state):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.state = state
        super().__init__(address, Handler)


def serve(settings, host=HOST, port=PORT, key=None, slots=None, queue=None, auth=None, wiki=None):
    """Serve the page and the API until Ctrl-C or SIGTERM; expected failures raise core.CoreError.
    auth: users, --serve-key and the proxy settings (rag/store/users.py Auth); else the one key.
    wiki: the wiki folder, where the report finds the pages' owners."""
    auth = auth or users.Auth(serve_key=key)
    key = auth.serve_key or auth.users or auth.trust_proxy
    if not loopback(host) and not key:
        raise core.CoreError(f"--host {host} ist von anderen Rechnern erreichbar – nur mit "
                             f"Schlüssel starten (--serve-key / RAG_SERVE_KEY) oder --host "
                             f"127.0.0.1")
    core.open_index(settings)[0].close()  # no index: say so now, not at the first question
    state = State(settings, auth, None, wiki)
    try:
        httpd = Server((host, port), state)
    except OSError as exc:
        raise core.CoreError(f"{host}:{port} lässt sich nicht öffnen ({exc.strerror}) – "
                             f"anderen Port mit --port wählen")
    slots = slots or answer_slots(settings)
    state.gate = gate = Gate(slots, slots if queue is None else queue)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    try:
        with doors.warm_embedder(settings) as embedder_note:
            # the system message in its prompt cache before the first question
            doors.warm_answer_server(settings)
            bound = httpd.server_address[1]
            where = f"http://{'[' + host + ']' if ':' in host else host}:{bound}"
            print(f"Web-Seite: {where}/\nOpenAI-API: {where}/v1 "
                  f"(Modell {openai_api.MODEL})\n{embedder_note}\n"
                  f"Antwort-Server: {settings.server} · {gate.slots} gleichzeitig, "
                  f"{gate.queue} in der Warteschlange"
                  f"{' · Schlüssel nötig' if key else ''} · Strg-C beendet", flush=True)
            httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    print("Beendet.", flush=True)


def stop(signum, frame):
    """SIGINT/SIGTERM: leave serve_forever, so the warm embedder is stopped with the server."""
    raise KeyboardInterrupt
