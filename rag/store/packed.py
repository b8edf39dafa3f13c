"""The packed vectors: their layout in SQLite, and the exact arithmetic every scan scores with
(rag/store/vectors.py scans them).

    pack([1.0]) -> b'\\x00\\x00\\x80?';  read_vectors(conn, [7]) -> {7: ([0.12, -0.03, …], 1.0)}
    similarity(prepare([1, 0]), [0.6, 0.8], 1.0) -> 0.6

Layout: table vector_blocks(block, norms, vecs). Block b holds the chunks with doc ids
b·BLOCK_SIZE … b·BLOCK_SIZE + BLOCK_SIZE − 1, each in a fixed slot k = doc_id − b·BLOCK_SIZE:
    vecs   BLOCK_SIZE × D little-endian float32, slot k at byte k·D·4
    norms  BLOCK_SIZE little-endian float64, |v|² of slot k; 0.0 = empty slot (no vector is zero)
A scan reads a few large contiguous blobs instead of one row per chunk. Writing one chunk writes
its D·4 bytes in place, deleting one zeroes its slot, and a block whose slots are all empty is
dropped (rag/store/sqlite_file.py write_vector / delete_vectors, inside the caller's transaction).

Does not handle: the scan itself and its ways (rag/store/vectors.py), writing (sqlite_file.py),
big-endian machines beyond a byte swap.
"""
import heapq
import math
import sqlite3
import struct
import sys
from array import array
from collections import namedtuple

TABLE = "vector_blocks"  # the chunks' vectors; question_blocks has the same layout
BLOCK_SIZE = 1024  # vectors per block: 4 MB per block at D = 1,024; the scan reads whole blocks
Query = namedtuple("Query", "values norm2")  # the normalised question as a tuple, and its |q|²


# -- layout: pack, read ----------------------------------------------------------------------------
def pack(vector):
    """float list -> little-endian float32 bytes. Example: pack([1.0]) -> b'\\x00\\x00\\x80?'"""
    return struct.pack(f"<{len(vector)}f", *vector)


def floats(data, code="f"):
    """Little-endian bytes -> a sequence of Python floats without copying (code "f": float32, "d":
    float64).

    Example: floats(pack([0.5, 2.0]))[1] -> 2.0
    """
    if sys.byteorder == "little":
        return memoryview(data).cast(code)
    values = array(code, data)
    values.byteswap()
    return values


def norm2(vector):
    """|v|² of the float32 values as stored, correctly rounded.

    Example: norm2([3.0, 4.0]) -> 25.0
    """
    return math.fsum(x * x for x in floats(pack(vector)))  # a float32 squared is exact in float64


def read_vectors(conn, doc_ids, table=TABLE):
    """{doc_id: (vector floats, |v|²)} of those that are stored; one blob handle per block.

    Example: read_vectors(conn, [7, 9999]) -> {7: ([0.12, -0.03, …], 1.0)}
    """
    out = {}
    for block in sorted({doc_id // BLOCK_SIZE for doc_id in doc_ids}):
        slots = sorted(doc_id % BLOCK_SIZE for doc_id in doc_ids if doc_id // BLOCK_SIZE == block)
        try:
            with conn.blobopen(table, "norms", block, readonly=True) as norms, \
                    conn.blobopen(table, "vecs", block, readonly=True) as vecs:
                size = len(vecs) // BLOCK_SIZE
                for slot in slots:
                    norms.seek(slot * 8)
                    n2 = floats(norms.read(8), "d")[0]
                    if n2:
                        vecs.seek(slot * size)
                        out[block * BLOCK_SIZE + slot] = (list(floats(vecs.read(size))), n2)
        except sqlite3.OperationalError:  # no such block
            continue
    return out


def by_block(doc_ids):
    """Doc ids as {block: [slot]}. Example: by_block({3, 1025}) -> {0: [3], 1: [1]}"""
    out = {}
    for doc_id in sorted(doc_ids):
        out.setdefault(doc_id // BLOCK_SIZE, []).append(doc_id % BLOCK_SIZE)
    return out


def blocks(conn, share=(0, 1), hidden=None, table=TABLE):
    """Yield (first doc id, norms, vecs, dim) per block; share (k, n): only the k-th of n slices of
    each block. hidden ({block: [slot]}, by_block): those slots read as empty (norm 0), so no scan
    ever scores them.

    Example: share (1, 2) with BLOCK_SIZE 1024 -> slots 512 … 1023 of every block
    """
    k, n = share
    lo, hi = BLOCK_SIZE * k // n, BLOCK_SIZE * (k + 1) // n
    for (block,) in conn.execute(f"SELECT block FROM {table} ORDER BY block").fetchall():
        with conn.blobopen(table, "norms", block, readonly=True) as blob:
            blob.seek(lo * 8)
            norms = blob.read((hi - lo) * 8)
        # a reader's hidden pages: their slots are empty for this scan
        if hidden and block in hidden:
            norms = bytearray(norms)
            for slot in hidden[block]:
                if lo <= slot < hi:
                    norms[(slot - lo) * 8:(slot - lo + 1) * 8] = bytes(8)
            norms = bytes(norms)
        with conn.blobopen(table, "vecs", block, readonly=True) as blob:
            dim = len(blob) // BLOCK_SIZE // 4
            blob.seek(lo * dim * 4)
            vecs = blob.read((hi - lo) * dim * 4)
        yield block * BLOCK_SIZE + lo, norms, vecs, dim


def size(conn, table=TABLE):
    """(blocks, dim) of the index, (0, 0) when empty: the scan's work is about blocks × BLOCK_SIZE ×
    dim."""
    row = conn.execute(f"SELECT COUNT(*), MAX(length(vecs)) FROM {table}").fetchone()
    return row[0], (row[1] or 0) // BLOCK_SIZE // 4


# -- the exact arithmetic --------------------------------------------------------------------------
def prepare(qvec):
    """The normalised question as used by `similarity`.

    Example: prepare([0.6, 0.8]) -> Query((0.6, 0.8), 1.0)
    """
    values = tuple(float(x) for x in qvec)
    return Query(values, math.fsum(x * x for x in values))


if hasattr(math, "sumprod"):  # Python 3.12+: one C loop, exact (extended precision)
    def similarity(q, v, v_norm2):
        """q · v. Example: similarity(prepare([1, 0]), [0.6, 0.8], 1.0) -> 0.6"""
        return math.sumprod(q.values, v)
else:  # Python 3.11: math.dist is C as well, and q · v = (|q|² + |v|² − |q − v|²) / 2
    def similarity(q, v, v_norm2):
        """q · v from the stored |v|².

        Example: similarity(prepare([1, 0]), [0.6, 0.8], 1.0) -> 0.6
        """
        return (q.norm2 + v_norm2 - math.dist(q.values, v) ** 2) / 2


def top(scored, limit):
    """The best `limit` of [(score, doc_id)], ties by doc id.

    Example: top([(0.5, 9), (0.9, 4), (0.5, 2)], 2) -> [(0.9, 4), (0.5, 2)]
    """
    return heapq.nsmallest(limit, scored, key=lambda pair: (-pair[0], pair[1]))
