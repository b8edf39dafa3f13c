"""The second stage: the first DEPTH sections of the fused ranking, scored again, decide the
sources.

    rerank(index, ordered, qvec, terms, weights, vocab)
    ordered: a.md › Quota (lexical 1, cosine 0.86),
             b.md › Mailbox anlegen (lexical 4, cosine 0.91), …
    -> [b.md › Mailbox anlegen, a.md › Quota, …]
       (one chunk per section, the best-scored first)

    (a.md: -0.05 × 5 + 1 × 0.25 + 0.1 × 1 = 0.1; b.md: 0 + 0.25 / 4 + 0.1 / 2 = 0.11)

Why: the first stage fuses two rankings of single chunks by their places (rag/search/ranking.py),
and a reader's question in other words than the page often puts the right section at place 5–10,
where no later step sees it. Measured on the how-to lines of four answer sets (`evaluate.py
--finalists`): the right section is among the first 10 sections for far more questions than among
the first 4 chunks.

A section is a page's heading path; its first chunk in the fused order stands for it (its ranks, its
cosine). Each section gets the signals
  cosine   its cosine minus the best cosine among the candidates (0 for the closest)
  lexical  1 / its place in the full-text list (0 when full text did not find it)
  heading  IDF-weighted share of the question's words in its heading path
  fused    1 / its place among the sections of the fused list
and the score is the sum of WEIGHTS × signals, fit over all answer sets (`evaluate.py --finalists
--tune`) and judged per set with weights fit on the others (docs/suche.md has the table). Ties keep
the fused order. The sections after the first DEPTH keep their fused order behind them.

Does not handle: meaning beyond the embedding and shared words (a heading in other words scores 0 on
heading), several chunks of one section in the sources (the first stands for all; how-to answers
widen it to the whole section afterwards: rag/search/ranking.py whole_sections).
"""
from collections import namedtuple

from rag import tuned
from rag.search.lexical import covered, tokens

DEPTH = tuned.value("finalists.DEPTH")  # sections scored again (rag/tuned.toml says why 20)
Signals = namedtuple("Signals", "cosine lexical heading fused")
WEIGHTS = Signals(**tuned.value("finalists.WEIGHTS"))  # fit by `evaluate.py --finalists --tune`


def sections(ordered):
    """The first chunk of each section (path, heading), in the fused order.

    Example: [a.md#0 (A), a.md#1 (A), b.md#0 (B)] -> [a.md#0, b.md#0]
    """
    seen, out = set(), []
    for source in ordered:
        key = (source.path, source.heading)
        if key not in seen:
            seen.add(key)
            out.append(source)
    return out


def signals(candidates, terms, weights, vocab):
    """[Signals] of each candidate (cosines filled in where the scan had none)."""
    cosines = [c.cosine for c in candidates if c.cosine is not None]
    top = max(cosines) if cosines else None
    rows = []
    for n, c in enumerate(candidates):
        cosine = 0.0 if c.cosine is None or top is None else c.cosine - top
        lexical = 1.0 / c.ranks["lexical"] if c.ranks.get("lexical") else 0.0
        heading = covered(tokens(c.heading or "", vocab), terms, weights) if terms else 0.0
        rows.append(Signals(cosine, lexical, heading, 1.0 / (n + 1)))
    return rows


def score(row, weights=WEIGHTS):
    """The weighted sum. Example: Signals(-0.01, 0.5, 0.4) with (10, 0.5, 0.1)
    -> -0.1 + 0.25 + 0.04 = 0.19"""
    return sum(w * x for w, x in zip(weights, row))


def order(candidates, rows, weights=WEIGHTS):
    """The candidates by score, best first; ties keep their fused order."""
    ranked = sorted(range(len(candidates)), key=lambda n: (-round(score(rows[n], weights), 9), n))
    return [candidates[n] for n in ranked]


def rerank(index, ordered, qvec, terms, weights, vocab, depth=DEPTH, tuned=WEIGHTS):
    """One chunk per section, the first `depth` sections ordered by the second stage, the rest
    behind them in their fused order. qvec: the normalised question vector (None: lexical mode,
    nothing changes but the one chunk per section)."""
    candidates = sections(ordered)
    head, tail = candidates[:depth], candidates[depth:]
    if qvec is None or not head:
        return candidates
    missing = index.similarities(qvec, [c.doc_id for c in head if c.cosine is None])
    for c in head:
        if c.cosine is None:
            c.cosine = missing.get(c.doc_id)
    return order(head, signals(head, terms, weights, vocab), tuned) + tail
