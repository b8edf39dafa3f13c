"""Why an answer is what it is, made once for every door: the refusal's reason, or where the words
come from when the model did not write them.

    why(Answer(text="Dazu habe ich keine Information.", llm_called=False, …))
    -> "kein LLM-Aufruf: zu wenig Belege im Wiki; die nächsten Kandidaten:"
    why(Answer(answered_by="source", answerable={"judged": [{"n": 2, "p_yes": 0.99}], …}, …))
    -> "Schritte wörtlich aus der Quelle übernommen, nicht vom Modell geschrieben;
       geprüft: [2] …"

The terminal prints it in brackets after the answer, the web page under "Nicht im Wiki", --json and
the API as "why". A reason that ends in "die Kandidaten:" is followed by the sources a reader may
look at instead.

Does not handle: a model answer that stands (None), which the checks' records describe.
"""
from rag.answer.prompt import NO_INFO

CANDIDATES = "; die Kandidaten:"  # the sources follow the refusal
VERBATIM = "Schritte wörtlich aus der Quelle übernommen, nicht vom Modell geschrieben"
# the section was accepted, but only just (rag/answer/judge.py as_answerable "close")
CLOSE = " – knapp: der Abschnitt beantwortet die Frage vielleicht nicht"


def why(result):
    """Why the answer is the refusal or not the model's own words: one German line every door shows
    as it is; None when the model's answer stands (or nothing was asked). result: a core Answer."""
    a, g = result.answerable or {}, result.grounding or {}
    if result.text is None:
        return None
    if not result.llm_called:
        return "kein LLM-Aufruf: zu wenig Belege im Wiki; die nächsten Kandidaten:"
    if a.get("refused") and a.get("judged"):
        return (f"das Antwortmodell sieht die Frage in keinem geprüften Abschnitt beantwortet: "
                f"{judged_line(a)} < {a['threshold']}{CANDIDATES}")
    if a.get("refused"):
        return (f"das Antwortmodell sieht die Frage in den Quellen nicht beantwortet: "
                f"P(ja) {a['p_yes']:.2f} < {a['threshold']}{CANDIDATES}")
    if g.get("declined"):  # rag/check/declined.py
        return g["why"] + CANDIDATES
    if g.get("echo"):  # rag/check/echo.py
        if result.answered_by == "line":
            return g["why"] + "; Zeile wörtlich aus der Quelle, nicht vom Modell geschrieben"
        return g["why"] + "; keine Stelle der Quellen beantwortet sie" + CANDIDATES
    if g.get("refused"):  # rag/check/grounding.py
        return (f"zurückgezogen: {', '.join(g['facts'])} steht nur in Stellen, die kaum von der "
                f"Frage handeln – {g['why']}{CANDIDATES}")
    if (result.guard or {}).get("replaced"):  # rag/check/guard.py
        return f"Antwort ersetzt: {result.guard['replaced']}{CANDIDATES}"
    if result.answered_by == "source":
        return (VERBATIM + (f"; geprüft: {judged_line(a)}" if a.get("judged") else "")
                + (CLOSE if a.get("close") else ""))
    if result.text.strip() == NO_INFO:
        return "das Modell fand die Antwort nicht in den Quellen" + CANDIDATES
    return None


def judged_line(answerable):
    """The sections the model judged, in order.

    Example: {"judged": [{"n": 2, "p_yes": 0.12}, {"n": 1, "p_yes": 0.91}]}
             -> "[2] P(ja) 0.12, [1] P(ja) 0.91"
    """
    return ", ".join(f"[{j['n']}] P(ja) " + ("–" if j["p_yes"] is None else f"{j['p_yes']:.2f}")
                     for j in answerable["judged"])
