"""A fact answer's grounding: is what it states said of what was asked? Else it is withdrawn.

    grounding("Wie viele Plätze hat der Schulungsraum?", "Er hat 6 Plätze [1].",
              [Source("räume.md", "Räume", "| Besprechungsraum Alster | 6 Plätze |")])
    -> {"facts": ["6 Plätze"], "coverage": 0.5, "nouns": 1.0}
    gap(that, 0.3) -> ""   (it stands; at 0.25: "Anteil der Fragewörter 0.25 < 0.3", withdrawn)

The number stands in the wiki, but a model that read a row about another room says it of the one
asked: the passages that hold an answer's facts must name enough of the question's words (GROUNDED)
and of the nouns the answer repeats (rag/check/support.py SUBJECT_SHARE). A check of the fact
answers the model wrote; how-to answers and verbatim lines are not read.

Does not handle: facts without a digit, a date, an amount or § (names, host names), paraphrase.
"""
import re

from rag import tuned
from rag.answer.prompt import NO_INFO
from rag.check import factcheck, support
from rag.check.citations import CITATION
from rag.check.record import Check
from rag.text import german
from rag.text.units import units

# withdrawn when the passages that hold its facts name less of the question's words than this
GROUNDED = tuned.value("grounding.GROUNDED")
MASKED = re.compile(r"\[[A-ZÄÖÜ-]+ \d+\]")  # a placeholder of rag/privacy/mask.py: "[IBAN 1]"


def run(case):
    """The check (rag/check/record.py): a fact answer the model wrote, withdrawn when its facts
    stand only in passages about something else. Evidence: grounding() with "needed", "why",
    "refused" (and "answer", the model's answer, masked, when withdrawn); None when it does not
    apply or the answer states no such fact."""
    if not (case.by_model and case.kind == "fact"):
        return Check("grounding", "ok")
    found = grounding(case.question, case.masker.mask(case.text), case.sources, case.vocab)
    if found is None:  # measured on the answer as masked as the sources
        return Check("grounding", "ok")
    found.update(needed=GROUNDED, why=gap(found, GROUNDED))
    if found.setdefault("refused", bool(found["why"])):
        found["answer"] = case.masker.mask(case.text)
        return Check("grounding", "withdrawn", found, text=NO_INFO)
    return Check("grounding", "ok", found)


def grounding(question, answer, sources, vocab=frozenset()):
    """Does the passage that holds the answer's facts talk about what the question asks?

    The answer's numbers, dates, amounts, § and names with digits (factcheck.claims; not those the
    question names itself) are looked up unit by unit (rag/text/units.py, each read with its
    source's heading path). Per fact, the best share of the question's content words among the
    units that hold it; the answer's grounding is the lowest of these (a fact that no unit holds is
    left to the fact check; 0.0 when no unit holds any of them). A model that answers "Wie
    viele Plätze hat der Schulungsraum im Erdgeschoss?" with "6 Plätze" from a row about another
    room gets a low share: the number stands in the wiki, but not said of what was asked.

    Returns {"facts": [...], "coverage": that share, "nouns": the best share of the question's nouns
    the answer repeats (support.asked()) among those units, None when it repeats none or no unit
    holds a fact}, or None when the answer states no such fact (nothing to measure). "Ein Postfach
    darf 25 MB groß sein" for "Wie groß darf mein Postfach sein?": 25 MB stands only in a unit
    about an e-mail, nouns 0.0.

    Example: question "Wie viele Plätze hat der Schulungsraum?", answer "Er hat 6 Plätze [1].",
             source "| Besprechungsraum Alster | 6 Plätze |"
             -> {"facts": ["6 Plätze"], "coverage": 0.5, "nouns": 1.0}
    """
    if not answer or answer.strip().startswith(NO_INFO):
        return None
    named = factcheck.read_source(question)
    stated = support.facts_of(MASKED.sub(" ", CITATION.sub("", answer)))
    facts = [c for c in stated if not factcheck.found(c, named)]
    if not facts:
        return None
    words, best = support.content_words(question), [None] * len(facts)
    subject = support.asked(question, CITATION.sub("", answer), vocab)
    nouns = None  # the best share of the subject's nouns in a unit that holds a fact
    for source in sources:
        for unit in units(source.content):
            evidence = support.evidence_of(unit.text)
            held = [i for i, c in enumerate(facts) if holds(c, evidence)]
            if not held:
                continue
            tokens = set(german.index_text(f"{source.heading or ''}\n{unit.text}", vocab).split())
            tokens |= {german.stem(t) for t in tokens}
            share = support.covers(words, tokens, {})
            for i in held:
                best[i] = max(best[i] or 0.0, share)
            if subject:
                nouns = max(nouns or 0.0, sum(t.found_in(tokens) for t in subject) / len(subject))
    # a fact no unit holds is the fact check's (factcheck.py) to flag; only when none is held is the
    # answer grounded nowhere
    held = [b for b in best if b is not None]
    return {"facts": list(dict.fromkeys(c.text for c in facts)),
            "coverage": round(min(held), 3) if held else 0.0,
            "nouns": None if nouns is None else round(nouns, 3)}


def gap(found, needed):
    """Why a fact answer is withdrawn, as every door shows it; "" when it stands. found:
    grounding()'s result.

    Example: {"coverage": 0.25, "nouns": 1.0}, 0.3 -> "Anteil der Fragewörter 0.25 < 0.3"
    """
    if found["coverage"] < needed:
        return f"Anteil der Fragewörter {found['coverage']:.2f} < {needed}"
    if found["nouns"] is not None and found["nouns"] < support.SUBJECT_SHARE:
        return (f"Anteil der Substantive der Frage, die die Antwort nennt, {found['nouns']:.2f} "
                f"< {support.SUBJECT_SHARE}")
    return ""


def holds(claim, evidence):
    """Does a unit hold the fact? As the fact check finds it, or an amount by its number alone (the
    unit may be a table row whose unit stands in the header:
    "| Quota in KB |" above "| 2048000 |")."""
    if factcheck.found(claim, evidence):
        return True
    number = re.search(r"\d+(?:[.,]\d+)*", claim.text) if claim.kind == "quantity" else None
    value = number and factcheck.number_value(number.group())
    return bool(value) and f"n:{value}" in evidence.keys
