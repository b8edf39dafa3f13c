"""A refusal in the model's own words, made the refusal every door knows.

    declines("Wie viele Rechner darf ich maximal in einem Raum mit LINBO verwalten?",
             "Es gibt keine Angabe in den Quellen, wie viele Rechner maximal in einem Raum "
             "mit LINBO verwalten werden können.") -> True
    declines("Wie viele Rechner …?", "Bis zu 200 Rechner [1].") -> False

The prompt asks for "Dazu habe ich keine Information." when the sources do not answer; a 1.5B model
sometimes words it itself. Such an answer stood as an answer: no "Vielleicht hilft", not counted as
refused in the audit log or the authors' report, and the support check marked it "nicht gestützt".
It is withdrawn: the answer becomes the fixed sentence, the model's words stay in the record.

An answer declines when it cites no source, says no (NEGATION), names what is missing or where
(MISSING: "keine Angabe", "die Quellen"), and every other word it uses stands in the question or in
WORDED (the words such a sentence is built of). One fact or step more, and it is an answer that
stands.

Seen on the page (linuxmuster, the example above). Over the 560 different question-answer pairs
recorded in answer runs and audit logs before (/tmp script), it fires once: that example. Does not
handle: a refusal that adds advice ("…, wenden Sie sich an den Support"), one in another language.
"""
from rag.answer.prompt import NO_INFO
from rag.check.citations import CITATION
from rag.check.echo import said
from rag.check.record import Check
from rag.text import german

NEGATION = {"kein", "keine", "keinen", "keiner", "keines", "nicht", "nichts"}
# what is missing, or where: "keine Angabe", "in den Quellen … nicht" (not "ist nicht enthalten",
# which answers "Ist der Monitor enthalten?")
MISSING = {
    "angabe", "angaben", "information", "informationen", "hinweis", "hinweise", "auskunft",
    "quelle", "quellen", "text", "texten", "kontext",
}
WORDED = NEGATION | MISSING | {
    "es", "gibt", "geht", "leider", "darueber", "dazu", "dafuer", "davon", "daraus", "hervor",
    "erwaehnt", "genannt", "beschrieben", "angegeben", "enthalten", "enthaelt", "steht", "stehen",
    "bereitgestellten", "vorliegenden", "gegebenen", "finden", "gefunden", "spezifische",
    "konkrete", "genaue", "explizit", "direkt", "wie", "viele", "welche", "welcher", "welches",
    "wann", "wo", "wer", "ob",
}
WHY = "das Modell schreibt selbst, dass die Quellen es nicht sagen"


def declines(question, answer):
    """True when the answer, without a citation, only says that the sources lack what was asked."""
    if not answer or CITATION.search(answer) or answer.strip() == NO_INFO:
        return False
    words = set(german.words(answer))
    if not (words & NEGATION and words & MISSING):
        return False
    asked = set(german.words(question))
    asked |= {german.stem(w) for w in asked}
    return all(w in WORDED or w in asked or german.stem(w) in asked for w in said(answer))


def run(case):
    """The check (rag/check/record.py): an answer the model wrote that declines in its own words
    becomes the refusal ("withdrawn"); evidence {"declined": True, "why", "answer" (masked)}."""
    if not (case.by_model and declines(case.question, case.text)):
        return Check("declined", "ok")
    record = {"declined": True, "why": WHY, "answer": case.masker.mask(case.text)}
    return Check("declined", "withdrawn", record, text=NO_INFO)
