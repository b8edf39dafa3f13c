"""Prototypes of the exact vector scan, measured next to rag.search.vector_ranking (retrieval.py --variants).

    scan_inline(conn, q, 50)   -> [(cosine, doc_id)] best first, same result as vector_ranking

Each variant returns exactly what vector_ranking returns (the top `limit` by dot product of the
normalised question with every stored vector), every vector scored, no pre-filter:

  inline   the same arithmetic (math.sumprod, else sum(map(operator.mul))) without a Python-level
           call per row: array("f", blob) instead of store.unpack, endianness checked once
  dist     math.dist (C, Python 3.8+) on struct-unpacked tuples: q·v = (|q|² + |v|² − |q − v|²) / 2,
           with |v|² per vector stored at index time (here computed once, untimed, standing in for
           a REAL column next to the blob); float64 throughout, |Δ| against the dot product ~1e-15
  dist2    the same without a stored norm: |v| = math.dist(0, v) on the same tuple, a second pass
           in C (no schema change)
  forked   the inline scan split over `workers` processes (os.fork; each opens its own connection
           and scans every workers-th row, the parent merges the partial top lists): uses more cores

Does not handle: big-endian machines (the real code would byteswap as store.unpack does), Windows
(no os.fork) for the forked variant.
"""
import heapq
import math
import os
import pickle
import sqlite3
import operator
import struct
import sys
from array import array

from rag import search

assert sys.byteorder == "little", "prototype only for little-endian machines"


def scan_inline(conn, q, limit):
    dot = search.dot
    rows = conn.execute("SELECT doc_id, vec FROM vectors ORDER BY doc_id")
    return heapq.nlargest(limit, [(dot(q, array("f", blob)), doc_id) for doc_id, blob in rows],
                          key=operator.itemgetter(0))


def squared_norms(conn):
    """{doc_id: |v|²}: what a `norm2 REAL` column in vectors would hold."""
    out = {}
    for doc_id, blob in conn.execute("SELECT doc_id, vec FROM vectors"):
        v = array("f", blob)
        out[doc_id] = sum(map(operator.mul, v, v))
    return out


def scan_dist(conn, q, limit, norms):
    dim = len(q)
    unpack = struct.Struct(f"<{dim}f").unpack
    qt, dist = tuple(q), math.dist
    qq = sum(map(operator.mul, qt, qt))
    rows = conn.execute("SELECT doc_id, vec FROM vectors ORDER BY doc_id")
    return heapq.nlargest(limit, [((qq + norms[doc_id] - dist(qt, unpack(blob)) ** 2) / 2, doc_id)
                                  for doc_id, blob in rows], key=operator.itemgetter(0))


def scan_dist2(conn, q, limit):
    dim = len(q)
    unpack = struct.Struct(f"<{dim}f").unpack
    qt, zero, dist = tuple(q), (0.0,) * dim, math.dist
    qq = sum(map(operator.mul, qt, qt))
    scores = []
    for doc_id, blob in conn.execute("SELECT doc_id, vec FROM vectors ORDER BY doc_id"):
        v = unpack(blob)
        scores.append(((qq + dist(zero, v) ** 2 - dist(qt, v) ** 2) / 2, doc_id))
    return heapq.nlargest(limit, scores, key=operator.itemgetter(0))


def scan_forked(db_path, q, limit, workers=2):
    """The inline scan over rows doc_id % workers == k, one process per k; same result as scan_inline."""
    def part(k):
        conn = sqlite3.connect(db_path)
        dot = search.dot
        rows = conn.execute("SELECT doc_id, vec FROM vectors WHERE doc_id % ? = ? ORDER BY doc_id", (workers, k))
        return heapq.nlargest(limit, [(dot(q, array("f", blob)), doc_id) for doc_id, blob in rows],
                              key=operator.itemgetter(0))

    children = []
    for k in range(1, workers):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: score its share, send the top list, leave without cleanup handlers
            os.close(read)
            with os.fdopen(write, "wb") as out:
                pickle.dump(part(k), out)
            os._exit(0)
        os.close(write)
        children.append((pid, read))
    found = part(0)
    for pid, read in children:
        with os.fdopen(read, "rb") as inp:
            found += pickle.load(inp)
        os.waitpid(pid, 0)
    return heapq.nlargest(limit, sorted(found, key=operator.itemgetter(1)), key=operator.itemgetter(0))
