"""Other exact arithmetic for the Python scan, measured next to rag.vectors.scan (retrieval.py --variants).

    scan_sum_map(conn, vectors.prepare(q), 50)   -> [(cosine, doc_id)] best first, same as vectors.scan_python

Each variant reads the same blocks (rag/store/vectors.py) and returns exactly what vectors.scan_python
returns (every vector scored, ties by doc id); only the arithmetic per vector differs:

  sum_map  sum(map(operator.mul, q, v)) on memoryview slices: what Python 3.11 had before
           math.sumprod (3.12); one Python float object per product
  dist2    math.dist without the stored |v|²: q · v = (|q|² + |v|² − |q − v|²) / 2 with
           |v| = math.dist(0, v), a second pass in C per vector (the layout stores |v|² to save it)
  array    the scan's own similarity() on array("f", bytes) copies instead of memoryview slices

What the measurements chose (rag/store/vectors.py): math.sumprod on 3.12+, math.dist with the stored |v|²
on 3.11, memoryview slices, os.fork for large indexes.

Does not handle: big-endian machines (memoryview casts are native-endian; rag/store/vectors.py byte-swaps).
"""
import math
import operator
import sys
from array import array

from rag.store import vectors

assert sys.byteorder == "little", "prototype only for little-endian machines"


def scan_each(conn, q, limit, score):
    """The scan loop of vectors.scan_python with another score(q, block floats, slot, dim, |v|²)."""
    scored = []
    for first, norms, vecs, dim in vectors.blocks(conn):
        values = memoryview(vecs).cast("f")
        for k, v_norm2 in enumerate(memoryview(norms).cast("d")):
            if v_norm2:
                scored.append((score(q, values, k, dim, v_norm2), first + k))
    return vectors.top(scored, limit)


def scan_sum_map(conn, q, limit):
    mul = operator.mul
    return scan_each(conn, q, limit,
                     lambda q, values, k, dim, _: sum(map(mul, q.values, values[k * dim:(k + 1) * dim])))


def scan_dist2(conn, q, limit):
    zero = None

    def score(q, values, k, dim, _):
        nonlocal zero
        zero = zero or (0.0,) * dim
        v = tuple(values[k * dim:(k + 1) * dim])
        return (q.norm2 + math.dist(zero, v) ** 2 - math.dist(q.values, v) ** 2) / 2

    return scan_each(conn, q, limit, score)


def scan_array(conn, q, limit):
    similarity = vectors.similarity
    return scan_each(conn, q, limit,
                     lambda q, values, k, dim, n2: similarity(q, array("f", values[k * dim:(k + 1) * dim]), n2))
