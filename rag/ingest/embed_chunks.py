"""Step 3, embed: the vectors of many chunk texts, BATCH per call, through one of three transports.

    list(embed_all(["passage: VPN\\n\\nClient starten.", …], args))
    -> [(0, [[0.01, -0.2, …], …]), (64, […])]

  spawn    a llama-server --embeddings started for the run (rag/models/server_process.py), next to
           llama-embedding
  binary   llama-embedding processes, as in the post (rag/models/embed_binary.py)
  server   any running OpenAI-compatible /v1/embeddings endpoint (rag/models/embed_server.py)

`args` are build_index.py's flags (via, batch, timeout, model, embedding_bin, embed_url, …).
Does not handle: retries of a failed batch (the next run continues where this one stopped).
"""
import os
import sys
import time

from rag.models import embed_binary
from rag.models import embed_server
from rag.models.embedding import EmbeddingError
from rag.models.server_process import ServerProcess

# chunks per llama-embedding process or request
# (bench/indexing.py --tune: 64 is 2.6x faster than 16)
BATCH = 64
# auto: spawn when llama-server sits next to llama-embedding (same build), else binary
EMBED_VIA = "auto"


class Progress:
    """One self-overwriting line on stderr: pages, chunks, chunks/s, ETA. Silent when not a TTY."""

    def __init__(self, total_pages, enabled):
        self.total_pages, self.enabled = total_pages, enabled and sys.stderr.isatty()
        self.start = time.monotonic()

    def show(self, pages_done, chunks_done, chunks_total):
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        rate = chunks_done / elapsed if elapsed > 0 else 0.0
        eta = (chunks_total - chunks_done) / rate if rate > 0 else 0.0
        print(f"\r{pages_done}/{self.total_pages} Seiten · {chunks_done}/{chunks_total} Chunks · "
              f"{rate:.1f} Chunks/s · noch {eta:.0f} s   ", end="", file=sys.stderr, flush=True)

    def done(self):
        if self.enabled:
            print(file=sys.stderr)


def server_bin(args):
    """The llama-server of the same llama.cpp build as --embedding-bin (same vectors).

    Example: --embedding-bin /opt/llama.cpp/bin/llama-embedding -> "/opt/llama.cpp/bin/llama-server"
    """
    return os.path.join(os.path.dirname(os.path.abspath(args.embedding_bin)), "llama-server")


def transport(args):
    """--embed-via auto -> "spawn" when llama-server sits next to llama-embedding, else "binary".

    Example: /opt/llama.cpp/bin/llama-embedding next to /opt/llama.cpp/bin/llama-server -> "spawn"
    """
    if args.embed_via != "auto":
        return args.embed_via
    return "spawn" if os.path.isfile(server_bin(args)) else "binary"


def model_identity(args):
    """What the index remembers about the embedding model: (file name, size in bytes) of a GGUF
    file, or (the model name a server reports, "") for --embed-via server
    (rag/models/embed_server.py)."""
    if args.via == "server":
        return embed_server.identify(args.embed_url, args.embed_model_name, args.api_key), ""
    return os.path.basename(args.model), str(os.path.getsize(args.model))


def embed_all(texts, args):
    """Vectors for `texts`, in order, args.batch texts per call; yields (start, vectors) per
    batch."""
    if args.via == "binary":
        for start in range(0, len(texts), args.batch):
            batch = texts[start:start + args.batch]
            yield start, embed_binary.embed_texts(batch, args.embedding_bin, args.model,
                                              threads=args.threads, timeout=args.timeout)
        return
    if args.via == "server":
        yield from embed_via_server(texts, args.batch, args.timeout, args.embed_url,
                                    args.embed_model_name, args.api_key)
        return
    if getattr(args, "spawned", None):  # --watch: the server started once for all cycles
        yield from embed_via_server(texts, args.batch, args.timeout, args.spawned.url)
        return
    if not args.quiet:
        print("Starte llama-server --embeddings für diesen Lauf (--embed-via binary: "
              "llama-embedding wie im Artikel)",
              file=sys.stderr, flush=True)
    server = ServerProcess.for_indexing(args.model, server_bin(args), texts, threads=args.threads)
    try:
        server.start()
    except RuntimeError as exc:
        raise EmbeddingError(f"{exc} – oder --embed-via binary verwenden")
    try:
        yield from embed_via_server(texts, args.batch, args.timeout, server.url)
    finally:
        server.stop()


def embed_via_server(texts, batch, timeout, url, model_name=None, api_key=None):
    """(start, vectors) per `batch` texts, each batch one /v1/embeddings request."""
    for start in range(0, len(texts), batch):
        yield start, embed_server.embed_fitted(texts[start:start + batch], url, model_name, api_key,
                                               timeout=timeout)
