"""Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint, many texts per request.

    vectors, model = embed_texts(["Mailbox anlegen", "VPN"], "http://127.0.0.1:8080")
    -> [[0.012, -0.031, ...], [...]], "gemma-3-270m-q4_k_m.gguf"   # L2-normalised, in order

Works with llama-server (`--embeddings --pooling mean`), Ollama (`http://127.0.0.1:11434`), vLLM,
text-embeddings-inference and other servers that speak the OpenAI embeddings API. The URL may be
the server (`http://host:port`), its OpenAI base (`…/v1`) or the endpoint itself
(`…/v1/embeddings`). `model` is sent when a name is given (Ollama and vLLM need it); an API key
goes out as `Authorization: Bearer …`. Every vector is checked like llama-embedding's (count,
dimension, finite, non-zero) and L2-normalised, because not every server normalises.

Which model embedded (for the index's model check): the name given, else the one model the server
lists on `/v1/models`, else the response's `model`; a path is cut to its file name, so llama-server
reports "gemma-3-270m-q4_k_m.gguf" like the file the post's way records.

A text longer than the model's context (llama-server: HTTP 400 "exceed_context_size_error", e.g.
multilingual-e5 with 512 tokens) is cut to fit by embed_fitted, like rag/models/embed_binary.py does
it.

Does not handle: base64 or token-array inputs, retries, rate limits, other servers' errors for
too-long inputs (their message is shown; Ollama and TEI truncate by themselves).
"""
from rag.models import http
from rag.models.embedding import EmbeddingError, check_vectors
from rag.models.http import base_url
from rag.store.vectors import normalise

READ_TIMEOUT = 120  # seconds for one request, plus PER_TEXT_TIMEOUT per text in it
PER_TEXT_TIMEOUT = 2
# llama-server's error type for a prompt longer than the context
TOO_LONG = "exceed_context_size_error"


class TooLong(EmbeddingError):
    """One of the texts has more tokens than the server's context (`tokens` > `limit`)."""

    def __init__(self, message, tokens, limit):
        super().__init__(message)
        self.tokens, self.limit = tokens, limit


def model_label(name):
    """A model as the index records it: a file path is cut to its file name, other names stay.

    Example: model_label("/models/gemma-3-270m-q4_k_m.gguf") -> "gemma-3-270m-q4_k_m.gguf";
             model_label("intfloat/multilingual-e5-small") -> "intfloat/multilingual-e5-small"
    """
    name = str(name).replace("\\", "/").rstrip("/")
    is_path = name.startswith(("/", ".", "~")) or name.lower().endswith(".gguf")
    return name.rsplit("/", 1)[-1] if is_path else name


def hint_start(url):
    return http.start_hint(url, "--embeddings --pooling mean ") + (" (oder --embed-url / "
                                                                   "RAG_EMBED_URL prüfen)")


def request(method, url, path, api_key, timeout, body=None):
    """One HTTP call (rag/models/http.py); expected failures become EmbeddingError with one German
    line."""
    server = http.Server(base_url(url), EmbeddingError, name="Embedding-Server",
                         start_hint=hint_start(url),
                         slow_hint="Server prüfen, RAG_EMBED_TIMEOUT erhöhen oder Batch "
                                   "verkleinern (RAG_EMBED_BATCH)", api_key=api_key)
    return server.send(method, path, timeout, json=body)


def served_model(url, api_key=None, timeout=READ_TIMEOUT):
    """The only model listed on /v1/models (its label), or None when the server lists none or
    several."""
    response = request("GET", url, "/v1/models", api_key, timeout)
    try:
        ids = [m["id"] for m in response.json()["data"]] if response.status_code == 200 else []
    except (ValueError, KeyError, TypeError):
        ids = []
    return model_label(ids[0]) if len(ids) == 1 else None


def parse_embeddings(response, url, expected):
    """Vectors from an OpenAI embeddings response, ordered by "index", checked and normalised."""
    where = f"Embedding-Server unter {base_url(url)}"
    if response.status_code == 503:
        raise EmbeddingError(f"{where} lädt noch das Modell – kurz warten und erneut starten")
    if response.status_code == 400:
        try:
            error = response.json()["error"]
            if error.get("type") == TOO_LONG:
                raise TooLong(f"{where}: {error.get('message')}", int(error["n_prompt_tokens"]),
                              int(error["n_ctx"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    if response.status_code != 200:
        raise EmbeddingError(f"{where} liefert keine Embeddings (HTTP {response.status_code}: "
                             f"{http.error_detail(response)}) – llama-server mit --embeddings "
                             f"--pooling mean starten, Modellname prüfen (--embed-model-name) "
                             f"oder --embed-via binary verwenden")
    try:
        payload = response.json()
        items = sorted(payload["data"], key=lambda item: item["index"])
        vectors = [item["embedding"] for item in items]
    except (ValueError, KeyError, TypeError):
        raise EmbeddingError(f"{where} lieferte keine lesbare Antwort (kein JSON im OpenAI-Format) "
                             f"– ist das ein OpenAI-kompatibler /v1/embeddings-Endpunkt?")
    vectors = check_vectors(vectors, expected, source=where)
    return [normalise(v) for v in vectors], payload.get("model")


def embed_texts(texts, url, model_name=None, api_key=None, timeout=None, identify=True):
    """(vectors, model label) for `texts`, in order, from one POST to the server's /v1/embeddings.

    `identify=False` skips asking /v1/models (a caller embedding many batches asks once).
    """
    if not texts:
        return [], model_name
    timeout = timeout or READ_TIMEOUT + PER_TEXT_TIMEOUT * len(texts)
    body = {"input": list(texts), **({"model": model_name} if model_name else {})}
    response = request("POST", url, "/v1/embeddings", api_key, timeout, body)
    vectors, reported = parse_embeddings(response, url, len(texts))
    if model_name:  # a server with several models (Ollama, vLLM) embeds with the one named
        return vectors, model_label(model_name)
    listed = served_model(url, api_key) if identify else None
    return vectors, listed or (model_label(reported) if reported else None)


def identify(url, model_name=None, api_key=None):
    """The model label the index records for a server: the name given, else the one model on
    /v1/models, else the `model` of a probe embedding. Also checks that the server answers at all.

    Example: identify("http://127.0.0.1:8080") -> "gemma-3-270m-q4_k_m.gguf"   (llama-server)
    """
    _, label = embed_texts(["Test"], url, model_name, api_key)
    if not label:
        raise EmbeddingError(f"Embedding-Server unter {base_url(url)} nennt kein eindeutiges "
                             f"Modell – Modellnamen mit --embed-model-name / "
                             f"RAG_EMBED_MODEL_NAME angeben")
    return label


def embed_fitted(texts, url, model_name=None, api_key=None, timeout=None):
    """Vectors for `texts` (embed_texts without asking for the model); a batch with a text longer
    than the context is embedded in halves, and that text is cut to the share of characters that
    fits.

    Example: one text of 1,317 tokens, context 512 -> its first 496/1317 of the characters
    """
    try:
        return embed_texts(texts, url, model_name, api_key, timeout, identify=False)[0]
    except TooLong as exc:
        if len(texts) > 1:
            half = len(texts) // 2
            return (embed_fitted(texts[:half], url, model_name, api_key, timeout)
                    + embed_fitted(texts[half:], url, model_name, api_key, timeout))
        keep = len(texts[0]) * (exc.limit - 16) // max(exc.tokens, 1)
        if keep < 1 or keep >= len(texts[0]):
            raise
        return embed_fitted([texts[0][:keep]], url, model_name, api_key, timeout)
