"""Talking to a running llama-server: health, chat template, streamed completions.

    for piece in stream_answer("http://127.0.0.1:8080", prompt, chat=False, max_tokens=160):
        print(piece, end="")

`/v1/chat/completions` when the model has a chat template (the server applies it), else the
post's plain prompt on `/v1/completions`, where a small base model rambles and repeats itself:
there the answer is held to one line (a GBNF grammar) and stops at an invented source block.
Streaming is Server-Sent Events: one `data: {…}` line per token, the last chunk carries
`finish_reason` and `timings`, then `data: [DONE]`.
Every request has a timeout; every failure becomes LLMError with one German line.

Does not handle: authentication (--api-key), tool calls, several choices, multi-line answers
from the plain prompt (drop ONE_LINE for those).
"""
import json

import requests

CONNECT_TIMEOUT = 5  # seconds to reach the server
READ_TIMEOUT = 120  # seconds the server may stay silent between two tokens
TEMPERATURE = 0.0  # deterministic answers
DRY_MULTIPLIER = 0.8  # "don't repeat yourself" sampler against loops (0 = off)
# Plain prompt only. Measured with Gemma 3 270M base on 10 wiki questions, one line + DRY against the
# old stop strings: about 20 instead of 157 tokens per answer, 0 instead of 6 answers stuck in a loop.
# (DRY alone: 4 loops; repeat_penalty 1.3: no loops, but answers drifted off the sources.)
ONE_LINE = r'root ::= [^\n]+ "\n"'  # GBNF: one line of text, then the model has to stop
STOP = ["<<<"]  # the model started to write a source block of its own


class LLMError(Exception):
    """llama-server failed; the message is one German line that names the fix."""


def hint_start(url):
    port = url.rsplit(":", 1)[-1].strip("/") if url.count(":") >= 2 else "8080"
    return f"starten mit: llama-server -m MODELL.gguf --host 127.0.0.1 --port {port}"


def get_json(url, path, timeout=CONNECT_TIMEOUT):
    try:
        response = requests.get(url.rstrip("/") + path, timeout=(CONNECT_TIMEOUT, timeout))
    except requests.ConnectionError:
        raise LLMError(f"llama-server unter {url} nicht erreichbar – {hint_start(url)}")
    except requests.Timeout:
        raise LLMError(f"llama-server unter {url} antwortet nicht (Timeout) – Server prüfen oder neu starten")
    if response.status_code == 503:
        raise LLMError(f"llama-server unter {url} lädt noch das Modell – kurz warten und erneut fragen")
    if response.status_code != 200:
        raise LLMError(f"llama-server unter {url} antwortete mit HTTP {response.status_code} auf {path} – "
                       f"ist das ein llama-server?")
    try:
        return response.json()
    except ValueError:
        raise LLMError(f"llama-server unter {url} lieferte kein JSON auf {path} – ist das ein llama-server?")


# llama-server reports this ChatML template when the model brings none of its own (e.g. Gemma base)
FALLBACK_TEMPLATE = "{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\n' + message.content"


def has_own_template(template):
    """True when the model brings a chat template (not llama-server's ChatML fallback)."""
    return bool(template.strip()) and not template.startswith(FALLBACK_TEMPLATE)


def server_info(url):
    """Check /health, then read /props: {"model": …, "chat_template": bool}."""
    get_json(url, "/health")
    props = get_json(url, "/props")
    template = props.get("chat_template") or ""
    model = props.get("model_alias") or props.get("model_path") or "?"
    return {"model": str(model).rsplit("/", 1)[-1], "chat_template": has_own_template(template),
            "build": props.get("build_info", "")}


def server_embedding(url, text):
    """(vector, model file name) from llama-server's /v1/embeddings; the server must run with
    `--embeddings --pooling mean` (then its vectors equal llama-embedding's, cosine > 0.9999).
    Saves the ~1 s model load of a llama-embedding process per question."""
    info = server_info(url)
    try:
        response = requests.post(url.rstrip("/") + "/v1/embeddings", json={"input": [text]},
                                 timeout=(CONNECT_TIMEOUT, READ_TIMEOUT))
        data = response.json() if response.status_code == 200 else None
        vector = data["data"][0]["embedding"] if data else None
    except (requests.RequestException, ValueError, KeyError, IndexError, TypeError):
        vector = None
    if not vector:
        raise LLMError(f"llama-server unter {url} liefert keine Embeddings – mit --embeddings --pooling mean "
                       f"starten oder --embed-via binary verwenden")
    return vector, info["model"]


def error_text(payload):
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        return error.get("message") or json.dumps(error, ensure_ascii=False)
    return str(error)


def stream_answer(url, prompt, chat, max_tokens, timings=None):
    """Yield the answer text as it is generated; fill `timings` (a dict) from the last chunk."""
    endpoint = "/v1/chat/completions" if chat else "/v1/completions"
    body = {"stream": True, "max_tokens": max_tokens, "temperature": TEMPERATURE, "dry_multiplier": DRY_MULTIPLIER,
            "cache_prompt": True}
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body.update(prompt=prompt, grammar=ONE_LINE, stop=STOP)
    try:
        response = requests.post(url.rstrip("/") + endpoint, json=body, stream=True,
                                 timeout=(CONNECT_TIMEOUT, READ_TIMEOUT))
    except requests.ConnectionError:
        raise LLMError(f"llama-server unter {url} nicht erreichbar – {hint_start(url)}")
    except requests.Timeout:
        raise LLMError(f"llama-server unter {url} antwortet nicht (Timeout {READ_TIMEOUT} s) – Server prüfen")
    with response:
        if response.status_code == 503:
            raise LLMError(f"llama-server unter {url} lädt noch das Modell – kurz warten und erneut fragen")
        if response.status_code != 200:
            try:
                detail = error_text(response.json())
            except ValueError:
                detail = response.text[:200]
            raise LLMError(f"llama-server meldet HTTP {response.status_code}: {detail} – Server-Log prüfen")
        done = False
        try:
            for line in response.iter_lines():
                if line.startswith(b"error:"):  # older llama-server: a separate SSE event
                    line = b'data: {"error": ' + line[6:] + b"}"
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    done = True
                    break
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise LLMError("llama-server sendete einen unlesbaren Stream-Abschnitt – Server-Version prüfen")
                if "error" in chunk:
                    raise LLMError(f"llama-server meldet mitten in der Antwort einen Fehler: {error_text(chunk)} – "
                                   f"Server-Log prüfen, ggf. mit größerem Kontext (-c) neu starten")
                if timings is not None and chunk.get("timings"):
                    timings.update(chunk["timings"])
                for choice in chunk.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") if chat else choice.get("text")
                    if piece:
                        yield piece
        except requests.exceptions.ChunkedEncodingError:
            raise LLMError("Verbindung zu llama-server brach mitten in der Antwort ab – Server-Log prüfen")
        except requests.exceptions.ConnectionError:
            raise LLMError(f"llama-server antwortete {READ_TIMEOUT} s lang nicht – Server prüfen")
        if not done:
            raise LLMError("Antwort von llama-server endete ohne [DONE] – unvollständig; Server-Log prüfen")
