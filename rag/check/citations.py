"""Which [n] an answer cites, and which of them name a source that exists.

    check_citations("Mit cm [1], Quota per sq [9].", 4)
    -> {"cited": [1, 9], "valid": [1], "unknown": [9]}
    describe_citations(that) -> "[1] gültig; unbekannt: [9]"

Does not handle: whether the cited source supports the sentence (rag/check/support.py does).
"""
import re

from rag.answer.prompt import NO_INFO
from rag.check.record import Check

CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


def describe_citations(citations):
    """One line for the reader.

    Example: {"cited": [1, 9], "valid": [1], "unknown": [9]} -> "[1] gültig; unbekannt: [9]"
    """
    if not citations["cited"]:
        return "Keine Quelle genannt"
    line = (", ".join(f"[{c}]" for c in citations["valid"]) + " gültig" if citations["valid"]
            else "keine gültig")
    if citations["unknown"]:
        line += "; unbekannt: " + ", ".join(f"[{c}]" for c in citations["unknown"])
    return line


def check_citations(answer, n_sources):
    """Which [n] the answer cites, which exist (1…n_sources) and which do not; integers,
    sorted."""
    cited = set()
    for group in CITATION.findall(answer):
        cited.update(int(x) for x in re.split(r"\s*[,;]\s*", group))
    cited = sorted(cited)
    return {"cited": cited, "valid": [c for c in cited if 1 <= c <= n_sources],
            "unknown": [c for c in cited if not 1 <= c <= n_sources]}


def run(case):
    """The check (rag/check/record.py): the answer's [n], valid or unknown ("warn": an unknown one,
    or none in an answer that is not the refusal). A verbatim section's citation is its first
    line; a "[3]" inside it is wiki text, no citation."""
    cited = case.text if case.by_model else case.text.split("\n", 1)[0]
    found = check_citations(cited, len(case.sources))
    quiet = not found["cited"] and case.text.strip() != NO_INFO
    return Check("citations", "warn" if found["unknown"] or quiet else "ok", found)
