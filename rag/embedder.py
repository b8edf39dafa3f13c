"""Embeddings from llama.cpp's `llama-embedding` binary, many texts per process.

    embed_texts(["Mailbox anlegen", "VPN"], "llama-embedding", "model.gguf")
    -> [[0.012, -0.031, ...], [...]]   # one L2-normalised vector per text

The post started one process per chunk and parsed the text output; with today's llama.cpp that
reads 6 floats of token 0 (pooling "none"). We ask for mean pooling, L2 normalisation and JSON
output instead, pass all texts of a batch in one prompt file (a long text is no command-line
argument) joined by a separator that cannot occur in Markdown by accident, and size the context
to the batch: a token is at least one UTF-8 byte, so `bytes + 16` is a safe upper bound for the
tokens of a prompt, and -c/-b/-ub of that size never fail with "exceeds batch size".

Does not handle: tokenizer-exact sizing (no tokenizer here), GPU offload flags.
"""
import json
import math
import os
import subprocess
import tempfile

SEPARATOR = "<#sep#>"  # --embd-separator; the default "\n" would split multi-line chunks
MIN_CONTEXT = 512  # -c/-b/-ub never smaller than this
MAX_CONTEXT = 8192  # and never larger: texts that do not fit are shortened by the caller
DEFAULT_TIMEOUT = 120  # seconds for one llama-embedding process, plus 2 s per text
POOLING = "mean"


class EmbeddingError(Exception):
    """llama-embedding failed or printed something we cannot trust; the message is German."""


def token_bound(text):
    """Upper bound for the number of tokens of `text` (every token covers at least one byte).

    Example: token_bound("Größe") -> 7 + 16 = 23
    """
    return len(text.encode("utf-8")) + 16


def context_size(texts):
    """-c/-b/-ub for a batch: the longest prompt must fit; rounded up to a multiple of 256."""
    need = max(token_bound(t) for t in texts)
    size = max(MIN_CONTEXT, -(-need // 256) * 256)
    return min(size, MAX_CONTEXT)


def fits(text):
    """Does one prompt fit the largest context we ask for? build_index.py splits chunks until it does."""
    return token_bound(text) <= MAX_CONTEXT


def fit_to_context(text):
    """Cut a text so that its token bound fits MAX_CONTEXT (last resort, e.g. a giant heading)."""
    if fits(text):
        return text
    return text.encode("utf-8")[:MAX_CONTEXT - 16].decode("utf-8", errors="ignore")


def run_env():
    """llama-embedding's environment: LLAMA_ARG_FIT=off skips llama.cpp's memory-fitting trial run
    (about 0.45 s per process, bench/ask_latency.py); older builds ignore it; the caller's value wins."""
    return {"LLAMA_ARG_FIT": "off", **os.environ}


def build_command(binary, model, prompt_file, n_ctx, threads=None):
    cmd = [binary, "-m", model, "-f", prompt_file,
           "--pooling", POOLING, "--embd-normalize", "2", "--embd-output-format", "json",
           "--embd-separator", SEPARATOR,
           "-c", str(n_ctx), "-b", str(n_ctx), "-ub", str(n_ctx),
           "--no-warmup"]  # the warm-up decode costs ~2 s per process and changes no vector
    if threads:
        cmd += ["-t", str(threads)]
    return cmd


def parse_output(stdout, expected):
    """Parse llama-embedding's JSON and check every vector; raise EmbeddingError if anything is off.

    Example: parse_output('{"data":[{"index":0,"embedding":[0.6,0.8]}]}', 1) -> [[0.6, 0.8]]
    """
    start = stdout.find("{")
    try:
        data = json.loads(stdout[start:])["data"] if start >= 0 else None
    except (ValueError, KeyError, TypeError):
        data = None
    if not isinstance(data, list):
        raise EmbeddingError("llama-embedding lieferte kein gültiges JSON – Version prüfen "
                             "(benötigt --embd-output-format json).")
    vectors = [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]
    if len(vectors) != expected:
        raise EmbeddingError(f"llama-embedding lieferte {len(vectors)} statt {expected} Vektoren – "
                             "nichts aus diesem Batch gespeichert; llama.cpp-Version prüfen.")
    dims = {len(v) for v in vectors}
    if len(dims) != 1 or 0 in dims:
        raise EmbeddingError(f"llama-embedding lieferte Vektoren unterschiedlicher Länge {sorted(dims)}.")
    for v in vectors:
        if not all(math.isfinite(x) for x in v):
            raise EmbeddingError("llama-embedding lieferte NaN/Inf – anderes Modell oder --pooling prüfen.")
        if not any(v):
            raise EmbeddingError("llama-embedding lieferte einen Nullvektor – anderes Modell prüfen.")
    return vectors


def embed_texts(texts, binary, model, threads=None, timeout=None):
    """Embed `texts` with one llama-embedding process; returns one vector per text, in order."""
    if not texts:
        return []
    texts = [fit_to_context(t).replace(SEPARATOR, " ") for t in texts]
    if not os.path.isfile(binary):
        raise EmbeddingError(f"llama-embedding nicht gefunden ({binary}) – einrichten mit: "
                             f"python3 scripts/setup_llama.py oder LLAMA_EMBEDDING=/pfad/zu/llama-embedding")
    if not os.path.isfile(model):
        raise EmbeddingError(f"Embedding-Modell nicht gefunden ({model}) – einrichten mit: "
                             f"python3 scripts/setup_llama.py oder RAG_EMBED_MODEL=/pfad/zu/modell.gguf")
    timeout = timeout or DEFAULT_TIMEOUT + 2 * len(texts)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write(SEPARATOR.join(texts))  # no separator after the last prompt: it adds a junk vector
        prompt_file = f.name
    try:
        cmd = build_command(binary, model, prompt_file, context_size(texts), threads)
        try:
            result = subprocess.run(cmd, capture_output=True, timeout=timeout, env=run_env())
        except subprocess.TimeoutExpired:
            raise EmbeddingError(f"llama-embedding antwortete nicht innerhalb von {timeout} s – "
                                 f"RAG_EMBED_TIMEOUT erhöhen oder Batch verkleinern (RAG_EMBED_BATCH).")
        except OSError as exc:
            raise EmbeddingError(f"llama-embedding ließ sich nicht starten ({exc.strerror}) – Pfad prüfen: {binary}")
    finally:
        os.unlink(prompt_file)
    if result.returncode != 0:
        tail = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        raise EmbeddingError(f"llama-embedding endete mit Code {result.returncode}: {tail[0][:200]}")
    return parse_output(result.stdout.decode("utf-8", "replace"), len(texts))
