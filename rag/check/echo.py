"""A fact answer that only repeats the question, and the wiki line printed in its place.

    says_nothing("Welchen IMAP-Port trage ich in Thunderbird ein?",
                 "Die Nummer der Quelle ist [1].") -> True
    best_line("Welchen IMAP-Port trage ich in Thunderbird ein?", sources, vocab)
    -> (1, "| IMAP-Port und Verschlüsselung | 993, SSL/TLS |")

A 1.5B model sometimes answers a fact question with the question turned into a sentence: "Der
Monitor gehört zum Homeoffice-Paket [1]." Every word of it stands in the question, so the checks
find nothing wrong with it, and the reader learns nothing. Such an answer is replaced by the unit
(sentence, list item, table row; rag/answer/context.py) of the sources that holds most of the
question's words, read under its heading path, verbatim, as the how-to answers print their steps.
It must hold at least support.SUBJECT_SHARE of the question's nouns and support.SUPPORT of its
words (weighted by rarity among the sources' units), the bar of the support check; where no unit
clears it, the answer is "Dazu habe ich keine Information.".

Measured on the recorded full answer sets of wiki/, ioBroker, i-doit and the office set
(docs/antworten-pruefen.md): 4 of the 357 answers the model wrote say nothing, all wrong; none of
the right ones does.

Does not handle: an answer that adds only filler the question lacks ("…, den wir auswählen
können"), an answer of another type than asked (a place for "Wer …?").
"""
import re

from rag.check import support
from rag.check.record import Check
from rag.answer.prompt import NO_INFO
from rag.check.citations import CITATION
from rag.check.support import STEP
from rag.text import german

FILLER = {  # words a model adds around an empty answer; they say nothing about the wiki
    "quelle", "quellen", "nummer", "laut", "steht", "stehen", "beschrieben", "angegeben", "genannt",
    "erwaehnt", "dies", "diese", "dieser", "dieses", "ist", "sind", "wird", "werden", "kann",
    "koennen", "artikel", "erklaert",
}


# stopwords that carry the answer to a yes/no question: "Ja, …", "Sie müssen es nicht ändern"
POLARITY = {
    "ja", "nein", "nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie",
    "niemals", "nur", "immer",
}


def said(text):
    """The folded content words of a text, every number and POLARITY word among them ("8" too); [n],
    list numbers and FILLER dropped.

    Example: said("Der Schlüssel für Tor 8 [1].") -> ["schluessel", "tor", "8"]
    """
    return [w for w in german.words(STEP.sub("", CITATION.sub(" ", text)))
            if w.isdigit() or w in POLARITY
            or (w not in german.STOPWORDS and len(w) > 1 and w not in FILLER)]


def says_nothing(question, answer):
    """True when every content word of the answer stands in the question already (by word or stem).

    Example: says_nothing("Welcher Monitor gehört zum Homeoffice-Paket?", "Der Monitor gehört zum
             Homeoffice-Paket [1].") -> True; with "… ist der Dell P2723DE [1]." -> False
    """
    if not answer or answer.strip().startswith(NO_INFO):
        return False
    words = said(question)
    asked = set(words) | {german.stem(w) for w in words}
    return not any(w not in asked and german.stem(w) not in asked for w in said(answer))


def best_line(question, sources, vocab):
    """(source number, unit text) of the unit that answers the question best, or None below the bar.
    Ties: the earlier source, then the earlier unit."""
    rows = support.unit_tokens(sources, vocab)
    weight = support.rarity(rows)
    words, nouns = support.content_words(question), support.nouns_of(question, vocab)
    best = (support.SUPPORT, None)
    for n, units in enumerate(rows, start=1):
        for text, tokens, _ in units:
            if (nouns and sum(t.found_in(tokens) for t in nouns)
                    < support.SUBJECT_SHARE * len(nouns)):
                continue
            share = support.covers(words, tokens, weight)
            if share > best[0] or (best[1] is None and share >= best[0]):
                best = (share, (n, text))
    return best[1]


def shown(n, unit):
    """The replacement answer: "Laut Quelle [n]:" and the unit on its own line; a table row without
    its outer pipes.
    Example: shown(1, "| IMAP-Port | 993 |") -> "Laut Quelle [1]:\\nIMAP-Port | 993" """
    line = re.sub(r"^\s*\|\s*|\s*\|\s*$", "", unit.strip())
    # cells padded for the eye
    line = re.sub(r"\s*\|\s*", " | ", line) if unit.strip().startswith("|") else line
    return f"Laut Quelle [{n}]:\n{line}"


WHY = "die Antwort wiederholt nur die Frage"


def replace(question, answer, sources, vocab):
    """(record, text, answered_by) for an answer that says nothing: the best unit verbatim ("line"),
    else the refusal ("model", as the model was asked). record: as support.grounding's, with "echo":
    True and the model's answer, so every door and the audit log show what was replaced and why."""
    found = best_line(question, sources, vocab)
    record = {"facts": [], "coverage": None, "nouns": None, "why": WHY, "refused": found is None,
              "answer": answer, "echo": True, "line": found and found[0]}
    return record, shown(*found) if found else NO_INFO, "line" if found else "model"


def run(case):
    """The check (rag/check/record.py): a fact answer the model wrote that only repeats the question
    becomes the wiki line that answers it ("changed", answered_by "line"), else the refusal
    ("withdrawn")."""
    if not (case.by_model and case.kind == "fact" and says_nothing(case.question, case.text)):
        return Check("echo", "ok")
    record, text, by = replace(case.question, case.masker.mask(case.text), case.sources, case.vocab)
    if by == "line":
        return Check("echo", "changed", record, text=text, answered_by="line")
    return Check("echo", "withdrawn", record, text=text)
