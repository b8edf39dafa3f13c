"""Ranking: exact cosine over the vectors, a German full-text cascade, and their fusion.

    retrieve(index, "Kuendigungsfrist Dienstleister", qvec, mode="hybrid", top_k=4)
    -> Retrieval(sources=[Source(path="vertraege/…", heading="… › § 7 Kündigung", …)],
                 strategy="strict", …)

The question path: rag/core.py → rag/search/expand.py retrieve() → rag/search/fusion.py
retrieve_fused(), which runs retrieve() here once for the question and once for each expansion and
fuses them (one text alone: exactly retrieve()). evaluate.py measures retrieve() itself (the floor
and the vector weight, one text each).

`index` is a store (rag/store/sqlite.py: SQLite, or PostgreSQL in rag/store/postgres.py); everything
here is the same for both, the store only answers the questions of its interface.

vector   cosine of the question vector with every chunk vector, exact (no pre-filter); vectors are
         L2-normalised at index time, so cosine = dot product. SQLite (rag/store/vectors.py): pure
         Python (on every core for large indexes), or numpy / sqlite-vec when installed, same
         result; PostgreSQL: pgvector, rescored exactly, or an HNSW preselection rescored exactly
         (--ann).
lexical  BM25 (heading weighted 2:1 over the body; FTS5's own in SQLite, the same formula in SQL on
         PostgreSQL) over the search text of rag/text/german.py, in a cascade
         (rag/search/lexical.py): strict (every content word, or its stem) → compound (a word's
         compound parts count too) → or (any word). Earlier stages rank first.
hybrid   Reciprocal Rank Fusion, k = 60, the lexical list weighted higher than the vector list
         (see LEXICAL_WEIGHT); ties broken by (path, chunk_index), never by dict order.

Then at most MAX_PER_FILE chunks per file (over-fetching fills the list), and the relevance floor:
when the evidence is weak the caller answers "Dazu habe ich keine Information." without the LLM.

Does not handle: approximate search in SQLite (every query scans every vector; fine up to ~10^5
chunks; PostgreSQL with HNSW beyond that).
"""
import dataclasses
import math
import operator
from dataclasses import dataclass, field

from rag import tuned
from rag.search import finalists, questions
from rag.search.floor import floor  # the relevance floor decides after the ranking
from rag.search.lexical import chunk_tokens, covered, lexical_ranking, store_size
from rag.store import sqlite as store
from rag.text import german

try:
    from math import sumprod as dot  # Python 3.12+: exact, in C
except ImportError:  # Python 3.11
    def dot(a, b):
        """Example: dot([1, 2], [3, 4]) -> 11"""
        return sum(map(operator.mul, a, b))

# The numbers, with where each comes from: rag/tuned.py (`ask_rag.py --explain` prints them).
RRF_K = tuned.value("ranking.RRF_K")  # Reciprocal Rank Fusion constant
LEXICAL_WEIGHT = tuned.value("ranking.LEXICAL_WEIGHT")  # the lexical ranking's weight (hybrid)
# … the vector ranking's, for an embedding model without a measured one (RAG_VECTOR_WEIGHT)
VECTOR_WEIGHT = tuned.value("ranking.VECTOR_WEIGHT")
FETCH = 50  # candidates per mode before fusion and the per-file cap
MAX_PER_FILE = tuned.value("ranking.MAX_PER_FILE")  # at most this many chunks of one file …
# … while another file's candidate scores this share
COMPARABLE = tuned.value("ranking.COMPARABLE")
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
    # the chunk indexes joined into this source (whole_sections); () = chunk_index alone
    chunks: tuple = ()

    def as_json(self):
        return {"path": self.path, "heading": self.heading, "chunk_index": self.chunk_index,
                **({"chunks": list(self.chunks)} if self.chunks else {}),
                "score": round(self.score, 6),
                "cosine": None if self.cosine is None else round(self.cosine, 6),
                "ranks": self.ranks, "flags": self.flags}


@dataclass
class Retrieval:
    sources: list
    mode: str
    strategy: str = None  # lexical stage that matched: strict / compound / or / None
    query_text: str = ""  # the folded search text of the question (for --explain)
    coverage: float = 0.0  # IDF-weighted share of the question's words in the best lexical hit
    unknown: float = 0.0  # IDF-weighted share of the question's words that no chunk contains
    best_cosine: float = None
    weak: bool = False  # True: not enough evidence, do not ask the LLM
    weak_reason: str = ""
    # how the vector scan ran: "python", "numpy",
    # "sqlite-vec" (rag/store/vectors.py), "pgvector", "hnsw"
    scan: str = None
    scan_processes: int = None  # processes of the Python scan (os.fork on large indexes)
    # hnsw: candidates preselected and rescored exactly (None: every vector scored)
    scan_candidates: int = None
    under: str = None  # the folder filter: only pages below it were searched ("mail/")
    # what the embedder got in front of the question (e5: "query: "); None: not embedded
    query_prefix: str = None
    # the question's content words (rag/text/german.py Term) …
    terms: list = field(default_factory=list)
    # … and their IDF weights: rag/answer/context.py scores sentences with them
    weights: list = field(default_factory=list)
    # the index's compound vocabulary (rag/text/german.py)
    vocab: set = field(default_factory=set, repr=False)
    # rag/privacy/mask.py Kept: values left readable (Hotline, RAG_PII_KEEP)
    pii_kept: list = field(default_factory=list)
    found_by: dict = field(default_factory=dict)  # doc_id -> the index-time question that found it


# -- vector ----------------------------------------------------------------------------------------
def normalise(vec):
    norm = dot(vec, vec) ** 0.5
    return [x / norm for x in vec] if norm else list(vec)


def folder(under):
    """The folder filter as a path prefix. Example: folder("./mail") -> "mail/"; folder("")
    -> None"""
    under = (under or "").strip().replace("\\", "/").strip("/")
    while under.startswith("./"):
        under = under[2:]
    return under + "/" if under and under != "." else None


def folder_ids(index, prefix):
    """The doc ids of every chunk below a folder prefix ("mail/"), as a set."""
    return store.as_store(index).ids_below(prefix)


# -- fusion, cap, floor ----------------------------------------------------------------------------
def load_sources(index, doc_ids):
    return {doc_id: Source(*row)
            for doc_id, row in store.as_store(index).sources(list(doc_ids)).items()}


def fuse(rankings, weights):
    """Weighted Reciprocal Rank Fusion: {doc_id: score}.

    Example: fuse({"lexical": [(9.1, 7), (8.0, 3)]}, {"lexical": 1.0}) -> {7: 1/61, 3: 1/62}
    """
    scores = {}
    for mode, ranking in rankings.items():
        for rank, (_, doc_id) in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weights[mode] / (RRF_K + rank)
    return scores


def cap_per_file(sources, top_k, max_per_file, comparable=COMPARABLE):
    """The first top_k sources, at most max_per_file from one path while other files offer
    candidates of comparable score: a chunk over the cap gives way only to the best chunk of another
    file whose score is at least `comparable` times its own (scores by list position, 1/(RRF_K +
    rank)). comparable=0 is the hard cap (the list may end short); with comparable > 0 one big file
    (a law book, a manual as one PDF) still fills the list when no other file comes close.

    Example (max_per_file=1, comparable=0.9), ranked a.md#0, a.md#1, b.md#0 at positions 1, 2, 8:
      a.md#1 (1/62) vs b.md#0 (1/68 = 0.91 × 1/62): b.md#0 comes second.
    """
    score = {id(s): 1 / (RRF_K + rank) for rank, s in enumerate(sources, start=1)}
    pending, out, per_file = list(sources), [], {}
    while pending and len(out) < top_k:
        source = pending[0]
        if per_file.get(source.path, 0) >= max_per_file:
            other = next((s for s in pending if per_file.get(s.path, 0) < max_per_file), None)
            # the hard cap: a shorter list rather than more of one file
            if other is None and not comparable:
                break
            if other is not None and score[id(other)] >= comparable * score[id(source)]:
                source = other
        pending.remove(source)
        out.append(source)
        per_file[source.path] = per_file.get(source.path, 0) + 1
    return out


# whole_sections: a section longer than this (characters) stays cut into its chunks; how-to answers
# print it verbatim (the model reads 250 characters of it)
SECTION_MAX = tuned.value("ranking.SECTION_MAX")


def whole_sections(index, sources, max_chars=SECTION_MAX):
    """The sources with each chunk widened to its whole section (same page and heading path), when
    the section was cut into several chunks and fits in max_chars; a later source of a section
    already widened is dropped (its text is in the earlier one). For how-to questions: a procedure's
    numbered steps and its code block often land in two chunks, and the model needs both.

    Example: [a.md#3 (steps 1–7, part 1 of "Anlegen"), b.md#0]
             -> [a.md#3+#4 (steps and code), b.md#0]
    """
    out, widened = [], set()
    for source in sources:
        key = (source.path, source.heading)
        if key in widened:
            continue
        rows = store.as_store(index).section(*key)
        joined = "\n\n".join(content for _, content in rows)
        if len(rows) > 1 and len(joined) <= max_chars:
            source = dataclasses.replace(source, content=joined, chunk_index=rows[0][0],
                                         chunks=tuple(i for i, _ in rows))
            widened.add(key)
        out.append(source)
    return out


def fill_cosines(index, sources, qvec):
    """Fill in the cosine to the (normalised) question vector where a source has none yet."""
    missing = index.similarities(qvec, [s.doc_id for s in sources if s.cosine is None])
    for source in sources:
        if source.cosine is None:
            source.cosine = missing.get(source.doc_id)


# Measured with `evaluate.py --tune` on eval/questions.jsonl, per embedding model
# (rag/tuned.toml embed_models).
MEASURED = {model: number.value for model, number in tuned.EMBED_MODELS.items()}


def index_settings(meta, vector_weight=None, floor_cosine=None, reject_cosine=None):
    """(vector weight, cosine floor, cosine reject) for an index: the given value, else the one
    stored in the index by `evaluate.py --tune --store`, else the measured one for its model
    (MEASURED), else the default (VECTOR_WEIGHT, no cosine thresholds).

    Example: index_settings({"embed_model": "gemma-3-270m-q4_k_m.gguf"}) -> (0.01, 0.956, None)
    """
    measured = MEASURED.get(meta.get("embed_model"), {})
    if vector_weight is None:
        vector_weight = float(meta.get("vector_weight")
                              or measured.get("vector_weight", VECTOR_WEIGHT))

    def threshold(given, key):
        if given is not None:
            return given
        if key in meta:  # stored by --tune --store; "" = measured: none helps
            return float(meta[key]) if meta[key] else None
        return measured.get(key)

    return (vector_weight, threshold(floor_cosine, "floor_cosine"),
            threshold(reject_cosine, "reject_cosine"))


def lexical_side(index, terms, fetch, allowed, result):
    """The lexical ranking [(score, doc_id)] of the question's terms; its evidence for the floor
    goes into `result`: the cascade stage, the IDF weights, the best hit's coverage and the share of
    the question no chunk contains. allowed: the doc ids below the folder filter, or None."""
    ranking, result.strategy, weights = lexical_ranking(index, terms, fetch, allowed)
    result.weights = weights
    if ranking:
        result.coverage = covered(chunk_tokens(index, ranking[0][1]), terms, weights)
    top_weight = math.log((store_size(index) + 0.5) / 0.5 + 1)
    result.unknown = sum(w for w in weights if w >= top_weight - 1e-9) / (sum(weights) or 1.0)
    return ranking


def vector_side(index, qvec, fetch, ann, allowed, result):
    """The vector ranking [(cosine, doc_id)] of the normalised question vector and the store's scan;
    how the scan ran goes into `result`. With a folder filter (allowed: its doc ids) every vector is
    ranked, exactly (an HNSW preselection holds at most 1,000), and the filtered first `fetch` kept.
    """
    if allowed is None:
        found = index.vector_scan(qvec, fetch, ann)
    else:
        found = index.vector_scan(qvec, index.count(), False if index.kind == "postgres" else None)
    ranking = found.ranking
    result.scan, result.scan_processes, result.scan_candidates = (found.method, found.processes,
                                                                  found.candidates)
    if allowed is not None:
        ranking = [(s, i) for s, i in ranking if i in allowed][:fetch]
    return ranking, found


def retrieve(index, question, qvec, mode="hybrid", top_k=4, max_per_file=MAX_PER_FILE,
             floor_cosine=None, vector_weight=VECTOR_WEIGHT, comparable=COMPARABLE,
             reject_cosine=None, under=None, ann=None, capped=True):
    """Rank the chunks for a question. qvec may be None in lexical mode.

    index: a store (rag/store/sqlite.py; a bare sqlite3 connection works too).
    under: only chunks of pages below this folder ("mail/"); the word weights stay the whole
    index's. ann: None = the store decides by size, True = HNSW preselection (PostgreSQL), False =
    exact. capped=False: every candidate in rank order, no per-file cap, no top_k, no cosine filled
    in (retrieve_fused).
    """
    assert mode in MODES, mode
    index = store.as_store(index)
    fetch = max(FETCH, top_k * max_per_file * 4)
    vocab = index.vocab()
    terms = german.query_terms(question, vocab)
    result = Retrieval([], mode, query_text=" ".join(german.index_text(question, vocab).split()),
                       under=folder(under))
    allowed = folder_ids(index, result.under) if result.under else None
    result.terms, result.weights, result.vocab = terms, [1.0] * len(terms), vocab
    rankings = {}
    if mode in ("hybrid", "lexical") and index.has_lexical():
        rankings["lexical"] = lexical_side(index, terms, fetch, allowed, result)
    cosines, found = {}, None
    if mode in ("hybrid", "vector") and qvec is not None:
        qvec = normalise(qvec)
        rankings["vector"], found = vector_side(index, qvec, fetch, ann, allowed, result)
        cosines = {doc_id: s for s, doc_id in rankings["vector"]}
        result.best_cosine = rankings["vector"][0][0] if rankings["vector"] else None
    if mode == "hybrid":
        scores = fuse(rankings, {"lexical": LEXICAL_WEIGHT, "vector": vector_weight})
    else:
        scores = {doc_id: s for s, doc_id in rankings.get(mode, [])}
    sources = load_sources(index, scores)
    for name, ranking in rankings.items():
        for rank, (_, doc_id) in enumerate(ranking, start=1):
            sources[doc_id].ranks[name] = rank
    for doc_id, source in sources.items():
        source.score = scores[doc_id]
        source.cosine = cosines.get(doc_id)
    if mode == "hybrid":
        ordered = sorted(sources.values(), key=lambda s: (-s.score, s.path, s.chunk_index))
        if capped:  # the second stage: the first sections scored again (rag/search/finalists.py)
            ordered = finalists.rerank(index, ordered, qvec, terms, result.weights, vocab)
    else:  # the mode's own order (the lexical cascade is not sorted by BM25 alone)
        ordered = [sources[doc_id] for _, doc_id in rankings.get(mode, [])]
    result.sources = cap_per_file(ordered, top_k, max_per_file, comparable) if capped else ordered
    result.found_by = questions.found_by(index, result, found)  # "gefunden über die Frage: …"
    # cosine for the final sources even if outside the vector top
    if capped and qvec is not None and mode == "hybrid":
        fill_cosines(index, result.sources, qvec)
    return floor(result, floor_cosine, reject_cosine)
