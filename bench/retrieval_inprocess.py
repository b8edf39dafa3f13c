"""The bare vector searches in one interpreter, for bench/retrieval.py: rag/store/vectors.py's scan per way
(pure Python in 1 process and on every core, numpy, sqlite-vec) vs bench/post_way.py's search, no
embedding and no start-up. bench/retrieval.py runs in_process() in each --python via `python -c`.

    in_process("p.db", "post.db", "q.json", 3, 2, False)
    -> prints {"python1_s": 0.012, "post_s": 0.41, "same_top_k": true, …}

Does not handle: whole processes, memory (bench/retrieval.py measures those).
"""
import json
import math
import os
import sqlite3
import sys
import time
from pathlib import Path

import common
import post_way

from rag.search import ranking as search
from rag.store import sqlite as store
from rag.store import vectors  # noqa: E402  (common puts ROOT on sys.path)


def timings(function, *args, **kwargs):
    """(wall s, CPU s, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return time.perf_counter() - wall, time.process_time() - cpu, result


def available_scans(conn):
    """The ways of rag/store/vectors.py this interpreter can run. Example: ["python", "numpy"]"""
    return ["python"] + [m for m, ok in (("numpy", vectors.numpy_available()),
                                         ("sqlite-vec", vectors.load_sqlite_vec(conn))) if ok]


def in_process(project_db, post_db, question_file, repeat, post_repeat, variants):
    """Time the bare searches in this interpreter; prints one JSON object (medians)."""
    qvec = json.loads(Path(question_file).read_text())["data"][0]["embedding"]
    project, post = store.connect(project_db), sqlite3.connect(post_db)
    normalised = search.normalise(qvec)
    workers = vectors.worker_count()

    def project_read():  # only read the blocks: the storage's share
        for _ in vectors.blocks(project):
            pass

    def post_parse():  # only read and json.loads: the post's storage share
        for _, _, _, embedding in post.execute("SELECT path, chunk_index, content, embedding FROM docs"):
            json.loads(embedding)

    runs = {}

    def run(name, times, function, *args, **kwargs):
        result = None
        for _ in range(times):
            wall, cpu, result = timings(function, *args, **kwargs)
            runs.setdefault(name + "_s", []).append(wall)
            runs.setdefault(name + "_cpu_s", []).append(cpu)
        return result

    ranking = run("python1", repeat, vectors.scan, project, normalised, search.FETCH, method="python", processes=1)
    found = {"python1": ranking}
    if workers > 1 and hasattr(os, "fork"):
        found["pythonN"] = run("pythonN", repeat, vectors.scan, project, normalised, search.FETCH,
                               method="python", processes=workers)
    for method in available_scans(project)[1:]:
        found[method] = run(method, repeat, vectors.scan, project, normalised, search.FETCH, method=method)
    run("project_read", repeat, project_read)
    post_top = run("post", post_repeat, post_way.search, post, qvec)
    run("post_parse", post_repeat, post_parse)
    if variants:
        import vector_variants
        q = vectors.prepare(normalised)
        found["variant_sum_map"] = run("variant_sum_map", repeat, vector_variants.scan_sum_map, project, q,
                                       search.FETCH)
        found["variant_dist2"] = run("variant_dist2", repeat, vector_variants.scan_dist2, project, q, search.FETCH)
        found["variant_array"] = run("variant_array", repeat, vector_variants.scan_array, project, q, search.FETCH)
    ranking = ranking.ranking
    result = {}
    for name, scan in found.items():
        other = getattr(scan, "ranking", scan)
        result[f"{name}_same"] = [d for _, d in other] == [d for _, d in ranking]
        result[f"{name}_max_abs_diff"] = max(abs(a[0] - b[0]) for a, b in zip(other, ranking))
    top = ranking[:post_way.TOP_K]
    where = dict((doc_id, (path, index)) for doc_id, path, index in project.execute(
        f"SELECT id, path, chunk_index FROM docs WHERE id IN ({','.join('?' * len(top))})", [d for _, d in top]))
    diffs = [abs(cos - p[0]) for (cos, _), p in zip(top, post_top)]
    result.update({k: common.median(v) for k, v in runs.items()})
    result.update(same_top_k=[where[doc_id] for _, doc_id in top] == [(p, i) for _, p, i, _ in post_top],
                  max_abs_cos_diff=max(diffs) if diffs else None, workers=workers,
                  python=sys.version.split()[0], sumprod=hasattr(math, "sumprod"))
    print(json.dumps(result))
