"""The fact check (rag/check/factcheck.py) on labelled answers over real wiki chunks: evaluate.py
--factcheck.

    {"sources": [{"path": …, "heading": …, "content": "… Frist von 3 Monaten …"}], "answer": "6 Monate [1].",
     "wrong": true} -> falsche Antworten erkannt: 100.0%  (Ziel ≥ 80%)

Does not handle: asking a model (the answers are in the file; no index or server needed).
"""
import json

from rag.check import factcheck

from eval.measure.common import read_jsonl

FACTCHECK_GOALS = (0.80, 0.10)  # wrong answers flagged at least, correct answers flagged at most


def run_factcheck(path, as_json):
    """evaluate.py --factcheck: rag/check/factcheck.py over {"sources", "answer", "wrong"} lines; no
    index needed."""
    cases = read_jsonl(path, "Faktencheck-Datei", 'JSON Lines mit "sources", "answer" und "wrong"')
    result = factcheck.measure(cases)
    if as_json:
        print(json.dumps({"factcheck": result}, ensure_ascii=False))
        return
    flagged_goal, false_goal = FACTCHECK_GOALS
    print(f"Faktencheck: {result['wrong']} falsche und {result['correct']} richtige Antworten ({path})")
    print(f"  falsche Antworten erkannt:              {result['wrong_flagged']:6.1%}  (Ziel ≥ {flagged_goal:.0%})")
    print(f"  richtige Antworten fälschlich markiert: {result['correct_flagged']:6.1%}  (Ziel ≤ {false_goal:.0%})")
    for m in result["misses"]:
        expected = f"; erwartet: {', '.join(m['expected'])}" if m["expected"] else ""
        print(f"  {m['kind']} [{m['id']}]: {m['answer']}  → markiert: {', '.join(m['flagged']) or '–'}{expected}")

