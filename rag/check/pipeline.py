"""Step 6 of rag/core.py: the checks of an answer, after the model's text exists, in one order.

    case = Case(question, text, "fact", "model", sources, vocab, masker, screen)
    run(case)
    -> [Check("grounding", "ok", {…}), Check("declined", "ok"), Check("echo", "ok"),
        Check("support", "changed", {…}, text="… [2]."),
        Check("citations", "ok", {"cited": [2], "valid": [2], "unknown": []}),
        Check("facts", "ok", []), Check("guard", "ok", {…}),
        Check("see_also", "ok", [{"n": 3, …}])]

CHECKS is the order; each check reads the text the one before it left (rag/check/record.py):
    grounding  a fact answer whose facts stand only in passages about something else: withdrawn
               (grounding.py)
    declined   an answer that says in the model's own words that the sources lack it: withdrawn
               (declined.py)
    echo       a fact answer that only repeats the question: the wiki line instead, or withdrawn
               (echo.py)
    support    which source supports each statement; the model's [n] corrected to it (support.py)
    citations  which [n] are valid (citations.py)
    facts      numbers, dates, §, commands that no cited source has (factcheck.py)
    guard      links and contacts from removed or no text, a copied instruction (guard.py)
    see_also   up to two sections the answer did not cite (see_also.py)

Does not handle: checks before the answer (the answerability check, rag/answer/answerable.py).
"""
from rag.check import (citations, declined, echo, factcheck, grounding, guard, see_also,
                       support)
from rag.check.record import Case, Check  # noqa: F401  (Case: what rag/core.py hands to run())

CHECKS = (grounding.run, declined.run, echo.run, support.run, citations.run, factcheck.run,
          guard.run, see_also.run)


def run(case):
    """Every check of CHECKS in order on `case`; each one's text is the next one's. The records, in
    order."""
    for check in CHECKS:
        record = check(case)
        case.found[record.name] = record
        if record.text is not None:
            case.text = record.text
        if record.answered_by is not None:
            case.answered_by = record.answered_by
    return list(case.found.values())


def fill(result, case):
    """What the checks found, into the core's Answer `result` (the fields --json and the audit log
    keep); returns the "checks" event's data: those fields and the verdicts in order."""
    found = case.found
    result.text, result.answered_by = case.text, case.answered_by
    result.checks = list(found.values())
    # a refusal's or an echo's record replaces the grounding's
    result.grounding = (found["declined"].evidence or found["echo"].evidence
                        or found["grounding"].evidence)
    result.citations, result.unsupported = found["citations"].evidence, found["facts"].evidence
    result.evidence = found["support"].evidence["evidence"]
    result.support = found["support"].evidence["statements"]
    result.guard, result.see_also = found["guard"].evidence, found["see_also"].evidence
    return {"evidence": result.evidence, "support": result.support, "citations": result.citations,
            "unsupported": result.unsupported, "guard": result.guard,
            "answered_by": result.answered_by, "grounding": result.grounding,
            "see_also": result.see_also,
            "verdicts": [c.as_json() for c in result.checks]}


def replaced(records):
    """Did a check replace the answer the model wrote (withdrawn, or a wiki line in its place)? A
    door that showed the model's words shows the new answer after them.

    Example: [Check("echo", "changed", …, answered_by="line")] -> True;
             [Check("support", "changed", …)] (a corrected [n]) -> False
    """
    return any(c.verdict == "withdrawn" or c.answered_by is not None for c in records)
