"""The fact check (rag/check/factcheck.py): German folding pairs, which sources are looked up, the
eval set, and what ask_rag.py shows, prints as JSON and writes to the audit log.

Each folding pair is checked the way ask_rag.py checks an answer: the claim inside a short
answer that cites [1], the other text as source [1]. A pair that must match gives no unsupported
claim; a pair that must not match gives exactly the claim back.
"""
import json
from pathlib import Path

import pytest

from conftest import ROOT, load_json, run_script, write_wiki
from fake_server import FakeLlamaServer
from rag.check.factcheck import claims, describe, unsupported
from rag.ingest import chunking

CONTRACT = "Rahmenvertrag › § 7 Kündigung\n\nDer Vertrag kann mit einer Frist von 3 Monaten gekündigt werden."


def check_pair(claim, source):
    return unsupported(f"Laut Wiki: {claim} [1].", [source], [1])


# -- folding pairs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("claim, source", [
    ("3 Monate", "Frist: drei Monate"),
    ("drei Monate", "Frist: 3 Monate"),
    ("einem Monat", "1 Monat zum Monatsende"),
    ("1 Monat", "mit einem Monat Frist"),
    ("ein Vierteljahr", "3 Monate"),
    ("12 Monate", "um ein Jahr"),
    ("zehnjährige Aufbewahrung", "10 Jahre"),
    ("14 Tage", "nach 14 Tagen"),
    ("zwei Wochen", "14 Tage"),
    ("14-tägige Frist", "zwei Wochen"),
    ("48 Stunden", "2 Tage"),
    ("einen Tag", "24 Stunden"),
    ("eine halbe Stunde", "30 Minuten"),
    ("anderthalb Stunden", "90 Minuten"),
    ("2 Tage", "2 Arbeitstage"),  # the plainer word is fine
    ("zwanzig Minuten", "20 Minuten"),
    ("fünfundzwanzig Minuten", "25 Minuten"),
    ("1.000 Euro", "1000 Euro"),
    ("1000 €", "1.000 EUR"),
    ("4.850,00 EUR", "4.850 Euro"),
    ("250 Tsd. Euro", "250.000 Euro"),
    ("1,5 Stunden", "1.5 Stunden"),
    ("30 %", "30 Prozent"),
    ("30 Prozent", "30%"),
    ("zehn Prozent", "10 %"),
    ("2048000 KB", "| Quota in KB |\n| 2048000 |"),  # the unit only in the table head
    ("01.03.2025", "am 1. März 2025"),
    ("1. März 2025", "2025-03-01"),
    ("2025-03-01", "01.03.2025"),
    ("1.3.25", "1. Maerz 2025"),
    ("24.12.", "am 24. und 31. Dezember"),
    ("31. Dezember", "am 24.12. und 31.12."),
    ("30. September", "zum 30.09."),
    ("März 2025", "am 01.03.2025"),
    ("17 Uhr", "17:00 Uhr"),
    ("7:30", "ab 07:30 Uhr"),
    ("19.00 Uhr", "19:00 bis 23:00 Uhr"),
    ("§ 7", "§7 Kündigung"),
    ("§ 7 Abs. 2", "§ 7 Absatz 2"),
    ("§ 7", "nach § 7 Abs. 2"),
    ("Paragraph 7", "§ 7"),
    ("§§ 4 und 5", "§ 4 Zahlung, § 5 Reaktion"),
    ("Art. 33 DSGVO", "nach Art. 33 DSGVO"),
    ("6-stellige PIN", "eine sechsstellige PIN"),
    ("2. Dienstag", "am zweiten Dienstag"),
    ("zehn Notfallcodes", "10 Notfallcodes"),
    ("T14", "ThinkPad T14 Gen 4"),
    ("10.20.10.1", "Gateway 10.20.10.1"),
    ("Ubuntu 22.04", "Ubuntu 22.04 LTS"),
    ("`cyradm --user cyrus localhost`", "```bash\ncyradm --user cyrus localhost\n```"),
    ("`localhost> cm user/jana.kruse`", "localhost> cm user/jana.kruse"),
    ("`cm user/vorname.nachname`", "Mit `cm` anlegen. Format: `user/vorname.nachname`."),
    ("`sq user/<name> 2048000`", "localhost> sq user/jana.kruse 2048000"),
])
def test_folded_forms_match(claim, source):
    assert claims(f"Laut Wiki: {claim} [1]."), f"{claim!r} is not read as a claim"
    assert check_pair(claim, source) == []


@pytest.mark.parametrize("claim, source", [
    ("14 Tage", "Frist: 3 Monate"),
    ("14 Tage", "cyr_expire -D 14 und eine Frist von 3 Monaten"),  # a bare 14 is no duration
    ("3 Monate", "Frist: 3 Wochen"),
    ("90 Tage", "3 Monate"),  # no month has a fixed number of days
    ("2 Arbeitstage", "2 Tage"),
    ("5 GB", "5 Arbeitstage"),
    ("1.000 Euro", "100 Euro"),
    ("1,5 Stunden", "15 Stunden"),
    ("30 %", "3 Prozent"),
    ("01.03.2025", "am 2. März 2025"),
    ("02.03.2025", "am 1. März 2025"),
    ("1. März 2026", "am 01.03.2025"),
    ("30.09.2025", "zum 30.09."),  # a year the source does not give
    ("17 Uhr", "7:00 Uhr"),
    ("§ 5", "§ 4 Zahlungsbedingungen"),
    ("§ 7 Abs. 2", "§ 7 Kündigung"),
    ("Art. 34 DSGVO", "nach Art. 33 DSGVO"),
    ("zwölf Notfallcodes", "zehn Notfallcodes"),
    ("T15", "ThinkPad T14"),
    ("10.20.10.2", "Gateway 10.20.10.1"),
    ("`cyradm --user admin localhost`", "ssh admin@mail01\ncyradm --user cyrus localhost"),
    ("`sam shared/zoll group:GG-Zoll lrs`", "sam shared/zoll group:GG-Zoll lrswipkte"),
    ("`dm user/jana.kruse`", "localhost> cm user/jana.kruse"),
])
def test_different_values_do_not_match(claim, source):
    (flagged,) = check_pair(claim, source)
    assert flagged in claim


# -- what is a claim -------------------------------------------------------------------------------
def test_unsupported_claims_in_order_each_once():
    answer = "Erst 14 Tage, dann gilt § 9, dann wieder 14 Tage und 3 Monate und 5 Wochen [1]."
    assert unsupported(answer, [CONTRACT], [1]) == ["14 Tage", "§ 9", "5 Wochen"]


@pytest.mark.parametrize("answer", [
    "Siehe [2] und [1, 3].",  # citation markers
    "Das steht in Quelle 2 und Quelle 3.",
    "1. Vertrag prüfen\n2. Kündigen mit drei Monaten Frist",  # list numbers
    "Zwei Dinge sind wichtig: eine Frist und ein Einschreiben.",  # number words counting the answer's parts
    "Es gibt zwei Wege, und zwei davon gehen über die IT.",  # or without unit or noun
    "Keine Zahl hier.",
])
def test_citations_list_numbers_and_plain_words_are_no_claims(answer):
    assert unsupported(answer, [CONTRACT] * 3, [1, 2, 3]) == []


def test_a_number_from_the_question_is_no_claim():
    question = "Stimmt es, dass die Frist 14 Tage beträgt?"
    assert unsupported("Nein, nicht 14 Tage, sondern 3 Monate [1].", [CONTRACT], [1], question) == []
    assert unsupported("Nein, nicht 14 Tage, sondern 3 Monate [1].", [CONTRACT], [1]) == ["14 Tage"]


@pytest.mark.parametrize("answer, cited, expected", [
    ("Die Frist beträgt 14 Tage [1].", [1], ["14 Tage"]),  # only the cited source counts
    ("Die Frist beträgt 14 Tage [2].", [2], []),
    ("Die Frist beträgt 14 Tage.", [], []),  # no citation: every source of the prompt
    ("Die Frist beträgt 3 Monate [2].", [2], ["3 Monate"]),  # in the prompt, but not where it says
])
def test_the_cited_sources_are_looked_up(answer, cited, expected):
    sources = [CONTRACT, "Schattenkopien › Aufbewahrung\n\nSchattenkopien bleiben 14 Tage erhalten."]
    assert unsupported(answer, sources, cited) == expected


def test_describe_is_one_line_or_nothing():
    assert describe(["14 Tage", "§ 9"]) == "Nicht in den Quellen: 14 Tage, § 9"
    assert describe([]) == ""


# -- the eval set ----------------------------------------------------------------------------------
def load_cases():
    with open(ROOT / "eval" / "factcheck.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_eval_cases_quote_real_chunks_of_the_wiki():
    cases = load_cases()
    assert len(cases) >= 80
    assert sum(1 for c in cases if c["wrong"]) >= 30 and sum(1 for c in cases if not c["wrong"]) >= 30
    chunks = {}
    for case in cases:
        for source in case["sources"]:
            if source["path"] not in chunks:
                text = (ROOT / "wiki" / source["path"]).read_text(encoding="utf-8")
                chunks[source["path"]] = chunking.chunk_page(text)
            assert (source["heading"], source["content"]) in chunks[source["path"]], (case["id"], source["path"])


def test_evaluate_factcheck_meets_its_goals():
    result = run_script("evaluate.py", "--factcheck", "--json")
    assert result.returncode == 0, result.stderr
    rates = load_json(result.stdout)["factcheck"]
    assert rates["wrong"] + rates["correct"] == len(load_cases())
    assert rates["wrong_flagged"] >= 0.80 and rates["correct_flagged"] <= 0.10, rates


def test_evaluate_factcheck_prints_rates_and_misses(tmp_path):
    cases = tmp_path / "cases.jsonl"
    source = {"path": "vertraege/x.md", "heading": "Vertrag › § 7 Kündigung", "content": "Frist: 3 Monate."}
    lines = [{"id": "a", "sources": [source], "answer": "Die Frist beträgt drei Monate [1].", "wrong": []},
             {"id": "b", "sources": [source], "answer": "Die Frist beträgt 14 Tage [1].", "wrong": ["14 Tage"]},
             {"id": "c", "sources": [source], "answer": "Die Frist beträgt 3 Monate [1].", "wrong": ["3 Monate"]}]
    cases.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    result = run_script("evaluate.py", "--factcheck", cases)
    assert result.returncode == 0, result.stderr
    assert "falsche Antworten erkannt:" in result.stdout and " 50.0%" in result.stdout
    assert "fälschlich markiert:   0.0%" in result.stdout
    assert "nicht erkannt [c]" in result.stdout and "[b]" not in result.stdout


def test_evaluate_factcheck_names_an_unreadable_file(tmp_path):
    result = run_script("evaluate.py", "--factcheck", tmp_path / "nope.jsonl")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "Faktencheck-Datei" in result.stderr and "JSON Lines" in result.stderr


# -- ask_rag.py: display, --json, audit ------------------------------------------------------------
QUESTION = "Wie lang ist die Kündigungsfrist des Rahmenvertrags?"
WIKI = {
    "vertraege/rahmenvertrag.md": """\
        # Rahmenvertrag

        ## § 7 Kündigung

        Der Rahmenvertrag kann mit einer Frist von 3 Monaten zum Ende der Laufzeit gekündigt werden.
        """,
    "drucker.md": """\
        # Drucker

        Der Drucker im 2. Stock heißt PR-204.
        """,
}


@pytest.fixture
def env(fake_embedding, tmp_path):
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    built = run_script("build_index.py", "--wiki", wiki, env=fake_embedding)
    assert built.returncode == 0, built.stderr
    return fake_embedding


def ask(env, answer, *args):
    with FakeLlamaServer(answer=answer) as server:
        return run_script("ask_rag.py", "--no-floor", *args, QUESTION,
                          env={**env, "LLAMA_SERVER_URL": server.url})


def test_wrong_duration_is_shown_after_the_citation_line(env):
    result = ask(env, ["Die Frist beträgt 3 Monate,", " nicht 14 Tage [1]."])  # one fact right, one in no source
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Die Frist beträgt 3 Monate, nicht 14 Tage [1]."
    # after the citation line and the support lines; last the answer's id (rag/doors/ratings.py)
    assert lines[-2] == "Nicht in den Quellen: 14 Tage" and lines[-1].startswith("Antwort-Id: a-")
    assert "Zitate: [1] gültig" in lines[:-2]


def test_correct_paraphrase_shows_nothing(env):
    result = ask(env, ["Die Frist beträgt drei Monate", " [1]."])
    assert result.returncode == 0, result.stderr
    assert "Nicht in den Quellen" not in result.stdout
    assert "Zitate: [1] gültig" in result.stdout.splitlines()


@pytest.mark.parametrize("answer, expected", [
    (["Die Frist beträgt 3 Monate, nicht 14 Tage [1]."], ["14 Tage"]),
    (["Die Frist beträgt drei Monate [1]."], []),
    (["Nach § 9 sind es 3 Monate."], ["§ 9"]),  # no citation: all sources looked up
])
def test_json_and_audit_carry_the_unsupported_claims(env, answer, expected):
    result = ask(env, answer, "--json")
    assert result.returncode == 0, result.stderr
    out = load_json(result.stdout)
    assert out["sources"][0]["path"] == "vertraege/rahmenvertrag.md"
    assert out["unsupported"] == expected
    entry = json.loads(Path(env["RAG_AUDIT"]).read_text(encoding="utf-8").splitlines()[-1])
    assert entry["unsupported"] == expected and entry["answer"] == answer[0]


def test_a_fact_answer_whose_fact_stands_in_no_source_is_withdrawn(env):
    result = ask(env, ["Die Frist beträgt 14 Tage [1]."], "--json")
    out = load_json(result.stdout)
    assert out["answer"] == "Dazu habe ich keine Information." and out["unsupported"] == []
    assert out["grounding"] == {"facts": ["14 Tage"], "coverage": 0.0, "nouns": None, "needed": 0.3, "refused": True,
                                "why": "Anteil der Fragewörter 0.00 < 0.3", "answer": "Die Frist beträgt 14 Tage [1]."}


def test_without_llm_call_unsupported_is_null(env):
    result = run_script("ask_rag.py", "--retrieve-only", "--json", QUESTION, env=env)
    assert result.returncode == 0, result.stderr
    assert load_json(result.stdout)["unsupported"] is None


def test_claims_live_in_their_own_module_with_their_keys():  # claims.py finds, factcheck.py checks
    from rag.check import claims as found
    assert [(c.text, c.kind, c.needs) for c in found.claims("Die Frist beträgt 14 Tage [1], ab dem 1. März 2025.")] == \
        [("14 Tage", "quantity", (("dur:1209600",),)), ("1. März 2025", "date", (("date:2025-3-1",),))]
    assert claims is found.claims
