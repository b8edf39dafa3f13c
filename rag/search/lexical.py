"""The lexical side of the search: the German full-text cascade over a store, and how much of a
question a chunk covers.

    lexical_ranking(index, german.query_terms("Kuendigungsfrist Dienstleister", vocab), 50)
    -> ([(score, doc_id), …] best first, "strict" (the stage that matched),
    [IDF weight of each term])

BM25 comes from the store (FTS5 in SQLite, the same formula in SQL on PostgreSQL); the cascade runs
strict (every content word, or its stem) → compound (a word's compound parts, or its first
letters) → or (any word), earlier stages ranked first; within a stage BM25 × coverage
(covered()).

Does not handle: phrases or word distance, synonyms (rag/search/expand.py asks the model for those).
"""
import functools
import math

from rag import tuned
from rag.text import german

# lexical score = BM25 × coverage ** COVERAGE_POWER (0 = plain BM25)
COVERAGE_POWER = tuned.value("lexical.COVERAGE_POWER")
TOKENS_KEPT = 8192  # texts whose search tokens stay in memory (tokens); a size, not tuned


def alternatives(term, loose):
    """What may stand for a question word: [(word, prefix?)]. Example: loose "kuendigungsfrist" ->
    [("kuendigungsfrist", False), ("kuendigung", False), ("frist", False), ("kuendi", True)]"""
    alts = [(a, False) for a in (term.loose if loose else term.exact)]
    if loose and term.prefix:
        alts.append((term.prefix, True))
    return alts


def cascade(terms):
    """The cascade: [(stage, groups)], a stage matches a chunk that has one alternative of every
    group.

    strict: every word (or its stem); compound: every word, or one of its parts, stems, or a word
    with the same first letters; or: any of these (one group).
    Example: terms for "Kuendigungsfrist Dienstleister" ->
      [("strict", [[("kuendigungsfrist", False)],
                   [("dienstleister", False), ("dienstleist", False)]]),
       ("compound", [[("kuendigungsfrist", False), ("kuendigung", False), …, ("kuendi", True)],
                     […]]),
       ("or", [[("kuendigungsfrist", False), …, ("dienst", True)]])]
    """
    if not terms:
        return []
    stages = [("strict", [alternatives(t, False) for t in terms]),
              ("compound", [alternatives(t, True) for t in terms])]
    if len(terms) > 1:
        stages.append(("or", [[a for t in terms for a in alternatives(t, True)]]))
    return stages


def covered(tokens, terms, weights):
    """IDF-weighted share of the question's terms found in a chunk's search tokens (0…1).

    Example: terms "frist" (weight 2.0) and "drucker" (1.0), tokens {"frist"} -> 2/3
    """
    total = sum(weights) or 1.0
    return sum(w for term, w in zip(terms, weights) if term.found_in(tokens)) / total


def tokens(text, vocab):
    """The set of a text's search tokens (german.index_text), kept per text and vocabulary: the
    report searches every section, and the same headings and chunks come back for many questions.

    Example: tokens("Quota", vocab) -> frozenset({"quota"})
    """
    return kept_tokens(text, vocab if isinstance(vocab, frozenset) else frozenset(vocab))


@functools.lru_cache(maxsize=TOKENS_KEPT)
def kept_tokens(text, vocab):
    return frozenset(german.index_text(text, vocab).split())


def chunk_tokens(index, doc_id):
    return set(index.search_text(doc_id).split())


def lexical_ranking(index, terms, limit, allowed=None):
    """[(score, doc_id)] best first, the first cascade stage that matched, and the IDF weights.

    Within a stage the score is BM25 × coverage, coverage = the IDF-weighted share of the
    question's words in the chunk: a chunk that repeats one rare word loses to one that has most
    of the question (evaluate.py, lexical: MRR@10 0.751 -> 0.774, Recall@5 0.861 -> 0.904 over
    BM25 alone; coverage² 0.764 / 0.913).
    Earlier stages rank first.
    """
    found, strategy, seen = [], None, set()
    weights = term_weights(index, terms)
    for stage, groups in cascade(terms):
        # filtered: every match, then the folder
        rows = index.lexical(groups, limit if allowed is None else None)
        new = [(bm25 * covered(set(text.split()), terms, weights) ** COVERAGE_POWER, doc_id)
               for bm25, doc_id, text in rows if doc_id not in seen
               and (allowed is None or doc_id in allowed)]
        new.sort(key=lambda t: (-t[0], t[1]))
        if new and strategy is None:
            strategy = stage
        found += new
        seen.update(doc_id for _, doc_id in new)
        if len(found) >= limit:
            break
    return found[:limit], strategy, weights


def store_size(index):
    return index.lexical_count() or 1


def term_weights(index, terms):
    """Inverse document frequency of each query term (any of its alternatives), as in BM25.

    A term that no chunk contains gets the highest weight: a question about something the wiki
    never mentions should not look covered.
    """
    total = store_size(index)
    weights = []
    for term in terms:
        df = index.matching(alternatives(term, True))
        weights.append(math.log((total - df + 0.5) / (df + 0.5) + 1))
    return weights
