"""rag/models/speed.py: the setup's one measurement of the answer model's prompt speed and the reader's line."""
import json

import pytest

from rag.models import speed


def test_a_fast_machine_hears_seconds_and_no_advice():
    line = speed.expectation(160.0)
    assert "160 Prompt-Tokens/s" in line and "1 s (How-to)" in line and "3 s (Faktenfrage)" in line
    assert "Schneller" not in line


def test_a_slow_machine_hears_what_to_expect_and_what_speeds_it_up():
    line = speed.expectation(20.6)
    assert "10 s (How-to)" in line and "23 s (Faktenfrage)" in line  # 205 / 20.6, 470 / 20.6
    assert "--serve" in line and "--server" in line


def test_the_measurement_is_stored_per_model_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CACHE", str(tmp_path))
    model = tmp_path / "m.gguf"
    assert speed.stored(model) is None
    (tmp_path / speed.STORED).write_text(json.dumps({"m.gguf": {"tokens_per_s": 42.0}}), encoding="utf-8")
    assert speed.stored(model) == {"tokens_per_s": 42.0} and speed.stored(tmp_path / "other.gguf") is None


@pytest.mark.parametrize("content", ["kein json", "[1, 2]"])
def test_a_broken_store_counts_as_not_measured(tmp_path, monkeypatch, content):
    monkeypatch.setenv("RAG_CACHE", str(tmp_path))
    (tmp_path / speed.STORED).write_text(content, encoding="utf-8")
    assert speed.stored(tmp_path / "m.gguf") is None
