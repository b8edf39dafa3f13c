"""The checks after the answer (rag/check/): one record shape, one order, and one reason for a
refusal (rag/check/why.py) that every door shows as it is."""
import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from rag.answer import guard
from rag.answer.prompt import NO_INFO
from rag.check import guard as answer_guard
from rag.check import pipeline, why
from rag.check.record import VERDICTS, Case, Check
from rag.doors import terminal
from rag.privacy.mask import Masker
from rag.search.ranking import Source

ROOT = Path(__file__).resolve().parent.parent
ROOMS = [Source(1, "raeume.md", 0, "Räume › Schulungsraum",
                "| Raum | Plätze |\n| Schulungsraum Erdgeschoss | 12 Plätze |", []),
         Source(2, "raeume.md", 1, "Räume › Besprechung",
                "| Besprechungsraum Alster | 6 Plätze |", []),
         Source(3, "mail.md", 0, "Mail › Quota", "Jede Mailbox hat eine Quota von 2 GB.", [])]
ROOM_QUESTION = "Wie viele Plätze hat der Schulungsraum?"
ORDER = ["grounding", "declined", "echo", "support", "citations", "facts", "guard", "see_also"]


def case(text, kind="fact", answered_by="model", question=ROOM_QUESTION):
    screen = answer_guard.Screen(guard.Shield(ROOMS))
    return Case(question, text, kind, answered_by, ROOMS, frozenset(), Masker(active=False), screen)


def test_every_check_returns_one_record_in_the_one_order():
    records = pipeline.run(case("Der Schulungsraum hat 12 Plätze [1]."))
    assert [r.name for r in records] == ORDER
    assert all(isinstance(r, Check) and r.verdict in VERDICTS for r in records)
    assert len(pipeline.CHECKS) == len(records)


def test_a_withdrawn_answer_is_the_text_every_later_check_reads():
    # 6 Plätze stands only in another room's row
    found = case("Der Schulungsraum im Erdgeschoss hat 6 Plätze [2].",
                 question="Wie viele Plätze hat der Schulungsraum im Erdgeschoss?")
    records = {r.name: r for r in pipeline.run(found)}
    assert records["grounding"].verdict == "withdrawn" and records["grounding"].text == NO_INFO
    assert records["echo"].verdict == "ok" and found.text == NO_INFO  # no echo in the refusal
    assert records["citations"].evidence == {"cited": [], "valid": [], "unknown": []}
    assert pipeline.replaced(records.values())


@pytest.mark.parametrize("kind", ["fact", "howto"])
def test_a_refusal_in_the_models_words_is_the_refusal_with_its_candidates(kind):
    worded = "Es gibt keine Angabe in den Quellen, wie viele Plätze der Schulungsraum hat."
    found, result = case(worded, kind=kind), SimpleNamespace()
    records = {r.name: r for r in pipeline.run(found)}
    assert records["declined"].verdict == "withdrawn" and found.text == NO_INFO
    assert records["declined"].evidence["answer"] == worded  # the model's words stay on record
    assert len(records["see_also"].evidence) == 2  # "Vielleicht hilft": the best two sections
    pipeline.fill(result, found)
    assert result.grounding["declined"] and pipeline.replaced(records.values())


@pytest.mark.parametrize("text, question", [
    ("Der Schulungsraum hat 12 Plätze [1].", ROOM_QUESTION),
    ("Es gibt keine Angabe, aber der Schulungsraum hat 12 Plätze.", ROOM_QUESTION),  # a fact more
    ("Nein, der Beamer ist nicht im Schulungsraum enthalten.",  # answers a yes/no question
     "Ist der Beamer im Schulungsraum enthalten?"),
    ("In den Quellen steht nicht, wie viele Plätze er hat [1].", ROOM_QUESTION),  # cites
])
def test_an_answer_that_says_something_is_not_a_refusal(text, question):
    records = {r.name: r for r in pipeline.run(case(text, question=question))}
    assert records["declined"].verdict == "ok"


def test_a_corrected_citation_changes_the_answer_but_does_not_replace_it():
    answer = "Der Schulungsraum im Erdgeschoss hat 12 Plätze [3]."
    records = {r.name: r for r in pipeline.run(case(answer))}
    assert records["support"].verdict == "changed" and records["support"].text.endswith("[1].")
    assert records["citations"].evidence["valid"] == [1]  # read on the corrected text
    assert not pipeline.replaced(records.values())


def test_the_core_fills_the_answer_and_the_event_from_the_records():
    found, result = case("Der Schulungsraum hat 12 Plätze [1]."), SimpleNamespace()
    pipeline.run(found)
    event = pipeline.fill(result, found)
    assert result.text == "Der Schulungsraum hat 12 Plätze [1]."
    assert result.citations["valid"] == [1]
    assert [v["name"] for v in event["verdicts"]] == [c.name for c in result.checks]
    assert event["support"] is result.support and event["grounding"] == result.grounding


def answer(**fields):
    base = dict(text=NO_INFO, llm_called=True, answerable=None, grounding=None, guard=None,
                answered_by="model")
    return SimpleNamespace(**{**base, **fields})


SECTION_JUDGED = {"p_yes": 0.1, "threshold": 0.55, "refused": True,
                  "judged": [{"n": 2, "p_yes": 0.1}]}
WITHDRAWN = {"facts": ["6 Plätze"], "why": "Anteil der Fragewörter 0.25 < 0.3", "refused": True}
ECHO = {"echo": True, "why": "die Antwort wiederholt nur die Frage", "refused": False}
DECLINED = {"declined": True, "why": "das Modell schreibt selbst, dass die Quellen es nicht sagen"}


@pytest.mark.parametrize("fields, expected", [
    ({"llm_called": False}, "kein LLM-Aufruf: zu wenig Belege im Wiki; die nächsten Kandidaten:"),
    ({"answerable": {"p_yes": 0.42, "threshold": 0.7, "refused": True}},
     "das Antwortmodell sieht die Frage in den Quellen nicht beantwortet: P(ja) 0.42 < 0.7; "
     "die Kandidaten:"),
    ({"answerable": SECTION_JUDGED},
     "das Antwortmodell sieht die Frage in keinem geprüften Abschnitt beantwortet: "
     "[2] P(ja) 0.10 < 0.55; die Kandidaten:"),
    ({"grounding": WITHDRAWN},
     "zurückgezogen: 6 Plätze steht nur in Stellen, die kaum von der Frage handeln – "
     "Anteil der Fragewörter 0.25 < 0.3; die Kandidaten:"),
    ({"text": "Laut Quelle [1]:\nTor 8", "answered_by": "line", "grounding": ECHO},
     "die Antwort wiederholt nur die Frage; Zeile wörtlich aus der Quelle, "
     "nicht vom Modell geschrieben"),
    ({"text": "Laut Quelle [2]:\n1. Anmelden.", "answered_by": "source",
      "answerable": {"judged": [{"n": 2, "p_yes": 0.99}], "refused": False}},
     "Schritte wörtlich aus der Quelle übernommen, nicht vom Modell geschrieben; "
     "geprüft: [2] P(ja) 0.99"),
    ({"text": "Laut Quelle [2]:\n1. Anmelden.", "answered_by": "source",
      "answerable": {"judged": [{"n": 2, "p_yes": 0.59}], "refused": False, "close": True}},
     "Schritte wörtlich aus der Quelle übernommen, nicht vom Modell geschrieben; "
     "geprüft: [2] P(ja) 0.59 – knapp: der Abschnitt beantwortet die Frage vielleicht nicht"),
    ({"grounding": DECLINED},
     "das Modell schreibt selbst, dass die Quellen es nicht sagen; die Kandidaten:"),
    ({"guard": {"replaced": "kopiert entfernten Text"}},
     "Antwort ersetzt: kopiert entfernten Text; die Kandidaten:"),
    ({}, "das Modell fand die Antwort nicht in den Quellen; die Kandidaten:"),
    ({"text": "Der Raum hat 12 Plätze [1]."}, None),  # the model's answer stands
    ({"text": None}, None),  # --retrieve-only
])
def test_the_reason_is_made_once_for_every_case(fields, expected):
    assert why.why(answer(**fields)) == expected


@pytest.mark.parametrize("replaced, shown, line", [
    (False, False, "Dazu habe ich keine Information.  (Grund)"),  # nothing streamed: answer, why
    (True, True, "→ Dazu habe ich keine Information.  (Grund)"),  # a check replaced the stream
    (False, True, "(Grund)"),  # the streamed answer stands: only why
])
def test_the_terminal_shows_the_reason_as_the_core_made_it(replaced, shown, line):
    done = SimpleNamespace(text=NO_INFO, why="Grund", replaced=replaced,
                           retrieval=SimpleNamespace(sources=[]))
    out = io.StringIO()
    terminal.print_answer(done, out, shown)
    assert out.getvalue().split("\n")[0] == line


def test_no_door_works_out_a_reason_itself():
    page = (ROOT / "rag" / "doors" / "page.html").read_text(encoding="utf-8")
    doors = "".join((ROOT / "rag" / "doors" / name).read_text(encoding="utf-8")
                    for name in ("terminal.py", "openai_api.py", "mcp_server.py", "web.py"))
    for said in ("Antwortmodell sieht", "zurückgezogen", "kein LLM-Aufruf",
                 "nicht vom Modell geschrieben"):
        assert said not in page and said not in doors, said
    assert "result.why" in page
