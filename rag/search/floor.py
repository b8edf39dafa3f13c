"""The relevance floor: is the wiki's evidence for a question too thin to ask the model at all?

    floor(Retrieval(best_cosine=0.83, coverage=0.1, …), floor_cosine=0.862, reject_cosine=0.85)
    -> the Retrieval with weak=True and weak_reason "bester Kosinus 0.830 < 0.85 (…)"

rag/search/ranking.py retrieve() calls it on every ranking; whether the sources answer the question
is the model's to judge later (rag/answer/answerable.py, judge.py).

Does not handle: questions the wiki answers in other words than it uses (no shared word, a low
cosine).
"""
from rag import tuned

MIN_COVERAGE = tuned.value("ranking.MIN_COVERAGE")  # floor: share of the question in the best hit
MAX_UNKNOWN = tuned.value("ranking.MAX_UNKNOWN")  # floor: share of the question no chunk contains
# floor: the strict stage found every word of the question (or its stem) in one hit; then a low
# cosine alone does not refuse (a table row "Name: Schütt | Vorname: Sven | Durchwahl: 3357" has
# cosine 0.83 to "Welche Durchwahl hat Sven Schütt?")
FULL_COVERAGE = tuned.value("ranking.FULL_COVERAGE")


def floor(result, floor_cosine, reject_cosine=None):
    """The relevance floor: set result.weak when the wiki evidence is too thin to ask the LLM.
    (Whether the sources answer the question is the model's to judge, later:
    rag/answer/answerable.py, judge.py.)

    Weak = the best cosine is below reject_cosine (the question is about something else, even when
    common words match) unless the strict stage found a hit with every word (FULL_COVERAGE), or:
    the best lexical hit covers less than MIN_COVERAGE of the question (IDF-weighted) or at least
    MAX_UNKNOWN of the question is words that no chunk contains — unless
    the best cosine reaches floor_cosine. Both thresholds are measured per embedding model
    (None = vectors do not count, as for Gemma 3 270M, whose cosines do not separate in-wiki from
    out-of-wiki questions). Measured on eval/questions.jsonl, see docs/suche.md ("Ehrliches Nein").

    Example (e5: reject 0.85, floor 0.862): cosine 0.83 -> weak (strict stage, coverage 100%,
    nothing unknown: not weak); cosine 0.855 with coverage 10% -> weak; cosine 0.855 with
    coverage 60% -> not weak; cosine 0.87 -> not weak.
    """
    cosine = result.best_cosine
    lexical_ok = result.coverage >= MIN_COVERAGE and result.unknown < MAX_UNKNOWN
    vector_ok = floor_cosine is not None and cosine is not None and cosine >= floor_cosine
    # no lexical evidence in this mode: only the cosine floor can refuse
    if result.mode == "vector":
        lexical_ok, vector_ok = False, floor_cosine is None or vector_ok
    every_word = (result.strategy == "strict" and result.coverage >= FULL_COVERAGE
                  and result.unknown == 0)
    if (reject_cosine is not None and cosine is not None and cosine < reject_cosine
            and not every_word):
        result.weak = True
        result.weak_reason = (f"bester Kosinus {cosine:.3f} < {reject_cosine} (Frage passt zu "
                              "keinem Chunk)")
    elif not (lexical_ok or vector_ok):
        result.weak = True
        result.weak_reason = (f"bester Treffer deckt {result.coverage:.0%} der Frage ab "
                              f"(mindestens {MIN_COVERAGE:.0%}), {result.unknown:.0%} der Frage "
                              f"kommen im Wiki nicht vor (höchstens {MAX_UNKNOWN:.0%})")
        if floor_cosine is not None and cosine is not None:
            result.weak_reason += f", bester Kosinus {cosine:.3f} < {floor_cosine}"
    return result
