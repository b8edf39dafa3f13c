"""ask_rag.py --explain (rag/doors/explain.py): the stages of one question, and without a question
the table of tuned numbers (rag/tuned.py), which the modules read."""
import io
from types import SimpleNamespace

from conftest import run_script
from rag import tuned
from rag.answer import answerable, choose, context, judge
from rag.check import grounding, guard, support
from rag.check.record import Check
from rag.doors import explain
from rag.records import FACT_SOURCES, TOP_K
from rag.report import clusters
from rag.search import ranking


def test_every_number_says_where_it_comes_from():
    for name, value, how, number in tuned.rows():
        assert how in tuned.HOW, name
        if how == "by hand":
            assert number.why, f"{name}: a number typed in by hand names its reason"
        else:
            assert number.command and number.sets and number.commit and number.figures, name


def test_the_modules_read_their_numbers_from_the_table():
    value = tuned.value
    assert support.SUPPORT == value("support.SUPPORT")
    assert guard.COPY_WORDS == value("guard.COPY_WORDS")
    assert grounding.GROUNDED == value("grounding.GROUNDED")
    assert context.BUDGET == value("context.BUDGET")
    assert choose.WEIGHTS._asdict() == value("choose.WEIGHTS")
    assert judge.EXCERPT == value("judge.EXCERPT")
    assert (TOP_K, FACT_SOURCES) == (value("records.TOP_K"), value("records.FACT_SOURCES"))
    assert ranking.MEASURED == {m: n.value for m, n in tuned.EMBED_MODELS.items()}
    assert clusters.THRESHOLDS == value("clusters.THRESHOLDS")
    assert clusters.THRESHOLD == value("clusters.THRESHOLD")
    for model, number in tuned.ANSWER_MODELS.items():
        assert answerable.threshold(model) == number.value["threshold"]
        assert answerable.section_threshold(model) == number.value["section_threshold"]


def test_explain_without_a_question_prints_the_table():
    result = run_script("ask_rag.py", "--explain")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    for name in tuned.TABLE:
        assert f"\n{name} = " in result.stdout, name
    assert "[von Hand]" in result.stdout and "Grund: " in result.stdout
    assert "Befehl: python3 evaluate.py" in result.stdout


def answer(**fields):
    base = dict(text="Der Raum hat 12 Plätze [1].", llm_called=True, answerable=None,
                answered_by="model", citations={"cited": [1], "valid": [1], "unknown": []},
                choice=None, model="qwen.gguf", timings={"read_before_first_token": 293},
                checks=[Check("grounding", "ok"), Check("facts", "warn")])
    return SimpleNamespace(**{**base, **fields})


def stages(done):
    out = io.StringIO()
    explain.after(done, out)
    return out.getvalue().splitlines()


def test_the_stages_after_the_answer_say_what_each_decided():
    fact = stages(answer(answerable={"p_yes": 0.81, "threshold": 0.7051, "refused": False}))
    assert fact == [
        "3. gewählt    nichts (keine How-to-Frage, oder keine Quelle)",
        "4. beurteilt  an den Quellen: P(ja) 0.81 ≥ 0.7051 (rag/answer/answerable.py)",
        "5. gefragt    das Modell qwen.gguf schreibt die Antwort (293 Prompt-Tokens gelesen)",
        "6. geprüft    grounding ok · facts warn"]
    judged = {"p_yes": 0.99, "threshold": 0.55, "refused": False,
              "judged": [{"n": 2, "p_yes": 0.99}]}
    howto = stages(answer(answerable=judged, answered_by="source", choice=object(),
                          citations={"cited": [2], "valid": [2], "unknown": []}))
    assert howto[0].startswith("4. beurteilt  am Abschnitt [2]: P(ja) 0.99 ≥ 0.55")
    assert howto[1] == "5. gefragt    Abschnitt [2] wörtlich, nicht vom Modell geschrieben"
    weak = stages(answer(text="Dazu habe ich keine Information.", llm_called=False, checks=[]))
    assert weak[1:] == ["4. beurteilt  nicht gefragt (zu wenig Belege im Wiki)",
                        "5. gefragt    niemand: die Antwort ist „Dazu habe ich keine Information.“",
                        "6. geprüft    nichts (keine Antwort des Modells)"]
