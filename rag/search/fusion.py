"""Several texts searched as one: the question and its expansions, fused by weighted RRF.

    retrieve_fused(index, [("Postfach voll, was tun?", v0), ("Quota erhöhen", v1)], [1.0, 0.5])
    -> Retrieval(sources=[Source(heading="… › Quota erhöhen",
                                 ranks={"lexical": 4, "expanded": 1}), …])

rag/search/expand.py retrieve() calls it with what --expand and a follow-up add; each text is ranked
by rag/search/ranking.py retrieve(), uncapped, and the fused list gets the per-file cap there. One
text alone is exactly retrieve().

Does not handle: the second stage (rag/search/finalists.py) over several texts: its cosine is to the
question alone and would undo what an expansion found.
"""
from rag.search.ranking import (COMPARABLE, MAX_PER_FILE, RRF_K, cap_per_file, fill_cosines, fuse,
                                normalise, retrieve)
from rag.store import sqlite as store


def retrieve_fused(index, queries, weights, top_k=4, max_per_file=MAX_PER_FILE,
                   comparable=COMPARABLE, chooser=None, feedback=None, **options):
    """retrieve() for the question and its expansions, fused by weighted RRF, then the per-file cap.
    queries: [(text, vector or None)], the question first; weights: one per text; options: as for
    retrieve(). One text and no chooser: exactly retrieve(), with its second stage
    (rag/search/finalists.py); several texts are fused without it: its cosine is to the question
    alone and would undo what an expansion found.

    Hybrid: a chunk's score is the sum of weight × its RRF score for each text, i.e. one RRF over
    the lexical and vector rankings of all texts (a text whose words match nothing adds little);
    vector or lexical mode: RRF over each text's positions. Ties by (path, chunk_index). The
    question's own Retrieval carries the result (search text, coverage, cosines to the question); a
    chunk that an expansion found gets ranks["expanded"] (its best rank there). Floor: weak only
    when every text is weak.
    chooser(ranked sources) -> (doc ids, weight): one more ranking, added by RRF
    (rag/search/expand.py: the model's choice among the first results); a chosen chunk gets
    ranks["chosen"]. feedback(index, the question's Retrieval) -> [(text, weight)]: more texts,
    searched in full text only and fused like the expansions (rag/search/expand.py prf); they never
    decide the floor.
    Example: [("Postfach voll, was tun?", v0), ("Quota erhöhen", v1)], [1.0, 0.5]
             -> Retrieval(sources=[Source(heading="… › Quota erhöhen",
                                          ranks={"lexical": 4, "expanded": 1}), …])
    """
    if len(queries) == 1 and chooser is None and feedback is None:
        return retrieve(index, *queries[0], top_k=top_k, max_per_file=max_per_file,
                        comparable=comparable, **options)
    index = store.as_store(index)
    options.update(top_k=top_k, max_per_file=max_per_file, comparable=comparable, capped=False)
    found = [retrieve(index, text, vec, **options) for text, vec in queries]
    judged, weights = len(found), list(weights)  # judged: the texts whose floor counts
    for text, weight in feedback(index, found[0]) if feedback is not None else []:
        found.append(retrieve(index, text, None, **options))
        weights.append(weight)
    chunks = merged(found, fused_scores(found, weights))
    ordered = sorted(chunks.values(), key=lambda s: (-s.score, s.path, s.chunk_index))
    if chooser is not None:
        chosen, weight = chooser(cap_per_file(ordered, len(ordered), max_per_file, comparable))
        for rank, doc_id in enumerate(chosen, start=1):
            chunks[doc_id].score += weight / (RRF_K + rank)
            chunks[doc_id].ranks["chosen"] = rank
        ordered = sorted(chunks.values(), key=lambda s: (-s.score, s.path, s.chunk_index))
    result = found[0]
    result.sources = cap_per_file(ordered, top_k, max_per_file, comparable)
    if queries[0][1] is not None:  # cosine to the question for every final source
        fill_cosines(index, result.sources, normalise(queries[0][1]))
    result.weak = all(r.weak for r in found[:judged])
    result.weak_reason = result.weak_reason if result.weak else ""
    return result


def fused_scores(found, weights):
    """{doc_id: score} over the Retrievals of several texts, each with its weight.

    Hybrid: each score is RRF over the text's own rankings already, so they add up; vector or
    lexical: cosines and BM25 scores of different texts do not add up, so RRF over the positions.
    """
    if found[0].mode == "hybrid":
        scores = {}
        for r, weight in zip(found, weights):
            for source in r.sources:
                scores[source.doc_id] = scores.get(source.doc_id, 0.0) + weight * source.score
        return scores
    return fuse({n: [(0, s.doc_id) for s in r.sources] for n, r in enumerate(found)},
                dict(enumerate(weights)))


def merged(found, scores):
    """{doc_id: Source} of every text's sources with its fused score; the question's own Source
    first, and a chunk found by an expansion gets ranks["expanded"] (its best rank there)."""
    chunks, expanded = {}, {}  # expanded: doc id -> best rank in an expansion's list
    for n, r in enumerate(found):
        for rank, source in enumerate(r.sources, start=1):
            if source.doc_id not in chunks:  # the question's own Source first
                chunks[source.doc_id] = source
                # found only by an expansion: its ranks and cosine were for the expansion's text
                if n:
                    source.ranks, source.cosine = {}, None
            if n:
                expanded[source.doc_id] = min(rank, expanded.get(source.doc_id, rank))
    for doc_id, source in chunks.items():
        source.score = scores[doc_id]
        if doc_id in expanded:
            source.ranks["expanded"] = expanded[doc_id]
    return chunks
