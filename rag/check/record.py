"""The one shape of every check: what it reads (Case) and what it returns (Check).

    Check("facts", "warn", evidence=["14 Tage"])                # a number no cited source has
    Check("grounding", "withdrawn", evidence={…}, text="Dazu habe ich keine Information.")

A check takes the answer and its sources (a Case) and returns one Check: its name, its verdict, the
evidence a door shows, and the new answer text when it changed the answer. rag/check/pipeline.py
runs the checks in one order; the text a check returns is the text the next one reads.

Verdicts:
    ok         nothing to say, or only what it found (the runners-up of see-also)
    warn       the answer stands, the evidence says what does not hold (a number no source has)
    changed    the answer stands in another form: `text` (a corrected citation, a wiki line for an
               echo)
    withdrawn  the answer is the refusal now: `text` is "Dazu habe ich keine Information."

Does not handle: checks before the answer (whether the model is asked at all:
rag/answer/answerable.py).
"""
import dataclasses

VERDICTS = ("ok", "warn", "changed", "withdrawn")


@dataclasses.dataclass
class Check:
    name: str  # grounding | declined | echo | support | citations | facts | guard | see_also
    verdict: str  # one of VERDICTS
    evidence: object = None  # what the check found, as JSON data (None: it did not apply)
    text: str = None  # the new answer text when the check changed it; None: unchanged
    # who wrote `text` when it is not the model: "line" (a wiki line, rag/check/echo.py)
    answered_by: str = None

    def __post_init__(self):
        assert self.verdict in VERDICTS, self.verdict

    def as_json(self):
        """Example: Check("facts", "warn", ["14 Tage"]).as_json()
                 -> {"name": "facts", "verdict": "warn"}"""
        return {"name": self.name, "verdict": self.verdict}


@dataclasses.dataclass
class Case:
    """What every check reads: the answer as it stands (each check sees the text the one before
    left), the masked question and sources, and who wrote the answer."""
    question: str  # masked, as the model read it
    text: str  # the answer so far
    kind: str  # "fact" | "howto" (rag/answer/context.py kind)
    answered_by: str  # "model" | "source" (a section verbatim) | "line" (rag/check/echo.py)
    sources: list  # the masked sources, numbered from 1
    vocab: frozenset  # the index's compound vocabulary (rag/text/german.py)
    masker: object  # rag/privacy/mask.py: the model's own words are masked like the sources
    screen: object  # rag/check/guard.py Screen: the guard's answer side over the prompt copies
    found: dict = dataclasses.field(default_factory=dict)  # name -> Check of the checks run so far

    @property
    def by_model(self):
        """The model wrote the answer: its [n] are checked and corrected, a verbatim section's are
        not."""
        return self.answered_by == "model"
