"""Sentences that only say where the answer stands, not what it is: "siehe …", "steht in § 7",
"Bitte lesen Sie …".

    is_pointer("Die Kündigungsfrist steht in dessen § 7 und ist hier nicht noch einmal
                aufgeführt.")                                                  -> True
    is_pointer("Bitte lesen Sie unsere [DNS-Konfiguration](dns.md) Anleitung.")  -> True
    is_pointer("Die Kündigungsfrist beträgt drei Monate zum Quartalsende (§ 7).")  -> False

Such a sentence matches the question's words well ("Kündigungsfrist", "Rahmenvertrag") and a small
model copies it as the answer. The context selection (rag/answer/context.py) does not show it for
its words, and the support check (rag/check/support.py) never calls a statement like it "gestützt":
it points, it does not answer.

Does not handle: pointers in other words ("dazu gibt es eine eigene Seite"), English text beyond
"see".
"""
import re

POINTER = re.compile(
    r"\b(?:siehe|vgl\.|see)\b|"
    r"\bbitte\s+(?:lesen|beachten|schauen)\s+sie\b|\blies\b.{0,40}\b(?:anleitung|seite|abschnitt|"
    r"kapitel)\b|\b(?:steht|stehen|findet\s+sich|finden\s+sich|findest\s+du|finden\s+sie|"
    r"beschrieben|erklärt|erläutert|geregelt|aufgeführt)\b[^.!?]{0,60}\b(?:in|im|unter|"
    r"auf)\s+(?:der|dem|den|des|dessen|deren|unsere[rnm]?|diese[rnm]?|eine[rnm]?)?\s*(?:§\s*\d+|"
    r"abschnitt|kapitel|anleitung|seite|artikel|dokumentation|vertrag|\[)|"
    r"\bnicht\s+(?:noch\s+einmal|nochmal|erneut|hier)\s+(?:aufgeführt|beschrieben|wiederholt|"
    r"genannt)\b",
    re.I)


# "(siehe Handbuch [7])": an aside, the rest still says what
ASIDE = re.compile(r"\((?:siehe|vgl\.|see)\b[^()]*\)", re.I)


def is_pointer(sentence):
    """Does this sentence point elsewhere (see the module docstring)? One sentence or list item, not
    a section.
    Example: "1. Per SSH anmelden (siehe Handbuch [7])." -> False (the pointer is an aside)"""
    return bool(POINTER.search(ASIDE.sub("", sentence or "")))
