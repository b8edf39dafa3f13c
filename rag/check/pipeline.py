"""Step 6 of rag/core.py: the checks of an answer, after the model's text exists, in one order.

    check(result, retrieval, question, masker, screen)
    -> {"evidence": […], "support": […], "citations": {"cited", "valid", "unknown"}, "unsupported": […],
        "guard": {…}, "answered_by": "model", "grounding": None, "see_also": […]}

Does not handle: checks before the answer (the answerability check, rag/answer/answerable.py).
"""
from rag.answer.prompt import NO_INFO
from rag.check import citations, echo, factcheck, see_also, support

GROUNDED = 0.3  # a fact answer is withdrawn when the passages holding its facts name less of the question's
#                 words than this (rag/check/support.py grounding; wiki/: out-of-wiki answers ≤ 0.25, right ones ≥ 0.33)


def check(result, retrieval, question, masker, screen):
    """The checks of an answer, in this order: a fact answer's grounding (withdrawn when its facts stand only in
    passages about something else, rag/check/support.py grounding; replaced when it only repeats the question,
    rag/check/echo.py), evidence and supported citations (rag/check/support.py; a model's [n] that does not
    support its statement is replaced by the one that does), valid citation numbers, the fact check
    (rag/check/factcheck.py), the injection guard (rag/check/guard.py). Fills `result`; returns them as one dict."""
    if result.answered_by == "model" and result.kind == "fact":  # a number said of something else: withdrawn
        result.grounding = support.grounding(question, masker.mask(result.text), retrieval.sources, retrieval.vocab)
        if result.grounding is not None:  # measured on the answer as masked as the sources
            result.grounding.update(needed=GROUNDED, why=support.gap(result.grounding, GROUNDED))
            if result.grounding.setdefault("refused", bool(result.grounding["why"])):
                result.grounding["answer"], result.text = masker.mask(result.text), NO_INFO
    if result.answered_by == "model" and result.kind == "fact" and echo.says_nothing(question, result.text):
        result.grounding, result.text, result.answered_by = echo.replace(  # it only repeats the question
            question, masker.mask(result.text), retrieval.sources, retrieval.vocab)
    by_model = result.answered_by == "model"  # the model's [n] are checked and corrected, a verbatim section's not
    found = support.check(result.text, retrieval.sources, retrieval.vocab, correct=by_model, question=question)
    if by_model:
        result.text = found["answer"]  # each statement cites the source that supports it (rag/check/support.py rewrite)
    cited = result.text.split("\n", 1)[0] if not by_model else result.text  # verbatim steps: a "[3]" inside
    result.citations = citations.check_citations(cited, len(retrieval.sources))  # wiki text is no citation
    result.evidence = found["evidence"]  # from the sources, which are masked already
    result.support = [{**s, "text": masker.mask(s["text"])} for s in found["statements"]]  # the model's words
    result.unsupported = [masker.mask(claim) for claim in factcheck.unsupported_in(
        result.text, retrieval.sources, result.citations["valid"], question)]
    result.text, result.guard = screen.check(result.text, mask=masker.mask)
    result.evidence = [e for e in result.evidence if not screen.shield.removed(e["text"])]  # never an injection as evidence
    result.see_also = see_also.pick(retrieval.sources, result.citations["valid"])  # a refusal cites none: the best
    return {"evidence": result.evidence, "support": result.support, "citations": result.citations,
            "unsupported": result.unsupported, "guard": result.guard, "answered_by": result.answered_by,
            "grounding": result.grounding, "see_also": result.see_also}
