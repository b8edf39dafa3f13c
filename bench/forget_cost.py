#!/usr/bin/env python3
"""What `build_index.py --forget` costs: seconds to forget one page of an index of N chunks, SQLite and PostgreSQL.

    python3 bench/forget_cost.py --sizes 202,20000                      # SQLite, with and without --vacuum
    python3 bench/forget_cost.py --sizes 200000 --postgres "$RAG_DB"    # PostgreSQL (VACUUM FULL)

The index is bench/scale.py's synthetic one (random unit vectors, D 384, 5 chunks per page, 8 German words
each, an HNSW index on PostgreSQL), an audit log of AUDIT_LINES lines beside it, 10 of them about the page.
Each run is build_index.py --forget seite0.md as a reader starts it (one process, wall clock), and prints
its receipt's check. The database is built anew for each run.

Does not handle: real texts (the cost is the tables' size, not the words: the receipt counts 0 search words,
and 0 vectors, because the synthetic rows' hashes are not those of their text), a warm page cache.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common  # noqa: F401  (puts the repository on sys.path)
from common import ROOT

import scale

AUDIT_LINES = 1000  # lines of the audit log beside the index; every 100th is about the forgotten page
DIM = 384


def vectors(n):
    import numpy as np
    matrix = np.random.default_rng(7).standard_normal((n, DIM)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def write_audit(path):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(AUDIT_LINES):
            page = "seite0.md" if i % 100 == 0 else f"seite{i + 1}.md"
            f.write(json.dumps({"time": f"T{i}", "question": f"Frage {i}", "answer": "Antwort",
                                "chunks": [{"path": page, "heading": "Abschnitt", "chunk_index": 0,
                                            "sha256": f"{i:064x}"}]}) + "\n")


def forget(db, work, *extra):
    """One --forget run: (seconds, its stdout's first line)."""
    env = {**os.environ, "RAG_DB": db, "RAG_AUDIT": str(work / "k.audit.jsonl")}
    (work / "wiki").mkdir(exist_ok=True)
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "build_index.py"), "--wiki", str(work / "wiki"), "--forget",
                           "seite0.md", *extra], env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"Fehler: --forget endete mit {done.returncode}: {done.stderr.strip()[-300:]}")
    return seconds, (done.stdout.strip().splitlines() or ["–"])[0]


def main():
    parser = argparse.ArgumentParser(description="Kosten von build_index.py --forget messen.")
    parser.add_argument("--sizes", default="202,20000", help="Chunks im Index, mit Komma getrennt")
    parser.add_argument("--postgres", help="DSN einer leeren PostgreSQL-Datenbank (sonst SQLite)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        for extra in ([()] if args.postgres else [(), ("--vacuum",)]):
            rows.append(measure(n, args.postgres, extra))
            if not args.json:
                r = rows[-1]
                print(f"{n:>7} Chunks · {r['store']:<16} · --forget {r['seconds']:6.2f} s · Datei {r['mb_before']:.1f} → "
                      f"{r['mb_after']:.1f} MB · (Aufbau {r['build_s']:.1f} s)\n        {r['receipt']}", flush=True)
    if args.json:
        print(json.dumps({"command": "python3 bench/forget_cost.py " + " ".join(sys.argv[1:]), "rows": rows},
                         ensure_ascii=False))


def measure(n, dsn, extra):
    """One fresh index of n chunks, one --forget: its seconds, the file's size before and after, the receipt line."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        db = dsn or str(work / "k.db")
        built = time.monotonic()
        scale.build_postgres(db, vectors(n)) if dsn else scale.build_sqlite(work / "k.db", vectors(n))
        built = time.monotonic() - built
        write_audit(work / "k.audit.jsonl")
        size = 0 if dsn else os.path.getsize(db)
        seconds, receipt = forget(db, work, *extra)
        return {"chunks": n, "store": "PostgreSQL" if dsn else "SQLite" + (" + VACUUM" if extra else ""),
                "seconds": round(seconds, 2), "build_s": round(built, 1), "mb_before": round(size / 1e6, 1),
                "mb_after": round((0 if dsn else os.path.getsize(db)) / 1e6, 1),
                "receipt": receipt.split(" → ")[0]}


if __name__ == "__main__":
    main()
