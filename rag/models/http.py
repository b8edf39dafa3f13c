"""The one HTTP client for the model servers: timeouts that grow with the request, the API key,
error lines.

    server = Server("http://127.0.0.1:8080", LLMError,
                    start_hint=start_hint("http://127.0.0.1:8080"))
    server.send("POST", "/v1/chat/completions", read_timeout(30, prompt, 40), retries=1, json=body)
    -> the requests.Response;
       unreachable, silent, key refused: LLMError("llama-server unter … – …")

Timeouts scale with what is asked: a request may take `base` seconds plus what a machine reading the
prompt at PROMPT_FLOOR and writing at GENERATE_FLOOR tokens per second needs, so a busy machine
(other processes, load 4 on 2 cores) is slow, not broken. A request that may be sent twice (no side
effects) can get one retry after a timeout; the retry says so on stderr.

`requests` is imported on the first request, so --retrieve-only never loads it.

Does not handle: streaming itself (rag/models/llm.py reads the events), retries after a connection
error (a server that is down stays down), rate limits.
"""
import sys

CONNECT_TIMEOUT = 5  # seconds to reach the server
# tokens per second a busy machine still reads a prompt at (assumed floor, not measured: a 1.5B
PROMPT_FLOOR = 20
#                   model on 2 free cores reads ~100–200)
# tokens per second it still writes at (assumed floor; 2 free cores: ~10–20 for 1.5B)
GENERATE_FLOOR = 2
# a German token covers about 3–4 UTF-8 bytes; 3 errs on the side of more time
BYTES_PER_TOKEN = 3
AUTH_HINT = "API-Schlüssel fehlt oder ist falsch – --api-key / RAG_API_KEY setzen"


def read_timeout(base, prompt="", max_tokens=0):
    """Seconds to wait for an answer: base, plus the prompt and the answer at the floor speeds.

    Example: read_timeout(30, "x" * 600, 40) -> 30 + 200/20 + 40/2 = 60.0
    """
    tokens = len(prompt.encode("utf-8")) / BYTES_PER_TOKEN
    return round(base + tokens / PROMPT_FLOOR + max_tokens / GENERATE_FLOOR, 1)


def auth_headers(api_key):
    """Example: auth_headers("geheim") -> {"Authorization": "Bearer geheim"};
    auth_headers(None) -> {}"""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def base_url(url):
    """The server part of an OpenAI-style URL.

    Example: base_url("http://127.0.0.1:11434/v1/embeddings") -> "http://127.0.0.1:11434"
    """
    url = url.rstrip("/")
    for suffix in ("/embeddings", "/v1"):
        if url.endswith(suffix):
            url = url[:-len(suffix)]
    return url


def start_hint(url, flags=""):
    """How to start llama-server on the URL's port.

    Example: start_hint("http://127.0.0.1:9000/v1", "--embeddings ") ->
             "starten mit: llama-server -m MODELL.gguf --embeddings --host 127.0.0.1 --port 9000"
    """
    server = base_url(url)
    port = server.rsplit(":", 1)[-1] if server.count(":") >= 2 else "8080"
    return f"starten mit: llama-server -m MODELL.gguf {flags}--host 127.0.0.1 --port {port}"


def error_message(payload):
    """The server's own error message from a JSON body, short.

    Example: {"error": {"message": "KV-Cache voll"}} -> "KV-Cache voll"; {"detail": "x"} -> "x"
    """
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        error = error.get("message") or error
    return str(error or (payload.get("detail") if isinstance(payload, dict) else None)
               or payload)[:200]


def error_detail(response):
    """error_message of a response, or the start of its text when it is not JSON."""
    try:
        return error_message(response.json())
    except ValueError:
        return response.text.strip()[:200] or "?"


class Server:
    """One model server as messages name it: where it is, how to start it, which error its failures
    raise."""

    def __init__(self, url, error, name="llama-server", start_hint="", slow_hint="Server prüfen",
                 api_key=None, auth_name=None):
        self.url, self.error, self.name, self.api_key = url, error, name, api_key
        self.start_hint, self.slow_hint, self.auth_name = start_hint, slow_hint, auth_name or name

    def send(self, method, path, timeout, retries=0, stream=False, **kwargs):
        """One request to url + path; a timeout is retried `retries` times (one line on stderr
        each).

        Raises self.error for: unreachable, silent for `timeout` seconds, key refused (401/403).
        """
        # only here: importing the models (split_chat for the prompt) needs no HTTP library
        import requests

        for attempt in range(retries + 1):
            try:
                response = requests.request(method, self.url.rstrip("/") + path,
                                            headers=auth_headers(self.api_key),
                                            timeout=(CONNECT_TIMEOUT, timeout), stream=stream,
                                            **kwargs)
                break
            except requests.ConnectionError:  # also a connect timeout: the server is not there
                raise self.error(f"{self.name} unter {self.url} nicht erreichbar "
                                 f"– {self.start_hint}") from None
            except requests.Timeout:
                if attempt < retries:
                    self.warn_retry(timeout)
                    continue
                raise self.error(f"{self.name} unter {self.url} antwortete nicht innerhalb "
                                 f"von {timeout} s – {self.slow_hint}") from None
        if response.status_code in (401, 403):
            response.close()
            raise self.error(f"{self.auth_name} unter {self.url}: {AUTH_HINT}")
        return response

    def warn_retry(self, timeout):
        print(f"Warnung: {self.name} unter {self.url} antwortete nicht innerhalb von {timeout} s "
              f"(Rechner ausgelastet?) – zweiter Versuch", file=sys.stderr, flush=True)
