"""Ranking: exact cosine over the packed vectors, a German FTS5 cascade, and their fusion.

    retrieve(conn, "Kuendigungsfrist Dienstleister", qvec, mode="hybrid", top_k=4)
    -> Retrieval(sources=[Source(path="vertraege/…", heading="… › § 7 Kündigung", …)], strategy="strict", …)

vector   cosine of the question vector with every chunk vector, in pure Python, exact (no
         pre-filter); vectors are L2-normalised at index time, so cosine = dot product.
lexical  SQLite FTS5 with BM25 (heading weighted 2:1 over the body) over the search text of
         rag/german.py, in a cascade: strict (every content word, or its stem) → compound (a word's
         compound parts count too) → or (any word). Earlier stages rank first.
hybrid   Reciprocal Rank Fusion, k = 60, the lexical list weighted higher than the vector list
         (see LEXICAL_WEIGHT); ties broken by (path, chunk_index), never by dict order.

Then at most MAX_PER_FILE chunks per file (over-fetching fills the list), and the relevance floor:
when the evidence is weak the caller answers "Dazu habe ich keine Information." without the LLM.

Does not handle: approximate search (every query scans every vector; fine up to ~10^5 chunks).
"""
import heapq
import json
import operator
from dataclasses import dataclass, field

from . import german, store

try:
    from math import sumprod as dot  # Python 3.12+: exact, in C
except ImportError:  # Python 3.11
    def dot(a, b):
        """Example: dot([1, 2], [3, 4]) -> 11"""
        return sum(map(operator.mul, a, b))

RRF_K = 60  # Reciprocal Rank Fusion constant (Cormack et al.)
LEXICAL_WEIGHT = 1.0  # weight of the lexical ranking in hybrid mode
VECTOR_WEIGHT = 0.25  # weight of the vector ranking (small: the default 270M embedder is weak)
FETCH = 50  # candidates per mode before fusion and the per-file cap
MAX_PER_FILE = 3  # at most this many chunks of one file in the final top-k
MIN_COVERAGE = 0.5  # floor: share of the question's content words found in the best lexical hit
MODES = ("hybrid", "vector", "lexical")


@dataclass
class Source:
    doc_id: int
    path: str
    chunk_index: int
    heading: str
    content: str
    flags: list
    score: float = 0.0
    ranks: dict = field(default_factory=dict)  # mode -> 1-based rank
    cosine: float = None

    def as_json(self):
        return {"path": self.path, "heading": self.heading, "chunk_index": self.chunk_index,
                "score": round(self.score, 6), "cosine": None if self.cosine is None else round(self.cosine, 6),
                "ranks": self.ranks, "flags": self.flags}


@dataclass
class Retrieval:
    sources: list
    mode: str
    strategy: str = None  # lexical stage that matched: strict / compound / or / None
    query_text: str = ""  # the folded search text of the question (for --explain)
    coverage: float = 0.0  # share of content words in the best lexical hit
    best_cosine: float = None
    weak: bool = False  # True: not enough evidence, do not ask the LLM
    weak_reason: str = ""


# -- vector ----------------------------------------------------------------------------------------
def vector_ranking(conn, qvec, limit):
    """[(cosine, doc_id)] best first, over every stored vector; ties keep index order."""
    rows = conn.execute("SELECT doc_id, vec FROM vectors ORDER BY doc_id")
    unpack = store.unpack
    return heapq.nlargest(limit, ((dot(qvec, unpack(blob)), doc_id) for doc_id, blob in rows),
                          key=operator.itemgetter(0))


def normalise(vec):
    norm = dot(vec, vec) ** 0.5
    return [x / norm for x in vec] if norm else list(vec)


# -- lexical ---------------------------------------------------------------------------------------
def quote(term):
    return '"' + term.replace('"', '""') + '"'


def fts_queries(terms):
    """The cascade as FTS5 MATCH strings: [(stage, query)], stages without a query left out.

    Example: terms for "Kuendigungsfrist Dienstleister" ->
      [("strict", '("kuendigungsfrist") AND ("dienstleister")'),
       ("compound", '("kuendigungsfrist" OR "kuendigung" OR "frist") AND ("dienstleister")'),
       ("or", '"kuendigungsfrist" OR "kuendigung" OR "frist" OR "dienstleister"')]
    """
    if not terms:
        return []
    strict = [list(variants) for _, variants, _ in terms]
    expanded = [list(dict.fromkeys(variants + parts + [german.stem(p) for p in parts]))
                for _, variants, parts in terms]
    group = lambda alts: "(" + " OR ".join(map(quote, alts)) + ")"  # noqa: E731
    stages = [("strict", " AND ".join(map(group, strict)))]
    if expanded != strict:
        stages.append(("compound", " AND ".join(map(group, expanded))))
    if len(terms) > 1:
        stages.append(("or", " OR ".join(quote(a) for alts in expanded for a in alts)))
    return stages


def lexical_ranking(conn, terms, limit):
    """[(bm25 score, doc_id)] best first (higher = better) and the first stage that matched."""
    found, strategy = [], None
    seen = set()
    for stage, query in fts_queries(terms):
        rows = conn.execute(
            "SELECT rowid, -bm25(fts, 2.0, 1.0) AS s FROM fts WHERE fts MATCH ? "
            "ORDER BY s DESC, rowid LIMIT ?", (query, limit)).fetchall()
        new = [(s, doc_id) for doc_id, s in rows if doc_id not in seen]
        if new and strategy is None:
            strategy = stage
        found += new
        seen.update(doc_id for _, doc_id in new)
        if len(found) >= limit:
            break
    return found[:limit], strategy


def coverage(conn, doc_id, terms):
    """Share of the question's content words (any alternative) present in a chunk's search text."""
    if not terms:
        return 0.0
    row = conn.execute("SELECT heading || ' ' || body FROM fts WHERE rowid = ?", (doc_id,)).fetchone()
    tokens = set(row[0].split()) if row else set()
    hit = sum(1 for _, variants, parts in terms if tokens & set(variants + parts))
    return hit / len(terms)


# -- fusion, cap, floor ----------------------------------------------------------------------------
def load_sources(conn, doc_ids):
    if not doc_ids:
        return {}
    rows = conn.execute(f"SELECT id, path, chunk_index, heading, content, flags FROM docs WHERE id IN "
                        f"({','.join('?' * len(doc_ids))})", list(doc_ids))
    return {r[0]: Source(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows}


def fuse(rankings, weights):
    """Weighted Reciprocal Rank Fusion: {doc_id: score}.

    Example: fuse({"lexical": [(9.1, 7), (8.0, 3)]}, {"lexical": 1.0}) -> {7: 1/61, 3: 1/62}
    """
    scores = {}
    for mode, ranking in rankings.items():
        for rank, (_, doc_id) in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weights[mode] / (RRF_K + rank)
    return scores


def cap_per_file(sources, top_k, max_per_file):
    """The first top_k sources with at most max_per_file from one path."""
    out, per_file = [], {}
    for source in sources:
        if per_file.get(source.path, 0) < max_per_file:
            out.append(source)
            per_file[source.path] = per_file.get(source.path, 0) + 1
        if len(out) == top_k:
            break
    return out


def judge(result, floor_cosine):
    """Set result.weak: no lexical evidence worth the name, and no vector evidence above the floor.

    Lexical evidence = a strict or compound match, or an OR match covering at least MIN_COVERAGE
    of the question's content words. Vector evidence = best cosine ≥ floor_cosine (stored in the
    index per model; None = not used).
    """
    lexical_ok = result.strategy in ("strict", "compound") or (
        result.strategy == "or" and result.coverage >= MIN_COVERAGE)
    vector_ok = floor_cosine is not None and result.best_cosine is not None and result.best_cosine >= floor_cosine
    if result.mode == "vector":
        lexical_ok = False
        vector_ok = vector_ok or floor_cosine is None
    if result.mode == "lexical":
        vector_ok = False
    if not (lexical_ok or vector_ok):
        result.weak = True
        result.weak_reason = (f"Suchstufe {result.strategy or 'keine'}, Abdeckung {result.coverage:.0%}"
                              + (f", bester Kosinus {result.best_cosine:.3f} < {floor_cosine}"
                                 if result.best_cosine is not None and floor_cosine is not None else ""))
    return result


def retrieve(conn, question, qvec, mode="hybrid", top_k=4, max_per_file=MAX_PER_FILE,
             floor_cosine=None, vector_weight=VECTOR_WEIGHT):
    """Rank the chunks for a question. qvec may be None in lexical mode."""
    assert mode in MODES, mode
    fetch = max(FETCH, top_k * max_per_file * 4)
    vocab = store.load_vocab(conn)
    terms = german.query_terms(question, vocab)
    result = Retrieval([], mode, query_text=" ".join(german.index_text(question, vocab).split()))
    rankings = {}
    if mode in ("hybrid", "lexical") and store.fts_available(conn):
        rankings["lexical"], result.strategy = lexical_ranking(conn, terms, fetch)
        if rankings["lexical"]:
            result.coverage = coverage(conn, rankings["lexical"][0][1], terms)
    cosines = {}
    if mode in ("hybrid", "vector") and qvec is not None:
        qvec = normalise(qvec)
        rankings["vector"] = vector_ranking(conn, qvec, fetch)
        cosines = {doc_id: s for s, doc_id in rankings["vector"]}
        result.best_cosine = rankings["vector"][0][0] if rankings["vector"] else None
    if mode == "hybrid":
        scores = fuse(rankings, {"lexical": LEXICAL_WEIGHT, "vector": vector_weight})
    else:
        scores = {doc_id: s for s, doc_id in rankings.get(mode, [])}
    sources = load_sources(conn, scores)
    for name, ranking in rankings.items():
        for rank, (_, doc_id) in enumerate(ranking, start=1):
            sources[doc_id].ranks[name] = rank
    for doc_id, source in sources.items():
        source.score = scores[doc_id]
        source.cosine = cosines.get(doc_id)
    ordered = sorted(sources.values(), key=lambda s: (-s.score, s.path, s.chunk_index))
    result.sources = cap_per_file(ordered, top_k, max_per_file)
    if qvec is not None and mode == "hybrid":  # cosine for the final sources even if outside the vector top
        for source in result.sources:
            if source.cosine is None:
                blob = conn.execute("SELECT vec FROM vectors WHERE doc_id = ?", (source.doc_id,)).fetchone()[0]
                source.cosine = dot(qvec, store.unpack(blob))
    return judge(result, floor_cosine)
