"""evaluate.py --expand and --followups with a fake answer server and the readable fake embedder:
what is compared, what is reported, and that a failing model ends the run with one German line."""
import json

from conftest import assert_one_error_line, run_script
from fake_server import FakeLlamaServer

HOME = "Wie arbeite ich von zu Hause aus?"  # no word of the small wiki; its phrases name the VPN
QUESTIONS = [{"question": HOME, "expected": [{"file": "netzwerk/vpn.md", "heading": ""}]},
             {"question": "Wie lege ich eine Mailbox an?", "expected": [{"file": "mail/mailbox-anlegen.md",
                                                                         "heading": "Mailbox anlegen"}]}]
PAIRS = [{"first": "Wie lege ich eine Mailbox an?", "followup": "Und wie groß ist sie?",
          "standalone": "Welche Quota hat eine Mailbox?",
          "expected": [{"file": "mail/mailbox-anlegen.md", "heading": "Quota"}]}]


def jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def indexed(fake_embedding, small_wiki):
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    return fake_embedding


def test_expand_reports_the_set_without_and_with_the_phrases(fake_embedding, small_wiki, tmp_path):
    env = indexed(fake_embedding, small_wiki)
    questions = jsonl(tmp_path / "q.jsonl", QUESTIONS)
    with FakeLlamaServer(replies=['["VPN-Client starten", "VPN anmelden"]', '["Mailbox anlegen"]']) as server:
        result = run_script("evaluate.py", "--expand", "--questions", questions, "--server", server.url, "--json",
                            env=env)
        calls = server.structured()
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out["modes"]) == {"hybrid", "hybrid + erweitert"} and out["method"] == "phrases"
    assert (out["modes"]["hybrid"]["recall@1"], out["modes"]["hybrid + erweitert"]["recall@1"]) == (0.5, 1.0)
    assert [e["expansions"] for e in out["expansions"]] == [["VPN-Client starten", "VPN anmelden"], ["Mailbox anlegen"]]
    assert len(calls) == 2 and all(c["body"]["temperature"] == 0 for c in calls)  # one call per question
    assert out["median_s"]["expand_s"] is not None and out["median_s"]["choose_s"] is None


def test_expand_choose_asks_once_per_question_and_list(fake_embedding, small_wiki, tmp_path):
    env = indexed(fake_embedding, small_wiki)
    questions = jsonl(tmp_path / "q.jsonl", QUESTIONS)
    with FakeLlamaServer(replies=["[1]"]) as server:
        result = run_script("evaluate.py", "--expand", "--expand-method", "choose", "--questions", questions,
                            "--server", server.url, "--modes", "hybrid,vector", "--json", env=env)
        calls = server.structured()
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert set(out["modes"]) == {"hybrid", "vector", "hybrid + erweitert", "vector + erweitert"}
    assert all(e["chosen"] and not e["expansions"] for e in out["expansions"])
    prompts = [c["body"]["messages"][1]["content"] for c in calls]
    assert len(prompts) == len(set(prompts)) <= 4  # the same list is asked about once


def test_followups_compare_alone_rewritten_and_by_hand(fake_embedding, small_wiki, tmp_path):
    env = indexed(fake_embedding, small_wiki)
    pairs = jsonl(tmp_path / "f.jsonl", PAIRS)
    with FakeLlamaServer(replies=['"Welche Quota bekommt die Mailbox?"']) as server:
        result = run_script("evaluate.py", "--followups", pairs, "--server", server.url, env=env)
        (rewrite,) = server.structured()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Folgefragen: 1 Paare")
    assert lines[1] == "| Variante | Recall@1 | Recall@5 | MRR@10 | fälschlich abgelehnt |"
    assert [line.split(" | ")[0] for line in lines[3:8]] == [
        "| Folgefrage allein", "| mit der Frage davor (ohne Modell)", "| umgeschrieben (mit der Frage davor)",
        "| nur umgeschrieben", "| eigenständig (von Hand)"]
    assert lines[-1].endswith("Und wie groß ist sie?  → Welche Quota bekommt die Mailbox?")
    assert "Frage: Wie lege ich eine Mailbox an?" in rewrite["body"]["messages"][-1]["content"]


def test_followups_json_lists_each_rewritten_question_with_its_ranks(fake_embedding, small_wiki, tmp_path):
    env = indexed(fake_embedding, small_wiki)
    pairs = jsonl(tmp_path / "f.jsonl", PAIRS)
    with FakeLlamaServer(replies=['"Welche Quota bekommt die Mailbox?"', '["Quota"]']) as server:
        result = run_script("evaluate.py", "--followups", pairs, "--expand", "--server", server.url, "--json",
                            env=env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert list(out["variants"]) == ["Folgefrage allein", "mit der Frage davor (ohne Modell)",
                                     "umgeschrieben (mit der Frage davor)", "nur umgeschrieben",
                                     "eigenständig (von Hand)", "umgeschrieben + erweitert"]
    (row,) = out["rewritten"]
    assert row["rewritten"] == "Welche Quota bekommt die Mailbox?" and isinstance(row["rank"], int)


def test_an_unreachable_model_ends_the_run_with_one_line(fake_embedding, small_wiki, tmp_path):
    env = indexed(fake_embedding, small_wiki)
    result = run_script("evaluate.py", "--expand", "--questions", jsonl(tmp_path / "q.jsonl", QUESTIONS),
                        "--server", "http://127.0.0.1:9", env=env)
    assert_one_error_line(result, "nicht erreichbar")


def test_a_follow_up_file_without_its_fields_is_one_line(fake_embedding, small_wiki, tmp_path):
    env = indexed(fake_embedding, small_wiki)
    bad = jsonl(tmp_path / "f.jsonl", [{"first": "A", "followup": "B"}])
    result = run_script("evaluate.py", "--followups", bad, "--server", "http://127.0.0.1:9", env=env)
    assert_one_error_line(result, "standalone", "expected")
