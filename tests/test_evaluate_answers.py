"""evaluate.py's answer scoring (--answers --rescore): how-to steps, supported citations, refusals by whom."""
import json

import pytest
from conftest import run_script

ROWS = [
    {"question": "Wie lege ich eine Mailbox an?", "kind": "howto", "asked_as": "howto", "in_wiki": True,
     "answer": "Laut Quelle [2]:\n1. `cyradm` starten\n2. Mit `cm` anlegen", "error": None, "llm_called": True,
     "answerable": {"p_yes": 0.9, "threshold": 0.5, "refused": False}, "valid_citation": True,
     "unknown_citations": [], "supported_citation": True, "prompt_tokens": 700, "first_token_s": 3.0,
     "read_before_first_token": 700, "total_s": 9.0, "sources": [], "facts": [["cyradm"], ["cm"], ["sq"]]},  # 2 of 3 steps: no hit
    {"question": "Wie hoch ist das IT-Budget?", "kind": "out", "asked_as": "fact", "in_wiki": False,
     "answer": "Dazu habe ich keine Information.", "error": None, "llm_called": True,
     "answerable": {"p_yes": 0.1, "threshold": 0.5, "refused": True}, "valid_citation": False,
     "unknown_citations": [], "supported_citation": None, "prompt_tokens": 600, "first_token_s": None,
     "read_before_first_token": 412, "total_s": 5.0, "sources": [], "facts": []},
    {"question": "Welche Kündigungsfrist?", "kind": "fact", "asked_as": "fact", "in_wiki": True,
     "answer": "Drei Monate [1].", "error": None, "llm_called": True, "answerable": None, "valid_citation": True,
     "unknown_citations": [], "supported_citation": False, "prompt_tokens": 500, "first_token_s": 2.0,
     "read_before_first_token": None, "total_s": 4.0, "sources": [], "facts": [["3 Monate", "drei Monate"]]},
]


def test_rescore_reports_kinds_supported_citations_and_refusals_by_the_check(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    result = run_script("evaluate.py", "--answers", "--rescore", path, "--json")
    assert result.returncode == 0, result.stderr
    lines = run_script("evaluate.py", "--answers", "--rescore", path).stdout
    assert "| How-to-Fragen: alle Schlüsselschritte in der Antwort (Anteil der Schritte: 67%) | 0% |" in lines
    assert "| Faktenfragen: Schlüsselfakt in der Antwort | 100% |" in lines
    assert "gestütztes Zitat" in lines and "| 50% | ≥ 90% | nein |" in lines  # 1 of 2 answered in-wiki
    assert "(Schwelle 0%, Prüfung 100%, Beleg 0%, Modell 0%) | 100% |" in lines
    assert "| davor gelesene Prompt-Tokens (alle Aufrufe, ohne Prompt-Cache), Median | 556 | – | – |" in lines  # 700, 412


@pytest.mark.parametrize("grounding, by", [
    ({"refused": True, "facts": ["6 Plätze"]}, "grounding"),  # rag/check/grounding.py withdrew it
    ({"declined": True, "why": "…", "answer": "Es gibt keine Angabe …"}, "model"),  # its own words
])
def test_a_withdrawn_answer_is_counted_for_who_refused_it(grounding, by):
    from eval.measure.answers import score
    row = {**ROWS[2], "answer": "Dazu habe ich keine Information.", "grounding": grounding}
    assert score(dict(row))["refused_by"] == by


def test_a_row_keeps_the_tokens_read_before_the_first_token_and_none_stays_unknown():
    from eval.measure.answers import judge_answer
    item = {"question": "Welche Kündigungsfrist?", "facts": [["3 Monate"]]}
    out = {"answer": "3 Monate [1].", "llm_called": True, "citations": {"cited": [1], "valid": [1], "unknown": []},
           "timings": {"read": [{"call": "check", "prompt_n": 412}, {"call": "answer", "prompt_n": 52}],
                       "read_before_first_token": 464}}
    assert judge_answer(item, out, 4.0, "")["read_before_first_token"] == 464
    assert judge_answer(item, {**out, "timings": {}}, 4.0, "")["read_before_first_token"] is None


def test_the_calibration_line_names_the_speed_or_says_the_server_cannot_tell():
    from eval.measure.common import speed_line
    assert speed_line({"prompt_n": 250, "prompt_ms": 1470.6, "tokens_per_s": 170.0}).endswith(
        ": 170.0 Tokens/s (250 Tokens ohne Prompt-Cache in 1471 ms)")
    assert speed_line(None).endswith("– (der Server meldet keine timings)")


def test_answerable_takes_several_sets_each_with_its_index():
    from types import SimpleNamespace
    from eval.measure import answerable as measure
    args = SimpleNamespace(answer_questions="a.jsonl,b.jsonl", db="a.db,b.db")
    assert measure.sets_and_indexes(args, True) == [("a.jsonl", "a.db"), ("b.jsonl", "b.db")]
    assert measure.sets_and_indexes(SimpleNamespace(answer_questions="a.jsonl", db="x.db"), False) == [("a.jsonl", None)]
    with pytest.raises(SystemExit, match="je einen Index"):
        measure.sets_and_indexes(SimpleNamespace(answer_questions="a.jsonl,b.jsonl", db="a.db"), True)


def test_answerable_threshold_is_fit_only_on_the_questions_it_decides():
    from eval.measure import answerable as measure
    rows = [{"asked": "howto", "in_wiki": True, "floor": False, "p_yes": 0.2},  # judged on its section instead
            {"asked": "fact", "in_wiki": True, "floor": False, "p_yes": 0.8},
            {"asked": "fact", "in_wiki": False, "floor": False, "p_yes": 0.3}]
    assert measure.tune_threshold(measure.decided(rows, True)) == 0.3001  # refuses the out-of-wiki one, no other
    assert measure.tune_threshold(measure.decided(rows, False)) is None  # the how-to line would be refused too


def test_answerable_threshold_wants_more_right_decisions_not_fewer_refusals():
    from eval.measure import answerable as measure

    def rows(inside, outside):
        return [{"asked": "fact", "in_wiki": True, "floor": False, "p_yes": p} for p in inside] + \
               [{"asked": "fact", "in_wiki": False, "floor": False, "p_yes": p} for p in outside]
    inside = [0.9] * 18 + [0.55, 0.5]
    # 0.5201 refuses one more out-of-wiki question for one answerable: no gain, so the lower 0.3001 stays
    # (the old rule, most out-of-wiki refused at <= 5 % wrong, took 0.5201)
    assert measure.tune_threshold(rows(inside, [0.52, 0.3])) == 0.3001
    assert measure.tune_threshold(rows(inside, [0.52, 0.51, 0.3])) == 0.5201  # two for one: a gain


def test_answerable_store_keeps_the_models_other_measurements(tmp_path, monkeypatch):
    from types import SimpleNamespace
    from eval.measure import answerable as measure
    from rag.answer import answerable
    model = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    monkeypatch.setenv("RAG_CACHE", str(tmp_path))
    rows = [{"set": "a.jsonl", "asked": "fact", "in_wiki": True, "floor": False, "p_yes": 0.9},
            {"set": "a.jsonl", "asked": "fact", "in_wiki": False, "floor": False, "p_yes": 0.3}]
    monkeypatch.setattr(measure, "collect", lambda path, db, url, args: rows)
    monkeypatch.setattr(measure, "llm_info", lambda url: {"model": model})
    args = SimpleNamespace(answer_questions="a.jsonl", db="a.db", server="http://127.0.0.1:9", tune=True, store=True,
                           answer_threshold=None, llm_model_name=None, out=str(tmp_path / "rows.jsonl"))
    measure.run_answerable(args, True)
    assert answerable.threshold(model) == 0.3001  # the new measurement, from the cache …
    assert answerable.section_threshold(model) == 0.55  # … and the section check's threshold still there
