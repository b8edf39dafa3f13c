"""evaluate.py's answer scoring (--answers --rescore): how-to steps, supported citations, refusals by whom."""
import json

from conftest import run_script

ROWS = [
    {"question": "Wie lege ich eine Mailbox an?", "kind": "howto", "asked_as": "howto", "in_wiki": True,
     "answer": "Laut Quelle [2]:\n1. `cyradm` starten\n2. Mit `cm` anlegen", "error": None, "llm_called": True,
     "answerable": {"p_yes": 0.9, "threshold": 0.5, "refused": False}, "valid_citation": True,
     "unknown_citations": [], "supported_citation": True, "prompt_tokens": 700, "first_token_s": 3.0,
     "total_s": 9.0, "sources": [], "facts": [["cyradm"], ["cm"], ["sq"]]},  # 2 of 3 steps: no hit
    {"question": "Wie hoch ist das IT-Budget?", "kind": "out", "asked_as": "fact", "in_wiki": False,
     "answer": "Dazu habe ich keine Information.", "error": None, "llm_called": True,
     "answerable": {"p_yes": 0.1, "threshold": 0.5, "refused": True}, "valid_citation": False,
     "unknown_citations": [], "supported_citation": None, "prompt_tokens": 600, "first_token_s": None,
     "total_s": 5.0, "sources": [], "facts": []},
    {"question": "Welche Kündigungsfrist?", "kind": "fact", "asked_as": "fact", "in_wiki": True,
     "answer": "Drei Monate [1].", "error": None, "llm_called": True, "answerable": None, "valid_citation": True,
     "unknown_citations": [], "supported_citation": False, "prompt_tokens": 500, "first_token_s": 2.0,
     "total_s": 4.0, "sources": [], "facts": [["3 Monate", "drei Monate"]]},
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
