"""The packed vectors: their layout in SQLite, and the exact scan over them (pure Python, forked, numpy, sqlite-vec).

    scan(conn, normalise(qvec), 50)  -> Scan(ranking=[(0.953, 17), (0.949, 3), …], method="python", processes=2)

Layout: table vector_blocks(block, norms, vecs). Block b holds the chunks with doc ids
b·BLOCK_SIZE … b·BLOCK_SIZE + BLOCK_SIZE − 1, each in a fixed slot k = doc_id − b·BLOCK_SIZE:
    vecs   BLOCK_SIZE × D little-endian float32, slot k at byte k·D·4
    norms  BLOCK_SIZE little-endian float64, |v|² of slot k; 0.0 = empty slot (no vector is zero)
A scan reads a few large contiguous blobs instead of one row per chunk. Writing one chunk writes
its D·4 bytes in place, deleting one zeroes its slot, and a block whose slots are all empty is
dropped (rag/store/sqlite_file.py write_vector / delete_vectors, inside the caller's transaction).

Scan: score = q · v with the normalised question q (the stored vectors are L2-normalised, so this is
the cosine), every vector scored, ranked best first, ties by doc id. Ways to compute it, fastest
available first (all return the same ranking and the same scores, see `exact_top`):
    sqlite-vec  vec_distance_cosine in C over the same float32 slots (package sqlite-vec, and a Python
                whose sqlite3 can load extensions)
    numpy       one float32 matrix-vector product per block (package numpy)
    python      math.sumprod (3.12+) or math.dist with the stored |v|² (3.11), in one process or,
                for large indexes, split over every core with os.fork
The two fast paths only preselect in float32: every vector that can be in the top list given
float32 rounding (FLOAT32_ERROR) is scored again by the Python arithmetic, so the result is
exactly the Python scan's. RAG_PURE_PYTHON=1 forces the Python scan; RAG_SCAN=python|numpy|sqlite-vec
picks one (benchmarks, tests; an unavailable one falls back to python).

Does not handle: approximate search, compaction (ids of deleted chunks leave empty slots until
`build_index.py --rebuild`), big-endian machines beyond a byte swap, fork on Windows (one process).
"""
import contextlib
import heapq
import math
import os
import sqlite3
import struct
import sys
from array import array
from collections import namedtuple

TABLE = "vector_blocks"  # the chunks' vectors; question_blocks has the same layout
BLOCK_SIZE = 1024  # vectors per block: 4 MB per block at D = 1,024; the scan reads whole blocks
FORK_MIN_FLOATS = 2_000_000  # fork the Python scan from this N × D (capacity) on: a worker costs 6–14 ms CPU,
#                  break-even on free cores ~0.5M; on cores busy with other work forking gains nothing
FAST_MIN_FLOATS = {"sqlite-vec": 500_000, "numpy": 8_000_000}  # below this N × D, loading the module
#                  costs more than the Python scan it saves (numpy's import alone is ~0.06 s CPU)
FLOAT32_ERROR = 2.0 ** -24  # unit roundoff of float32: the fast paths' error is below (2·D + 16) × this × |v|
Scan = namedtuple("Scan", "ranking method processes candidates questions", defaults=(None, None))
#      ranking: [(score, doc_id)] best first; candidates: how many an approximate preselection
#      (HNSW, rag/store/postgres.py) handed on, else None; questions: {doc_id: the generated
#      question that scored above the chunk} (rag/store/questions.py), else None
Query = namedtuple("Query", "values norm2")  # the normalised question as a tuple, and its |q|²


# -- layout: pack, read ----------------------------------------------------------------------------
def pack(vector):
    """float list -> little-endian float32 bytes. Example: pack([1.0]) -> b'\\x00\\x00\\x80?'"""
    return struct.pack(f"<{len(vector)}f", *vector)


def floats(data, code="f"):
    """Little-endian bytes -> a sequence of Python floats without copying (code "f": float32, "d": float64).

    Example: floats(pack([0.5, 2.0]))[1] -> 2.0
    """
    if sys.byteorder == "little":
        return memoryview(data).cast(code)
    values = array(code, data)
    values.byteswap()
    return values


def normalise(vector):
    """L2-normalised; a zero vector stays as it is. Example: normalise([3.0, 4.0]) -> [0.6, 0.8]"""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


def norm2(vector):
    """|v|² of the float32 values as stored, correctly rounded. Example: norm2([3.0, 4.0]) -> 25.0"""
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
    """Yield (first doc id, norms, vecs, dim) per block; share (k, n): only the k-th of n slices of each block.
    hidden ({block: [slot]}, by_block): those slots read as empty (norm 0), so no scan ever scores them.

    Example: share (1, 2) with BLOCK_SIZE 1024 -> slots 512 … 1023 of every block
    """
    k, n = share
    lo, hi = BLOCK_SIZE * k // n, BLOCK_SIZE * (k + 1) // n
    for (block,) in conn.execute(f"SELECT block FROM {table} ORDER BY block").fetchall():
        with conn.blobopen(table, "norms", block, readonly=True) as blob:
            blob.seek(lo * 8)
            norms = blob.read((hi - lo) * 8)
        if hidden and block in hidden:  # a reader's hidden pages: their slots are empty for this scan
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
    """(blocks, dim) of the index, (0, 0) when empty: the scan's work is about blocks × BLOCK_SIZE × dim."""
    row = conn.execute(f"SELECT COUNT(*), MAX(length(vecs)) FROM {table}").fetchone()
    return row[0], (row[1] or 0) // BLOCK_SIZE // 4


# -- the Python scan -------------------------------------------------------------------------------
def prepare(qvec):
    """The normalised question as used by `similarity`. Example: prepare([0.6, 0.8]) -> Query((0.6, 0.8), 1.0)"""
    values = tuple(float(x) for x in qvec)
    return Query(values, math.fsum(x * x for x in values))


if hasattr(math, "sumprod"):  # Python 3.12+: one C loop, exact (extended precision)
    def similarity(q, v, v_norm2):
        """q · v. Example: similarity(prepare([1, 0]), [0.6, 0.8], 1.0) -> 0.6"""
        return math.sumprod(q.values, v)
else:  # Python 3.11: math.dist is C as well, and q · v = (|q|² + |v|² − |q − v|²) / 2
    def similarity(q, v, v_norm2):
        """q · v from the stored |v|². Example: similarity(prepare([1, 0]), [0.6, 0.8], 1.0) -> 0.6"""
        return (q.norm2 + v_norm2 - math.dist(q.values, v) ** 2) / 2


def top(scored, limit):
    """The best `limit` of [(score, doc_id)], ties by doc id.

    Example: top([(0.5, 9), (0.9, 4), (0.5, 2)], 2) -> [(0.9, 4), (0.5, 2)]
    """
    return heapq.nsmallest(limit, scored, key=lambda pair: (-pair[0], pair[1]))


def scan_python(conn, q, limit, share=(0, 1), hidden=None, table=TABLE):
    """[(score, doc_id)] best first over every stored vector (or one share of each block), one process."""
    scored = []
    for first, norms, vecs, dim in blocks(conn, share, hidden, table):
        values = floats(vecs)
        for k, v_norm2 in enumerate(floats(norms, "d")):
            if v_norm2:
                scored.append((similarity(q, values[k * dim:(k + 1) * dim], v_norm2), first + k))
    return top(scored, limit)


def database_path(conn):
    """The file of the connection's main database, '' for :memory:."""
    return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")


def worker_count():
    """Cores this process may use. Example: 2 on a 2-core machine"""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def scan_forked(conn, q, limit, workers, hidden=None, table=TABLE):
    """The Python scan split over `workers` processes (os.fork): each opens its own connection, scores
    its slice of every block and sends its top list through a pipe; same result as scan_python.

    The parent keeps its read transaction (`snapshot`) open until every child is done, so no writer
    can checkpoint away what the children read; a child that fails is redone here.
    """
    import pickle  # only here: ask_rag.py on a small index never needs it

    path, children = database_path(conn), []
    for k in range(1, workers):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: never touch the parent's connection; leave without cleanup handlers
            status = 1
            try:
                os.close(read)
                own = sqlite3.connect(path, timeout=30)
                with os.fdopen(write, "wb") as out:
                    pickle.dump(scan_python(own, q, limit, (k, workers), hidden, table), out)
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        children.append((k, pid, read))
    found = scan_python(conn, q, limit, (0, workers), hidden, table)
    for k, pid, read in children:
        with os.fdopen(read, "rb") as inp:
            try:
                part = pickle.load(inp)  # from our own child only
            except (EOFError, pickle.UnpicklingError):
                part = None
        _, status = os.waitpid(pid, 0)
        redo = part is None or status != 0
        found += scan_python(conn, q, limit, (k, workers), hidden, table) if redo else part
    return top(found, limit)


# -- fast paths: preselect in float32, then score exactly ------------------------------------------
def float32_error(conn, dim, table=TABLE):
    """Bound on |estimate − q · v| of the float32 ways: (2·D + 16) · 2⁻²⁴ · max |v| (|q| = 1).

    Example: D = 384, unit vectors -> 4.7e-05
    """
    rows = conn.execute(f"SELECT norms FROM {table}")
    largest = max((max(floats(norms, "d")) for norms, in rows), default=0.0)
    return (2 * dim + 16) * FLOAT32_ERROR * math.sqrt(largest) + 1e-12


def keep_candidates(kept, first, norms, vecs, dim, estimates, limit, error):
    """Add to `kept` every slot of one block that may be in the exact top list: estimate ≥ the block's
    limit-th best estimate − 2 · error (the global limit-th best is never lower). estimates: [(slot, estimate)]
    of the used slots; kept gets (estimate, doc_id, vector bytes, |v|²)."""
    floor = heapq.nlargest(limit, (e for _, e in estimates))[-1] - 2 * error if len(estimates) > limit else -math.inf
    n2 = floats(norms, "d")
    size = dim * 4
    kept += [(e, first + k, vecs[k * size:(k + 1) * size], n2[k]) for k, e in estimates if e >= floor]


def exact_top(q, limit, kept, error):
    """The exact top list from the kept candidates: those within 2 · error of the limit-th best estimate,
    scored again with `similarity` (the Python scan's arithmetic, on the same floats).

    Example: estimates 0.91 (doc 3), 0.90 (doc 8), 0.20 (doc 5), limit 1, error 0.01 -> rescores 3 and 8
    """
    if not kept:
        return []
    kth = heapq.nlargest(limit, (e for e, *_ in kept))[-1]
    return top([(similarity(q, floats(v), n2), doc_id) for e, doc_id, v, n2 in kept if e >= kth - 2 * error], limit)


def scan_numpy(conn, q, limit, hidden=None, table=TABLE):
    """float32 matrix-vector product per block (einsum, one thread), keep_candidates, exact_top."""
    import numpy as np

    q32 = np.asarray(q.values, dtype=np.float32)
    kept, error = [], None
    for first, norms, vecs, dim in blocks(conn, hidden=hidden, table=table):
        error = float32_error(conn, dim, table) if error is None else error
        used = np.flatnonzero(np.frombuffer(norms, dtype="<f8"))
        matrix = np.frombuffer(vecs, dtype="<f4").reshape(-1, dim)
        estimates = np.einsum("ij,j->i", matrix, q32)[used]  # einsum, not @: BLAS threads spin on busy cores
        if len(used) > limit:  # only the block's best go on to Python
            cut = np.partition(estimates, -limit)[-limit] - 2 * error
            used, estimates = used[estimates >= cut], estimates[estimates >= cut]
        keep_candidates(kept, first, norms, vecs, dim, list(zip(used.tolist(), estimates.tolist())), limit, error)
    return exact_top(q, limit, kept, error)


SLOTS_SQL = """
WITH RECURSIVE slot(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM slot WHERE k + 1 < :count)
SELECT k, vec_distance_cosine(substr(:vecs, k * :size + 1, :size), :q) FROM slot
WHERE substr(:norms, k * 8 + 1, 8) != zeroblob(8)
"""


def scan_sqlite_vec(conn, q, limit, hidden=None, table=TABLE):
    """vec_distance_cosine per used slot, in SQLite; estimate = (1 − distance) · |v|; keep_candidates, exact_top."""
    q32 = pack(q.values)
    kept, error = [], None
    for first, norms, vecs, dim in blocks(conn, hidden=hidden, table=table):
        error = float32_error(conn, dim, table) if error is None else error
        n2 = floats(norms, "d")
        rows = conn.execute(SLOTS_SQL, {"count": len(n2), "vecs": vecs, "norms": norms, "size": dim * 4, "q": q32})
        estimates = [(k, (1.0 - d) * math.sqrt(n2[k])) for k, d in rows]
        keep_candidates(kept, first, norms, vecs, dim, estimates, limit, error)
    return exact_top(q, limit, kept, error)


def load_sqlite_vec(conn):
    """Load the sqlite-vec extension into conn; False if the package or extension loading is missing."""
    if not hasattr(conn, "enable_load_extension"):  # Python built without it (e.g. pyenv's default)
        return False
    try:
        conn.execute("SELECT vec_version()")
        return True
    except sqlite3.OperationalError:
        pass
    import importlib.util
    try:  # the extension file of the package, without importing it: its __init__ imports numpy (~0.1 s)
        spec = importlib.util.find_spec("sqlite_vec")
        if spec is None or not spec.submodule_search_locations:
            return False
        conn.enable_load_extension(True)
        try:
            conn.load_extension(os.path.join(list(spec.submodule_search_locations)[0], "vec0"))
        finally:
            conn.enable_load_extension(False)
        return True
    except (ImportError, ValueError, sqlite3.Error, AttributeError, OSError):
        return False


def numpy_available():
    try:
        import numpy  # noqa: F401
        return True
    except ImportError:
        return False


def choose(conn, work):
    """Which scan: RAG_PURE_PYTHON / RAG_SCAN, else sqlite-vec, numpy, python; a fast way only from
    FAST_MIN_FLOATS of work (N × D) on, numpy also when it is imported already.

    Example: choose(conn, 191 * 640) -> "python" (loading a module would take longer than the scan)
    """
    wanted = "python" if os.environ.get("RAG_PURE_PYTHON") == "1" else os.environ.get("RAG_SCAN", "")
    if wanted == "python":
        return "python"
    worth = {m: wanted == m or (not wanted and work >= least) for m, least in FAST_MIN_FLOATS.items()}
    if worth["sqlite-vec"] and load_sqlite_vec(conn):
        return "sqlite-vec"
    if (worth["numpy"] or (not wanted and "numpy" in sys.modules)) and numpy_available():
        return "numpy"
    return "python"


@contextlib.contextmanager
def snapshot(conn):
    """One read transaction around a scan, so that every block comes from the same state of the index."""
    if conn.in_transaction:  # the caller's transaction already is one
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.commit()


def scan(conn, q, limit, method=None, processes=None, hidden=(), table=TABLE):
    """Score every stored vector against the normalised question q (list or Query); best `limit` first.
    hidden: doc ids this reader may not see (rag/store/access.py); they are never scored. table: the
    chunks' vector_blocks, or one of the same layout (question_blocks: sqlite_questions.py).

    method / processes: force a way (tests, benchmarks); default: `choose`, and for the Python scan
    one process per core from FORK_MIN_FLOATS on (where os.fork exists and the index is a file).
    """
    q = q if isinstance(q, Query) else prepare(q)
    count, dim = size(conn, table)
    work = count * BLOCK_SIZE * dim
    method, hidden = method or choose(conn, work), by_block(hidden)
    if method == "sqlite-vec" and load_sqlite_vec(conn):
        with snapshot(conn):
            return Scan(scan_sqlite_vec(conn, q, limit, hidden, table), method, 1)
    if method == "numpy" and numpy_available():
        with snapshot(conn):
            return Scan(scan_numpy(conn, q, limit, hidden, table), method, 1)
    if processes is None:
        processes = worker_count() if work >= FORK_MIN_FLOATS else 1
    if not (hasattr(os, "fork") and database_path(conn)):
        processes = 1
    with snapshot(conn):
        if processes > 1:
            return Scan(scan_forked(conn, q, limit, processes, hidden, table), "python", processes)
        return Scan(scan_python(conn, q, limit, hidden=hidden, table=table), "python", 1)


def similarities(conn, q, doc_ids, table=TABLE):
    """{doc_id: q · v} for a few chunks, with the scan's arithmetic. Example: {17: 0.953}"""
    q = q if isinstance(q, Query) else prepare(q)
    stored = read_vectors(conn, doc_ids, table)
    return {doc_id: similarity(q, v, n2) for doc_id, (v, n2) in stored.items()}
