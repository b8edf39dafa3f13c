"""Questions grouped by topic: agglomerative clustering of their vectors by cosine, average linkage.

    groups([[1, 0], [0.99, 0.14], [0, 1]], threshold=0.9) -> [[0, 1], [2]]

Start with every question alone; again and again join the two groups whose average cosine (over
every pair of their questions) is highest, while it is at least `threshold`. Deterministic: ties
go to the lower index, and the sums run in index order. A heap of candidate pairs with lazy
deletion makes it O(n² log n) for n questions; the similarity matrix is n²/2 dot products (one
numpy matrix product when numpy is installed; bench/feedback.py measures both).

THRESHOLDS: the cosine two questions of one topic reach, per embedding model (rag/tuned.toml, with
where it comes from). multilingual-e5-small puts even unrelated German questions near cosine 0.79
(one topic: 0.87), so its threshold is high; a model not listed gets THRESHOLD.
RAG_REPORT_THRESHOLD overrides both.

Does not handle: more than a few thousand distinct questions (memory n², time n² log n), choosing
the number of groups (the threshold decides), a question that belongs to two topics.
"""
import heapq
import operator
import os

from rag import config, tuned
from rag.store import vectors as vectors_module

NUMPY_MIN = 100_000  # floats (questions × dimensions) from which numpy computes the cosines, if
#                     installed: 300 questions × 384 dimensions take ~0.4 s in pure Python
THRESHOLD = tuned.value("clusters.THRESHOLD")  # a model not in THRESHOLDS (typed in by hand)
# per embedding model, fit by `bench/feedback.py --threshold` (rag/tuned.toml)
THRESHOLDS = tuned.value("clusters.THRESHOLDS")


def threshold_for(model):
    """The threshold for an index's embedding model. Example: threshold_for("x.gguf") -> 0.9"""
    given = config.env_float("RAG_REPORT_THRESHOLD", None)
    return given if given is not None else THRESHOLDS.get(model, THRESHOLD)


def dot(a, b):
    """Example: dot([1, 2], [3, 4]) -> 11"""
    return sum(map(operator.mul, a, b))


def unit(vector):
    """Example: unit([3, 4]) -> [0.6, 0.8]"""
    norm = dot(vector, vector) ** 0.5
    return [x / norm for x in vector] if norm else list(vector)


def similarities(vectors):
    """The cosine of every pair, as an n × n list of lists (the diagonal 1.0); with numpy installed
    one float64 matrix product (NUMPY_MIN floats and more), else (or RAG_PURE_PYTHON=1) Python."""
    units = [unit(v) for v in vectors]
    n = len(units)
    fast = not os.environ.get("RAG_PURE_PYTHON") and vectors_module.numpy_available()
    if fast and n * len(units[0] if units else ()) >= NUMPY_MIN:
        import numpy
        matrix = numpy.array(units, dtype=numpy.float64)
        return (matrix @ matrix.T).tolist()
    matrix = [[1.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            matrix[i][j] = matrix[j][i] = dot(units[i], units[j])
    return matrix


def groups(vectors, threshold):
    """The indexes of `vectors` in groups, each sorted; the largest group first, then by index."""
    sim = similarities(vectors)
    n = len(sim)
    size, alive, version, members = [1] * n, [True] * n, [0] * n, [[i] for i in range(n)]
    heap = [(-sim[i][j], i, j, 0, 0) for i in range(n) for j in range(i + 1, n)
            if sim[i][j] >= threshold]
    heapq.heapify(heap)
    while heap:
        _, i, j, seen_i, seen_j = heapq.heappop(heap)
        if not (alive[i] and alive[j]) or (version[i], version[j]) != (seen_i, seen_j):
            continue  # one of the two changed since this pair was pushed
        total = size[i] + size[j]
        for k in range(n):  # average linkage, updated in place (Lance-Williams)
            if alive[k] and k not in (i, j):
                joined = (size[i] * sim[i][k] + size[j] * sim[j][k]) / total
                sim[i][k] = sim[k][i] = joined
        size[i], alive[j], version[i] = total, False, version[i] + 1
        members[i] += members[j]
        for k in range(n):
            if alive[k] and k != i and sim[i][k] >= threshold:
                a, b = min(i, k), max(i, k)
                heapq.heappush(heap, (-sim[i][k], a, b, version[a], version[b]))
    found = [sorted(members[i]) for i in range(n) if alive[i]]
    return sorted(found, key=lambda g: (-len(g), g[0]))
