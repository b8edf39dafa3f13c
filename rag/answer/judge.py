"""Does the section a how-to answer would print answer the question? The answer model judges the
chooser's finalists one at a time, each over its heading path and first lines only, and the first it
accepts is printed.

    choice = choose.choose(sources, terms, weights, vocab)   # rag/answer/choose.py: order [2, 0, 3]
    section_prefix("Wie lege ich eine Mailbox an?", sources[2])
    -> SYSTEM
       + "<<<QUELLE [1]: mail.md › Cyrus › Mailbox anlegen>>>\\n1. Per SSH …\\n<<<ENDE …"
    pick(sources, choice.order, ask_p, threshold=0.5)   # ask_p(source): P("ja") of section_prefix
    -> Verdict(chosen=2, judged=[{"n": 3, "p_yes": 0.93}], refused=False)

Why: the old check read the question with all four sources (~600 prompt tokens) before anything was
shown, and judged the sources, not the section that is printed. A section's heading path and first
EXCERPT characters are ~150 tokens; the system message before them is the answer's own, byte for
byte, so llama-server serves it from its cache. A finalist below the threshold hands over to the
next one (at most choose.FINALISTS); when none is accepted, the answer is the refusal and the
finalists follow as "Vielleicht hilft:".

Does not handle: fact questions (their check reads the answer's context, which the answer reuses
from the cache: rag/core.py), a model without logprobs (ask_p gives None: the chooser's first
finalist is printed unjudged).
"""
import time
from collections import namedtuple

from rag import tuned
from rag.answer import prompt as answer

EXCERPT = tuned.value("judge.EXCERPT")  # characters of a finalist the model reads (~150 tokens)

# chosen: source position or None; judged: [{"n", "p_yes"}]
Verdict = namedtuple("Verdict", "chosen judged refused")


def excerpt(content, limit=EXCERPT):
    """The section's first lines up to `limit` characters, cut at a line end (a first line longer
    than that is cut at a word).
    Example: excerpt("1. A\\n2. B\\n3. C", 9) -> "1. A\\n2. B" """
    content = content.strip()
    if len(content) <= limit:
        return content
    cut = content.rfind("\n", 0, limit + 1)
    if cut <= 0:
        cut = content.rfind(" ", 0, limit + 1)
    return content[:cut if cut > 0 else limit].rstrip()


def section_prefix(question, source, chat=True):
    """The check's prefix for one finalist: the answer's system message, the finalist as source [1]
    (heading path and excerpt), the question (rag/answer/answerable.py check_text adds the yes/no
    question)."""
    return answer.context_part(question, [source], chat, [excerpt(source.content)])


def pick(sources, order, ask_p, threshold):
    """Judge the finalists (the chooser's order: rag/answer/choose.py) in turn; the first with
    P(ja) ≥ threshold is chosen. Without a threshold (None/0) or an answer without logprobs
    (None),
    the chooser's first finalist stands. ask_p(source) -> P or None."""
    if not order:
        return Verdict(None, [], False)
    if not threshold:
        return Verdict(order[0], [], False)
    judged = []
    for n in order:
        p = ask_p(sources[n])
        judged.append({"n": n + 1, "p_yes": None if p is None else round(p, 4)})
        if p is None or p >= threshold:
            return Verdict(n, judged, False)
    return Verdict(None, judged, True)


def as_answerable(verdict, threshold, sure=None):
    """What the Answer keeps of a verdict (`--json` "answerable"): the first P(ja) and every
    finalist's; "close" when the printed section was accepted with a P(ja) under `sure`
    (answerable.section_sure: the reader is told it may not answer the question).
    Example: Verdict(None, [{"n": 2, "p_yes": 0.1}], True), 0.5
             -> {"p_yes": 0.1, "threshold": 0.5, "refused": True,
                 "judged": [{"n": 2, "p_yes": 0.1}], "on": "section", "close": False}
             Verdict(1, [{"n": 2, "p_yes": 0.59}], False), 0.55, sure=0.7 -> {…, "close": True}"""
    accepted = verdict.judged[-1]["p_yes"] if verdict.judged and not verdict.refused else None
    return {"p_yes": verdict.judged[0]["p_yes"] if verdict.judged else None, "threshold": threshold,
            "refused": verdict.refused, "judged": verdict.judged, "on": "section",
            "close": bool(sure) and accepted is not None and accepted < sure}


def verbatim(question, guarded, choice, settings, result, screen, limit, read, started):
    """The core's how-to step (rag/core.py stream): the chooser's finalists (`choice`,
    rag/answer/choose.py) judged, the first accepted printed verbatim, none accepted the refusal.
    Fills `result` (a core Answer); yields the core's events as (kind, data) pairs: ("asking",
    "section"), then ("piece", the section's lines) unless refused."""
    from rag.answer import answerable
    from rag.models import llm
    yield "asking", "section"
    verdict = pick(guarded.sources, choice.order,
                   lambda s: answerable.p_yes(settings.server, section_prefix(question, s),
                                              settings.api_key, settings.llm_model_name,
                                              read=read),
                   limit)
    result.answerable = as_answerable(verdict, limit, answerable.section_sure(result.model))
    result.timings.update(check_s=round(time.monotonic() - started, 3),
                          read_before_first_token=llm.total_read(read))
    if verdict.refused:
        result.text = answer.NO_INFO
        return
    source = guarded.sources[verdict.chosen]
    result.answered_by, result.prompt = ("source",
                                         answerable.check_text(section_prefix(question, source)))
    result.timings["first_token_s"] = round(time.monotonic() - started, 3)
    shown = answer.steps_answer(verdict.chosen + 1, source.content) or answer.NO_INFO
    result.text = "".join(screen.screen([shown]))
    yield "piece", result.text
