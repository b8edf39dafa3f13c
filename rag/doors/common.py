"""What the long-running doors share (the web page, the OpenAI-compatible API, MCP): the core's
events as JSON, the index's folders, a request's settings, the warm question embedder and the warm
answer server.

    for event in core.ask("Wie lege ich eine Mailbox an?", settings):
        kind, data = event_json(event)   # -> "sources", {"sources": [{"n": 1, "path": …, "text":
            …}], …}

    with warm_embedder(settings) as note:   # one llama-server --embeddings for the whole session
        print(note)                         # -> "Frage-Embedder: llama-server --embeddings (warm)
            …"

The JSON is the core's own: a source is Source.as_json() plus its number and (masked) text, the
result is Answer.as_json() (what `ask_rag.py --json` prints) plus the checks event as it came.
Unknown keys of a checks event pass through unchanged, so a door shows what the core adds.

Does not handle: several indexes at once, restarting a warm embedder that died (the next
question reports the embedding server's error; restart the door).
"""
import contextlib
import dataclasses
import json
import os
import sys

from rag import core
from rag.answer import prompt as answer
from rag.models.server_process import ServerProcess
from rag.search import ranking as search
from rag import store

EMBED_PARALLEL = 2  # -np of the warm embedder: a question is short, two at once hardly wait
# -t of the warm embedder. One thread embeds a question in ~16 ms; with llama.cpp's default (all
# cores) a question waited up to 1.6 s whenever another process used a core (15 questions each,
# load 2 on 2 cores: -t 1 median 0.016 s, max 0.039 s; -t 2 median 0.039 s, max 1.58 s; default
# max 1.14 s).
EMBED_THREADS = 1
EMBED_START_TIMEOUT = 60  # seconds the warm embedder may take to load its model


def jsonable(value):
    """A value the core produced, as plain JSON data.

    Example: jsonable({"valid": {2, 1}, "n": Decimal("1.5")}) -> {"valid": [1, 2], "n": "1.5"}
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(jsonable(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def source_json(n, source):
    """One numbered source with its text.
    Example: -> {"n": 1, "path": "mail/a.md", "heading": …, "text": …}"""
    return {"n": n, **source.as_json(), "text": source.content}


def sources_json(retrieval):
    return {"sources": [source_json(n, s) for n, s in enumerate(retrieval.sources, start=1)],
            "weak": retrieval.weak, "weak_reason": retrieval.weak_reason, "under": retrieval.under,
            "mode": retrieval.mode}


def result_json(done, checks):
    """The final result: --json's object, the checks event (None: the model was not asked) and
    whether the answer is the refusal ("nicht im Wiki")."""
    return {**done.as_json(), "checks": jsonable(checks),
            "no_info": done.refused}


def event_json(event):
    """(kind, JSON data) for a core event; the prompt stays inside (None).
    Example: piece "Mit" -> ("piece", {"text": "Mit"})"""
    if event.kind == "sources":
        return "sources", sources_json(event.data)
    if event.kind == "piece":
        return "piece", {"text": event.data}
    if event.kind == "checks":
        return "checks", jsonable(event.data)
    if event.kind == "searched":  # rag/search/expand.py: the rewritten follow-up, the expansions
        return "searched", event.data.as_json()
    if event.kind == "asking":  # what the wait is for: {"asking": "check" | "section" | "answer"}
        return "asking", {"asking": event.data}
    return event.kind, None


def dumps(data):
    return json.dumps(data, ensure_ascii=False)


def folders(settings):
    """The index's top-level folders, sorted, from either store; [] without an index.

    Example: pages mail/a.md, mail/b/c.md, x.md -> ["mail/"]
    """
    try:
        # only the folders this reader may see
        index = store.open_store(settings.db, reader=settings.reader)
    except store.StoreError:
        return []
    try:
        return index.folders()
    finally:
        index.close()


def request_settings(settings, under=None, top_k=None, retrieve_only=False, reader=None):
    """A copy of the door's settings for one request (its folder filter, its k, who asks:
    rag/store/access.py)."""
    changes = {"under": search.folder(under) if under else settings.under,
               "retrieve_only": retrieve_only, "reader": reader or settings.reader}
    if top_k is not None:
        changes["top_k"] = top_k
    return dataclasses.replace(settings, **changes)


def embed_server_bin(settings):
    """The llama-server next to llama-embedding (the same build computes the same vectors), or
    None."""
    path = os.path.join(os.path.dirname(os.path.abspath(settings.embedding_bin)), "llama-server")
    return path if os.path.isfile(path) else None


def warm_answer_server(settings):
    """Let the answer server read the fixed system message once at start (rag/models/llm.py warm),
    so the first question's check reads no more than every later one's. Best effort: a server that
    fails now fails later with its own message.
    Example: warm_answer_server(settings) -> {"call": "warm", "prompt_n": 161, …} or None"""
    from rag.models import llm
    return llm.warm(settings.server, answer.SYSTEM, settings.api_key, settings.llm_model_name)


@contextlib.contextmanager
def warm_embedder(settings, log_path=None):
    """Keep the question embedder warm while the door runs: with embed_via "binary" and a
    llama-server next to llama-embedding, start one `llama-server --embeddings --pooling mean` with
    the index's model and point `settings` at it; stop it on exit. Yields one line that says which
    embedder runs. Without such a llama-server (a reader's own llama-embedding), each question
    starts llama-embedding.
    """
    binary = embed_server_bin(settings) if settings.embed_via == "binary" else None
    if binary is None:
        how = ("über " + (settings.embed_url or settings.server) if settings.embed_via == "server"
               else "llama-embedding je Frage")
        yield f"Frage-Embedder: {how}"
        return
    server = ServerProcess(model=settings.model, binary=binary, embeddings=True,
                           parallel=EMBED_PARALLEL, extra=["-t", str(EMBED_THREADS)],
                           log_path=log_path)
    try:
        server.start(timeout=EMBED_START_TIMEOUT)
    except BaseException as exc:  # Ctrl-C while it loads, too: no child left behind
        server.stop()
        if not isinstance(exc, RuntimeError):
            raise
        print(f"Warnung: Frage-Embedder nicht gestartet ({exc}) – jede Frage startet "
              f"llama-embedding", file=sys.stderr)
        yield "Frage-Embedder: llama-embedding je Frage"
        return
    saved = settings.embed_via, settings.embed_url, settings.embed_model_name
    settings.embed_via, settings.embed_url, settings.embed_model_name = "server", server.url, None
    try:
        yield (f"Frage-Embedder: llama-server --embeddings "
               f"(warm, {server.url}, {os.path.basename(settings.model)})")
    finally:
        settings.embed_via, settings.embed_url, settings.embed_model_name = saved
        server.stop()



def answer_events(question, settings, history=()):
    """One question as (kind, JSON) pairs: (searched,) sources, (asking,) piece…, checks, and last
    ("done", result_json).

    The first pair comes after the retrieval, so a door can still answer an expected failure there
    (core.CoreError) with an error status; a failure later raises CoreError mid-stream. Leaving the
    loop early (the reader went away) closes the core's stream, and with it the model's request.
    """
    checks, events = None, core.ask(question, settings, history)
    try:
        for event in events:
            if event.kind == "checks":
                checks = event.data
            if event.kind == "done":
                yield "done", result_json(event.data, checks)
            else:
                kind, data = event_json(event)
                if data is not None:
                    yield kind, data
    finally:
        events.close()
