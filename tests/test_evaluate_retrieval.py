"""evaluate.py reads answer sets too (eval/answers_*.jsonl): how-to and fact lines expect their "source"
section, "out" lines expect none (eval/measure/retrieval.py)."""
import json

import pytest

from eval.measure import retrieval
from rag.store import Row


def source(path, heading):
    return Row(1, path, 0, heading, "", [])


def test_answer_set_lines_become_expected_sections(tmp_path):
    lines = [{"question": "Wie installiere ich?", "kind": "howto", "facts": [["x"]], "source": "install__linux.md › Linux"},
             {"question": "Welcher Port?", "kind": "fact", "facts": [["8081"]], "source": "a.md › Start › Ports"},
             {"question": "Geht FreeBSD?", "kind": "out", "facts": [], "source": "nicht im Korpus – geprüft: BSD"}]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    items = retrieval.load_questions(path)
    assert [i["expected"] for i in items] == [[{"file": "install__linux.md", "heading": "Linux"}],
                                              [{"file": "a.md", "heading": "Start › Ports"}], []]


@pytest.mark.parametrize("path, heading, expected, hit", [
    ("install__linux.md", "Linux › Voraussetzungen", {"file": "install__linux.md", "heading": "Linux"}, True),
    ("install__linux.md", "Linux › Voraussetzungen", {"file": "install__linux.md", "heading": "Voraus"}, False),
    ("install__other.md", "Linux", {"file": "install__linux.md", "heading": "Linux"}, False),
    ("a.md", "Start › Ports › Firewall", {"file": "a.md", "heading": "Start › Ports"}, True),
    ("a.md", "Start › Firewall", {"file": "a.md", "heading": "Start › Ports"}, False),
])
def test_a_chunk_matches_when_its_heading_path_contains_the_heading(path, heading, expected, hit):
    assert retrieval.matches(source(path, heading), [expected]) is hit


@pytest.mark.parametrize("line, words", [
    ({"question": "Q", "kind": "howto", "facts": []}, "source"),
    ({"question": "Q", "kind": "meinung", "source": "a.md › A"}, "kind"),
])
def test_broken_answer_lines_stop_with_one_german_line(tmp_path, line, words):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        retrieval.load_questions(path)
    assert str(stop.value).startswith("Fehler: ") and words in str(stop.value)
