"""Talking to a running llama-server: health, chat template, streamed completions, short JSON
answers.

    for piece in stream_answer("http://127.0.0.1:8080", prompt, chat=False, max_tokens=160):
        print(piece, end="")
    complete_json(url, messages, {"type": "array", "items": {"type": "string"}}, 40)
    # -> ["Quota", …]

`/v1/chat/completions` when the model has a chat template (the server applies it), else the
post's plain prompt on `/v1/completions`, where a small base model rambles and repeats itself:
there the answer is held to one line (a GBNF grammar) and stops at an invented source block.
Streaming is Server-Sent Events: one `data: {…}` line per token, the last chunk carries
`finish_reason` and `timings`, then `data: [DONE]`.
Every request has a timeout that grows with the prompt and max_tokens (rag/models/http.py); every
failure becomes LLMError with one German line. `split_chat` turns a chat prompt into its system and
user messages. Other OpenAI-compatible servers work too (Ollama, vLLM): an API key goes out as
`Authorization: Bearer …` on every request, a model name as `model`; without /props (llama-server
only) the chat template is assumed and the model name comes from /v1/models.

What the model read: llama-server reports in every completion's "timings" (the response's, or the
last stream chunk's) `prompt_n`, the prompt tokens it evaluated, and `cache_n`, those it took from
its prompt cache. read_entry keeps both per call; total_read sums what was evaluated, the work that
stands before the first answer token on any machine. prompt_speed measures that machine once.

Does not handle: tool calls, several choices, multi-line answers from the plain prompt (drop
ONE_LINE for those), llama-server's extra fields (grammar, dry_multiplier) on servers that reject
them.
"""
import json

from rag.models import http
from rag.models.http import CONNECT_TIMEOUT
from rag.models.answer_stream import with_prefill

# seconds the server may stay silent between two tokens (plus the prompt's reading time)
READ_TIMEOUT = 120
TEMPERATURE = 0.0  # deterministic answers
# "don't repeat yourself" sampler against loops (0 = off); plain prompt only: on the chat path it
# garbled copied commands ("cm user/jana.kruse/Sent" -> "cm user/jana.krUSE/Sent")
DRY_MULTIPLIER = 0.8
# Plain prompt only. Measured with Gemma 3 270M base on 10 wiki questions, one line + DRY against
# the old stop strings: about 20 instead of 157 tokens per answer, 0 instead of 6 answers stuck in
# a loop.
# (DRY alone: 4 loops; repeat_penalty 1.3: no loops, but answers drifted off the sources.)
ONE_LINE = r'root ::= [^\n]+ "\n"'  # GBNF: one line of text, then the model has to stop
STOP = ["<<<"]  # the model started to write a source block of its own


class LLMError(Exception):
    """llama-server failed; the message is one German line that names the fix."""


def hint_start(url):
    return http.start_hint(url)


def server(url, api_key=None):
    """The answer server as rag/models/http.py reaches it."""
    return http.Server(url, LLMError, start_hint=hint_start(url),
                       slow_hint="Server prüfen oder neu starten", api_key=api_key,
                       auth_name="Server")


def split_chat(prompt, system):
    """Chat messages from a prompt that begins with the system message and a blank line.

    Example: split_chat("Regeln.\n\nFrage: x", "Regeln.")
             -> [{"role": "system", "content": "Regeln."}, {"role": "user", "content": "Frage: x"}]
    A prompt without `system` in front becomes one user message.
    """
    head = system + "\n\n"
    if prompt.startswith(head):
        return [{"role": "system", "content": system},
                {"role": "user", "content": prompt[len(head):]}]
    return [{"role": "user", "content": prompt}]


def send(method, url, path, timeout, api_key=None, retries=0, **kwargs):
    """One request, not streamed; unreachable, silent, key refused, model loading: LLMError (one
    line)."""
    response = server(url, api_key).send(method, path, timeout, retries=retries, **kwargs)
    if response.status_code == 503:
        raise LLMError(f"llama-server unter {url} lädt noch das Modell – kurz warten und erneut "
                       f"fragen")
    return response


def get_json(url, path, timeout=CONNECT_TIMEOUT, api_key=None, missing=False):
    """GET url+path as JSON; `missing=True`: None for 404 (an endpoint only llama-server has)."""
    response = send("GET", url, path, timeout, api_key, retries=1)
    if missing and response.status_code in (404, 405):
        return None
    if path == "/health" and response.status_code == 200:
        return {}  # vLLM answers /health with an empty body
    if response.status_code != 200:
        raise LLMError(f"llama-server unter {url} antwortete mit HTTP {response.status_code} "
                       f"auf {path} – ist das ein llama-server?")
    try:
        return response.json()
    except ValueError:
        raise LLMError(f"llama-server unter {url} lieferte kein JSON auf {path} – ist das ein "
                       f"llama-server?")


# llama-server reports this ChatML template when the model brings none of its own (e.g. Gemma base)
FALLBACK_TEMPLATE = ("{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\n' "
                     "+ message.content")


def has_own_template(template):
    """True when the model brings a chat template (not llama-server's ChatML fallback)."""
    return bool(template.strip()) and not template.startswith(FALLBACK_TEMPLATE)


def listed_model(url, api_key=None):
    """The first model id on /v1/models, or None.
    Example: {"data": [{"id": "qwen2.5:3b"}]} -> "qwen2.5:3b" """
    models = get_json(url, "/v1/models", api_key=api_key, missing=True) or {}
    try:
        return str(models["data"][0]["id"])
    except (KeyError, IndexError, TypeError):
        return None


def server_info(url, api_key=None, model_name=None):
    """Check /health, then read /props: {"model": …, "chat_template": bool}.

    Servers without /health (Ollama) are checked by the next request; servers without /props
    (Ollama, vLLM) apply the model's own chat template, so chat is assumed there.
    """
    get_json(url, "/health", api_key=api_key, missing=True)
    props = get_json(url, "/props", api_key=api_key, missing=True)
    if props is None:
        model = model_name or listed_model(url, api_key) or "?"
        return {"model": str(model).rsplit("/", 1)[-1], "chat_template": True, "build": "",
                "prefill": False}
    template = props.get("chat_template") or ""
    model = model_name or props.get("model_alias") or props.get("model_path") or "?"
    # llama-server continues an assistant message
    return {"model": str(model).rsplit("/", 1)[-1], "chat_template": has_own_template(template),
            "build": props.get("build_info", ""), "prefill": True}


def http_error(response, where=""):
    """LLMError for a reply other than 200, with the server's own error message.

    Example: HTTP 500 {"error": {"message": "KV-Cache voll"}}
             -> "llama-server meldet HTTP 500: KV-Cache voll – Server-Log prüfen"
    """
    return LLMError(f"llama-server meldet "
                    f"HTTP {response.status_code}{where}: {http.error_detail(response)} – "
                    f"Server-Log prüfen")


def stream_answer(url, prompt, chat, max_tokens, timings=None, api_key=None, model_name=None,
                  prefill=None, system=""):
    """Yield the answer text as it is generated; fill `timings` (a dict) from the last chunk.

    `model_name` goes out as "model" (Ollama, vLLM need it), `api_key` as a Bearer token; chat:
    `system` is the system message the prompt begins with (split_chat); `prefill` (chat only): the
    start of the answer, which the model continues (llama-server).
    """
    body = request_body(prompt, chat, max_tokens, model_name, prefill, system)
    pieces = stream_pieces(url, body, chat, timings, api_key,
                           http.read_timeout(READ_TIMEOUT, prompt))
    return with_prefill(pieces, prefill) if prefill and chat else pieces


def request_body(prompt, chat, max_tokens, model_name, prefill, system):
    """The JSON of a streamed completion: chat messages, or the plain prompt held to one line."""
    body = {"stream": True, "max_tokens": max_tokens, "temperature": TEMPERATURE,
            "cache_prompt": True}
    if model_name:
        body["model"] = model_name
    if chat:
        # constant system message first, then sources + question
        body["messages"] = split_chat(prompt, system)
        if prefill:
            body["messages"].append({"role": "assistant", "content": prefill})
        body["stop"] = STOP  # a small chat model, too, may go on writing a source block of its own
    else:
        body.update(prompt=prompt, grammar=ONE_LINE, stop=STOP, dry_multiplier=DRY_MULTIPLIER)
    return body


def stream_pieces(url, body, chat, timings, api_key, timeout):
    import requests  # only here, as in rag/models/http.py

    endpoint = "/v1/chat/completions" if chat else "/v1/completions"
    response = send("POST", url, endpoint, timeout, api_key, stream=True, json=body)
    with response:
        if response.status_code != 200:
            raise http_error(response)
        try:
            yield from events(response, chat, timings)
        except requests.exceptions.ChunkedEncodingError:
            raise LLMError("Verbindung zu llama-server brach mitten in der Antwort ab – "
                           "Server-Log prüfen")
        except requests.exceptions.ConnectionError:
            raise LLMError(f"llama-server antwortete {timeout} s lang nicht – Server prüfen")


def events(response, chat, timings):
    """The text pieces of a Server-Sent Events stream; `timings` from its last chunk; LLMError for
    an error event, an unreadable one, or a stream without [DONE]."""
    for line in response.iter_lines():
        if line.startswith(b"error:"):  # older llama-server: a separate SSE event
            line = b'data: {"error": ' + line[6:] + b"}"
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raise LLMError("llama-server sendete einen unlesbaren Stream-Abschnitt – "
                           "Server-Version prüfen")
        if "error" in chunk:
            raise LLMError(f"llama-server meldet mitten in der Antwort einen "
                           f"Fehler: {http.error_message(chunk)} – Server-Log prüfen, ggf. mit "
                           f"größerem Kontext (-c) neu starten")
        if timings is not None and chunk.get("timings"):
            timings.update(chunk["timings"])
        for choice in chunk.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
            if piece:
                yield piece
    raise LLMError("Antwort von llama-server endete ohne [DONE] – unvollständig; Server-Log "
                   "prüfen")


SEED = 42  # fixed sampling seed for short structured calls: the same question gives the same output
# seconds a short structured call (search phrases, a rewritten question) may take on an idle
SHORT_TIMEOUT = 30
#                   machine; plus the prompt and max_tokens at http.py's floor speeds, and one retry


def complete_json(url, messages, schema, max_tokens, api_key=None, model_name=None, timeout=None,
                  read=None, call="search"):
    """One chat completion whose text must follow a JSON schema; returns the parsed JSON.
    `read` (a list): gets read_entry(call, …) of the response, what the model read of this prompt.

    The schema goes out as OpenAI's `response_format` (llama-server turns it into a grammar, so the
    text always parses); temperature 0, a fixed seed and no prompt cache make the answer repeatable.
    Example: messages [{"role": "user", "content": "Drei Farben"}], {"type": "array", …}
             -> ["rot", "grün", "blau"]
    """
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": TEMPERATURE,
            # a prompt taken partly from the cache is computed in other
            "seed": SEED, "cache_prompt": False, "stream": False,
            # batches, and the output can differ (seen: another set of search phrases for the same
            # question)
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "antwort", "schema": schema}}}
    if model_name:
        body["model"] = model_name
    text = "".join(str(m.get("content", "")) for m in messages)
    timeout = timeout or http.read_timeout(SHORT_TIMEOUT, text, max_tokens)
    response = send("POST", url, "/v1/chat/completions", timeout, api_key, retries=1, json=body)
    if response.status_code != 200:
        raise http_error(response)
    try:
        reply = response.json()
        if read is not None:
            read.append(read_entry(call, reply))
        return json.loads(reply["choices"][0]["message"]["content"])
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise LLMError(f"llama-server unter {url} lieferte kein gültiges JSON nach Schema – "
                       f"Server-Version prüfen")


# -- what the model read: prompt tokens per call, and the machine's reading speed ------------------
CALIBRATION = " ".join(["Die Mailbox wird mit cyradm angelegt, die Quota mit sq gesetzt und mit lm "
                        "geprüft."] * 10)
# a fixed prompt of about 256 tokens (llama-server /tokenize: Qwen2.5 250, Gemma 3 221), read once
#             without the prompt cache


def read_entry(call, reply):
    """What one call read of its prompt, from its response body (or {"timings": …} of a stream's
    last chunk).

    Example: read_entry("check", {"timings": {"prompt_n": 12, "cache_n": 400}})
             -> {"call": "check", "prompt_n": 12, "cached": 400}
                (the 400 from the cache are not read again)
             read_entry("answer", {}) -> {"call": "answer", "prompt_n": None}
                 (a server without timings)
    """
    timings = (reply or {}).get("timings") or {}
    entry = {"call": call, "prompt_n": timings.get("prompt_n")}
    if "cache_n" in timings:
        entry["cached"] = timings["cache_n"]
    return entry


def total_read(entries):
    """The prompt tokens read over all calls; None when a call's server gave no count (not 0).

    Example: [{"call": "check", "prompt_n": 412}, {"call": "answer", "prompt_n": 52}] -> 464;
             [] -> 0
    """
    counts = [e.get("prompt_n") for e in entries]
    return None if None in counts else sum(counts)


def warm(url, system, api_key=None, model_name=None):
    """Read the fixed system message once, so llama-server's prompt cache holds it before the first
    question (its check then reads ~160 tokens fewer). For servers the project starts itself (the
    demo, the evaluation, the benchmarks) and at `--serve` start; best effort: the read_entry, or
    None when the server fails.

    Example: warm("http://127.0.0.1:8080", prompt.SYSTEM)
             -> {"call": "warm", "prompt_n": 161, "cached": 0}
    """
    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": ""}],
            "max_tokens": 1, "temperature": TEMPERATURE, "cache_prompt": True, "stream": False,
            **({"model": model_name} if model_name else {})}
    try:
        response = send("POST", url, "/v1/chat/completions",
                        http.read_timeout(SHORT_TIMEOUT, system), api_key, json=body)
        return read_entry("warm", response.json()) if response.status_code == 200 else None
    except (LLMError, ValueError):
        return None


def prompt_speed(url, api_key=None, model_name=None):
    """The server's reading speed from one request of CALIBRATION without the prompt cache:
    {"prompt_n", "prompt_ms", "tokens_per_s"}, or None when the server reports no timings.

    Example: prompt_speed("http://127.0.0.1:8080")
             -> {"prompt_n": 250, "prompt_ms": 1470.6, "tokens_per_s": 170.0}
    """
    body = {"prompt": CALIBRATION, "max_tokens": 1, "temperature": TEMPERATURE,
            "cache_prompt": False, "stream": False, **({"model": model_name} if model_name else {})}
    response = send("POST", url, "/v1/completions", http.read_timeout(SHORT_TIMEOUT, CALIBRATION),
                    api_key, json=body)
    if response.status_code != 200:
        raise http_error(response, " bei der Kalibrierung")
    try:
        timings = response.json().get("timings") or {}
    except (ValueError, AttributeError):
        return None
    n, ms = timings.get("prompt_n"), timings.get("prompt_ms")
    if not n or not ms:
        return None
    return {"prompt_n": n, "prompt_ms": round(ms, 1), "tokens_per_s": round(n / (ms / 1000), 1)}
