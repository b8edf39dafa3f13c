"""The ways bench/indexing.py embeds the same texts, and its two sweeps of the knobs (--tune, --tune-server).

    embed_project(texts, "llama-embedding", "e5.gguf")          -> [[0.01, …], …]   (--embed-via binary)
    embed_spawned(texts, "llama-server", "e5.gguf")             -> the same vectors   (--embed-via spawn)
    max_deviation(vectors, reference)                           -> 1.2e-07            (|1 − cos|, worst pair)

Does not handle: measuring the ceiling or the whole build (bench/indexing.py does).
"""
import os
import sys
import tempfile

import common
import post_way

from rag.ingest import embed_chunks  # noqa: E402  (common puts ROOT on sys.path)
from rag.models import embed_binary as embedder  # noqa: E402
from rag.models import embed_server as embed_client  # noqa: E402
from rag.models import server_process  # noqa: E402
from rag.models.server_process import ServerProcess  # noqa: E402

REPEAT = 2  # each measurement this often, the fastest counts (other jobs on the machine only ever slow it)
SWEEP_CTX = (512, 1024, 2048, 4096)  # -c/-b/-ub tried by --tune (RAM grows ~2 MB per token of -c)
SWEEP_PARALLEL = (1, 2, 4, 8)  # -np tried by --tune-server
SWEEP_PER_REQUEST = (16, 64, 256)  # texts per /v1/embeddings request tried by --tune-server


# -- the ways to embed -----------------------------------------------------------------------------
def embed_post(texts, binary, model):
    return [post_way.embed(t, binary, model) for t in texts]


def embed_project(texts, binary, model, batch=embed_chunks.BATCH, threads=None):
    """--embed-via binary: llama-embedding processes of `batch` texts."""
    out = []
    for start in range(0, len(texts), batch):
        out += embedder.embed_texts(texts[start:start + batch], binary, model, threads=threads)
    return out


def embed_spawned(texts, server_bin, model, batch=embed_chunks.BATCH, threads=None, parallel=None):
    """--embed-via spawn, as build_index.py does it: start the indexing server (counted), `batch`
    texts per request, stop it."""
    parallel = parallel or server_process.INDEX_PARALLEL
    server = ServerProcess.for_indexing(model, server_bin, texts, threads=threads, parallel=parallel).start()
    try:
        return [v for start in range(0, len(texts), batch)
                for v in embed_client.embed_fitted(texts[start:start + batch], server.url)]
    finally:
        server.stop()


def embed_tuned(texts, binary, model, batch, ctx=None, ubatch=None, threads=None, warmup=None, fit=True, peaks=None):
    """Like embed_project, with -c/-b (ctx; None = the project's context_size), -ub, -t, the warm-up
    (None: as rag/models/embed_binary.py has it; True/False: on/off) and -fit off.

    `peaks` (a list) collects each process's peak RSS in MB.
    """
    out = []
    for start in range(0, len(texts), batch):
        part = texts[start:start + batch]
        n_ctx = ctx or embedder.context_size(part)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as f:
            f.write(embedder.SEPARATOR.join(part))
        try:
            cmd = embedder.build_command(binary, model, f.name, n_ctx, threads)
            cmd[cmd.index("-ub") + 1] = str(ubatch or n_ctx)
            if warmup is not None:
                cmd = [c for c in cmd if c not in ("--warmup", "--no-warmup")]
                cmd.append("--warmup" if warmup else "--no-warmup")
            cmd += [] if fit else ["-fit", "off"]
            result = common.measure(cmd, timeout=embedder.DEFAULT_TIMEOUT + 2 * len(part))
            if peaks is not None:
                peaks.append(result.peak_mb)
        finally:
            os.unlink(f.name)
        out += embedder.parse_output(result.stdout, len(part))
    return out


def max_deviation(vectors, reference):
    """Largest |1 − cosine| between matching vectors (all are L2-normalised). Example: same -> 0.0"""
    return max(abs(1 - sum(a * b for a, b in zip(v, r))) for v, r in zip(vectors, reference))


def sweep(texts, binary, model, reference, tokens, repeat=REPEAT):
    """One knob at a time, starting from the project's defaults; each row embeds all texts `repeat`
    times and keeps the fastest run. Order: texts per process, -c/-b, -ub, -t, --no-warmup, -fit off.

    -c/-b/-ub values below the project's byte bound are tried only where every text's real token
    count (from llama-server's tokenizer) fits.
    """
    rows, total = [], sum(tokens)

    def run(batch, ctx=None, ubatch=None, threads=None, warmup=None, fit=True):
        knobs = {"batch": batch, "ctx": ctx, "ubatch": ubatch, "threads": threads, "warmup": warmup, "fit": fit}
        label = (f"batch {batch}, -c/-b {ctx or 'auto'}" + (f", -ub {ubatch}" if ubatch else "")
                 + (f", -t {threads}" if threads else "")
                 + ("" if warmup is None else ", mit Warm-up" if warmup else ", --no-warmup")
                 + ("" if fit else ", -fit off"))
        peaks, runs = [], []
        for _ in range(repeat):
            seconds, vectors = common.timed(embed_tuned, texts, binary, model, batch, ctx, ubatch, threads, warmup,
                                            fit, peaks)
            runs.append(seconds)
        rows.append({"setting": label, "knobs": knobs, "seconds": min(runs), "runs": runs,
                     "tokens_per_s": total / min(runs), "processes": len(peaks) // repeat, "peak_mb": max(peaks),
                     "max_1_minus_cos": max_deviation(vectors, reference)})
        print(f"  {label}: {' / '.join(f'{r:.1f}' for r in runs)} s, {max(peaks):.0f} MB", file=sys.stderr, flush=True)

    def best():
        return min(rows, key=lambda r: r["seconds"])["knobs"]

    n = len(texts)
    for batch in sorted({min(b, n) for b in (16, 64, n)}):
        run(batch)
    batch = best()["batch"]
    for ctx in SWEEP_CTX:
        if ctx >= max(tokens):
            run(batch, ctx)
    ctx = best()["ctx"]
    if ctx:
        run(batch, ctx, ubatch=ctx // 2)  # a smaller physical batch
    run(batch, ctx, threads=1)  # default: llama.cpp's choice (all cores here)
    threads = best()["threads"]
    project_warmup = "--no-warmup" not in embedder.build_command("b", "m", "f", 512)
    run(batch, ctx, threads=threads, warmup=not project_warmup)  # the other way than rag/models/embed_binary.py
    run(batch, ctx, threads=threads, warmup=best()["warmup"], fit=False)
    return rows


def server_sweep(texts, server_bin, model, reference, tokens, threads, repeat=REPEAT):
    """The spawned server, one knob at a time: -np (SWEEP_PARALLEL), then texts per request at the best -np.
    Each row embeds all texts `repeat` times (server start included) and keeps the fastest run."""
    rows, total = [], sum(tokens)

    def run(parallel, batch):
        runs = []
        for _ in range(repeat):
            seconds, vectors = common.timed(embed_spawned, texts, server_bin, model, batch, threads, parallel)
            runs.append(seconds)
        rows.append({"setting": f"-np {parallel}, {batch} Texte je Anfrage", "knobs": (parallel, batch),
                     "seconds": min(runs), "runs": runs, "tokens_per_s": total / min(runs), "processes": 1,
                     "peak_mb": None, "max_1_minus_cos": max_deviation(vectors, reference)})
        print(f"  Server -np {parallel}, {batch} je Anfrage: {' / '.join(f'{r:.1f}' for r in runs)} s",
              file=sys.stderr, flush=True)

    for parallel in SWEEP_PARALLEL:
        run(parallel, embed_chunks.BATCH)
    parallel = min(rows, key=lambda r: r["seconds"])["knobs"][0]
    for batch in SWEEP_PER_REQUEST:
        if batch != embed_chunks.BATCH:
            run(parallel, batch)
    return rows

