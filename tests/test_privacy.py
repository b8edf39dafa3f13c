"""Personal data (rag/privacy.py): check digits, finding in running text, masking, and that no raw
value reaches a prompt, the --json output, --show-context or the audit log of ask_rag.py.

The end-to-end tests index a tiny wiki whose pages hold every positive value of eval/pii.jsonl
(fake embedder, fake llama-server from tests/fake_server.py) and grep everything the script wrote.
"""
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT, load_json, run_script, write_wiki
from fake_server import FakeLlamaServer
from rag import privacy
from rag.search import Source

EVAL = [json.loads(line) for line in (ROOT / "eval" / "pii.jsonl").read_text(encoding="utf-8").splitlines() if line]
POSITIVES = [item for item in EVAL if item["entities"]]
VALUES = sorted({e["value"] for item in POSITIVES for e in item["entities"]})
IBAN = "DE89 3704 0044 0532 0130 00"  # the IBAN of every German textbook


def found(text):
    return [(m.kind, m.value) for m in privacy.find(text)]


# -- check digits ----------------------------------------------------------------------------------
@pytest.mark.parametrize("iban, ok", [
    ("DE89370400440532013000", True), ("GB82WEST12345698765432", True), ("AT611904300234573201", True),
    ("CH9300762011623852957", True), ("NL91ABNA0417164300", True), ("FR1420041010050500013M02606", True),
    ("DE88370400440532013000", False),  # check digits off by one
    ("DE8937040044053201300", False),  # one character short for DE
    ("US89370400440532013000", False),  # not a SEPA country
])
def test_iban_check(iban, ok):
    assert privacy.iban_ok(iban) is ok


def test_iban_check_digits_are_computed():
    assert privacy.iban_check("DE", "370400440532013000") == "89"


@pytest.mark.parametrize("number, ok", [
    ("4111111111111111", True), ("5500000000000004", True), ("378282246310005", True),  # Visa, MC, Amex test cards
    ("6011111111111117", True), ("2221000000000009", True),
    ("4111111111111112", False),  # Luhn fails
    ("1234567812345670", False),  # Luhn passes, but no card starts with 1
    ("37828224631000", False),  # Amex prefix with the wrong length
])
def test_card_check(number, ok):
    assert privacy.card_ok(number) is ok


@pytest.mark.parametrize("number, ok", [
    ("86095742719", True),  # the BZSt's sample number
    ("86095742718", False),  # wrong check digit
    ("06095742719", False),  # starts with 0
    ("12345678903", False),  # no digit twice in the first ten
    ("11123456783", False),  # a digit three times in a row
])
def test_steuer_id_check(number, ok):
    assert privacy.steuer_id_ok(number) is ok


@pytest.mark.parametrize("number, ok", [
    ("15070649C103", True),  # Wikipedia's example Rentenversicherungsnummer
    ("15070649C104", False),  # wrong check digit
    ("15071349C103", False),  # month 13
])
def test_svnr_check(number, ok):
    assert privacy.svnr_ok(number) is ok


@pytest.mark.parametrize("chars, digit", [("T22000129", 3), ("C01X00T47", 8), ("L01X00T47", 1)])
def test_icao_7_3_1_check_digit(chars, digit):
    assert privacy.icao_check(chars) == digit  # the specimen ID card and passport of Erika Mustermann


# -- finding ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, kind, value", [
    (f"Bitte an {IBAN} überweisen.", "IBAN", IBAN),
    ("Konto DE89370400440532013000, BIC COBADEFFXXX", "IBAN", "DE89370400440532013000"),
    ("IBAN: DE 89 3704 0044 0532 0130 00", "IBAN", "DE 89 3704 0044 0532 0130 00"),
    ("Frau Beispiel (anna.beispiel@example.de) fragt nach.", "E-MAIL", "anna.beispiel@example.de"),
    ("Rückruf unter 030 23125123 erbeten.", "TELEFON", "030 23125123"),
    ("Tel.: 0171/2345678", "TELEFON", "0171/2345678"),
    ("Zentrale (0221) 4710 123, bitte.", "TELEFON", "(0221) 4710 123"),
    ("Aus dem Ausland: +49 (0)40 66969-123.", "TELEFON", "+49 (0)40 66969-123"),
    ("Alte Schreibweise 0049 89 99998123 im Briefkopf.", "TELEFON", "0049 89 99998123"),
    ("Handy 01712345678", "TELEFON", "01712345678"),
    ("Tel.: +49 (0) 30 / 23 12 51 23", "TELEFON", "+49 (0) 30 / 23 12 51 23"),  # digits run together: only after a phone word
    ("Steuer-ID 86 095 742 719 liegt vor.", "STEUER-ID", "86 095 742 719"),
    ("Die IdNr. 86095742719 fehlt noch.", "STEUER-ID", "86095742719"),
    ("SV-Nummer 15 070649 C 103 eingetragen.", "SVNR", "15 070649 C 103"),
    ("Personalausweis T220001293, gültig bis 2031.", "AUSWEIS", "T220001293"),
    ("Reisepass Nr. C01X00T478 für das Visum.", "PASS", "C01X00T478"),
    ("Karte 4111 1111 1111 1111, Ablauf 12/28", "KREDITKARTE", "4111 1111 1111 1111"),
    ("Amex 3782 822463 10005 gesperrt.", "KREDITKARTE", "3782 822463 10005"),
    ("Erika Beispiel, geb. 12.03.1985, Kiel", "GEBURTSDATUM", "12.03.1985"),
    ("Herr Muster (geboren am 3. Mai 1979) tritt am 1. April ein.", "GEBURTSDATUM", "3. Mai 1979"),
    ("Geb.-Datum: 1985-03-12", "GEBURTSDATUM", "1985-03-12"),
    ("Geburtstag: 12.3.85", "GEBURTSDATUM", "12.3.85"),
])
def test_each_kind_is_found_in_running_text(text, kind, value):
    assert found(text) == [(kind, value)]


@pytest.mark.parametrize("text", [
    "DE88 3704 0044 0532 0130 00 ist falsch abgetippt.",  # IBAN with a wrong check digit: nothing inside either
    "Die Steuer-ID 86095742718 ist ungültig.",
    "Karte 4111 1111 1111 1112 besteht Luhn nicht.",
    "Personalausweis T220001294 (Prüfziffer falsch)",
    "Die Lagerposition T220001293 ist reserviert.",  # valid check digit, but no ID card word near it
    "Hafenrandstraße 17, 20457 Hamburg; Niederlassung 01067 Dresden",
    "Die Schulung ist am 12.03.2024, der Vertrag gilt bis 2026-12-31.",
    "Installieren Sie Version 2.14.3, nicht 0.12.1-rc2.",
    "Bestellnummer 0815-4711 und Ticket #0171-2345678",
    "Seriennummer 0123-456-789, Kostenstelle 0471-1234",
    "Das Konto 0532013000 ist aufgelöst.",  # no separator, no phone word
    "Telefon +49 40 000000-Durchwahl",  # a placeholder, not a number
    "Fragen an helpdesk@example.de oder it-monitoring@example.de",  # function addresses, not a person
    "Schema: vorname.nachname@example.de",  # a template
    "Geburtstagsfeier am 14.06.2024",
])
def test_near_misses_are_not_found(text):
    assert found(text) == []


def test_matches_are_sorted_and_do_not_overlap():
    text = f"Tel. 030 23125123, IBAN {IBAN}, Mail anna@example.de, Tel. 030 23125123"
    matches = privacy.find(text)
    assert [m.kind for m in matches] == ["TELEFON", "IBAN", "E-MAIL", "TELEFON"]
    assert all(a.end <= b.start for a, b in zip(matches, matches[1:]))
    assert privacy.counts(text) == {"IBAN": 1, "E-MAIL": 1, "TELEFON": 2}
    assert privacy.describe(privacy.counts(text)) == "1 IBAN, 1 E-MAIL, 2 TELEFON"


# -- masking ---------------------------------------------------------------------------------------
def test_same_value_gets_the_same_placeholder_in_any_spelling():
    masker = privacy.Masker()
    first = masker.mask(f"IBAN {IBAN}, Tel. 030 23125123")
    second = masker.mask("Nochmal: DE89370400440532013000 oder +49 30 23125123, neu: 030 23125124")
    assert first == "IBAN [IBAN 1], Tel. [TELEFON 1]"
    assert second == "Nochmal: [IBAN 1] oder [TELEFON 1], neu: [TELEFON 2]"


def test_a_new_masker_starts_counting_again():
    assert privacy.mask("Tel. 030 23125124") == privacy.mask("Tel. 030 23125999") == "Tel. [TELEFON 1]"


@pytest.mark.parametrize("item", POSITIVES, ids=lambda item: item["entities"][0]["kind"])
def test_masking_leaves_no_original_value(item):
    masked = privacy.mask(item["text"])
    for entity in item["entities"]:
        assert entity["value"] not in masked
        assert privacy.normalise(entity["kind"], entity["value"]) not in privacy._compact(masked)
        assert f"[{entity['kind']} 1]" in masked


def test_protect_copies_the_sources_and_leaves_them_alone():
    source = Source(1, "hr/a.md", 0, "Konto", f"IBAN {IBAN}", [{"rule": "secret:key-value", "match": "pass…"}])
    question, shown, masker = privacy.protect(f"Wem gehört {IBAN}?", [source], "mask")
    assert question == "Wem gehört [IBAN 1]?" and shown[0].content == "IBAN [IBAN 1]"
    assert source.content == f"IBAN {IBAN}"  # what search returned is unchanged
    assert masker.mask(f"Das ist {IBAN}.") == "Das ist [IBAN 1]."  # the answer shares the numbering

    question, flagged, masker = privacy.protect("Wem?", [source], "flag")
    assert flagged[0].content == source.content and masker.mask(IBAN) == IBAN
    assert [f["rule"] for f in flagged[0].flags] == ["secret:key-value", "pii:iban"]
    assert len(source.flags) == 1
    assert privacy.protect("Wem?", [source], "off")[1] == [source]


# -- evaluate.py --pii ------------------------------------------------------------------------------
def test_eval_set_is_big_enough_and_meets_the_goals():
    kinds = {k: sum(e["kind"] == k for item in POSITIVES for e in item["entities"]) for k in privacy.KINDS}
    assert len(POSITIVES) >= 60 and len(EVAL) - len(POSITIVES) >= 60 and min(kinds.values()) >= 5, kinds
    result = run_script("evaluate.py", "--pii", "--json")
    assert result.returncode == 0, result.stderr
    rows = load_json(result.stdout)["pii"]
    assert rows["gesamt"]["precision"] >= 0.95 and rows["gesamt"]["recall"] >= 0.95, rows["gesamt"]
    assert all(rows[k]["precision"] >= 0.9 and rows[k]["recall"] >= 0.9 for k in privacy.KINDS), rows


def test_evaluate_pii_prints_a_german_table_without_an_index(tmp_path):
    result = run_script("evaluate.py", "--pii", "--db", tmp_path / "none.db")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("| Art | erwartet | gefunden | richtig | Präzision | Recall |")
    assert "| IBAN |" in result.stdout and "| gesamt |" in result.stdout


# -- the scripts -----------------------------------------------------------------------------------
def pii_wiki(root):
    """Every positive text of eval/pii.jsonl, on a few pages; "mailbox" makes the fake vectors non-trivial."""
    pages = {}
    for n, item in enumerate(POSITIVES):
        page = f"personal/seite-{n % 4}.md"
        pages.setdefault(page, f"# Personalakte {n % 4}\n\nMailbox-Notizen.\n")
        pages[page] += f"\n{item['text']}\n"
    return write_wiki(root, pages)


@pytest.fixture
def pii_env(fake_embedding, tmp_path):
    built = run_script("build_index.py", "--wiki", pii_wiki(tmp_path / "wiki"), env=fake_embedding)
    assert built.returncode == 0, built.stderr
    assert "Personenbezogene Daten: personal/seite-0.md: " in built.stderr
    assert not leaked(built.stdout + built.stderr)
    return fake_embedding


def leaked(text):
    """The positive values found in `text`, as written or without spaces and dashes."""
    compact = privacy._compact(text)
    return [v for v in VALUES if v in text or privacy._compact(v) in compact]


ALL = ["--mode", "vector", "--top-k", "60", "--max-per-file", "60", "--no-floor", "--whole-chunks"]  # every chunk in the prompt
QUESTION = f"Mailbox: wem gehören die IBAN {IBAN} und die Adresse anna.beispiel@example.de?"


def test_no_raw_value_in_prompt_json_context_or_audit_log(pii_env):
    answer = ["Laut [1] gehört ", VALUES[0], " zu ", VALUES[-1], "."]  # a model that makes values up
    with FakeLlamaServer(answer=answer) as server:
        as_json = run_script("ask_rag.py", *ALL, "--json", QUESTION, env={**pii_env, "LLAMA_SERVER_URL": server.url})
        shown = run_script("ask_rag.py", *ALL, "--show-context", "--show-prompt", "--explain", QUESTION,
                           env={**pii_env, "LLAMA_SERVER_URL": server.url, "RAG_PII": "mask"})
    assert as_json.returncode == 0 and shown.returncode == 0, as_json.stderr + shown.stderr
    prompts = [r["body"]["prompt"] for r in server.completions()]
    out = load_json(as_json.stdout)
    assert "Frage: Mailbox: wem gehören die IBAN [IBAN 1] und die Adresse [E-MAIL 1]?" in prompts[0]
    assert out["question"] == "Mailbox: wem gehören die IBAN [IBAN 1] und die Adresse [E-MAIL 1]?"
    assert out["answer"].startswith("Laut [1] gehört [") and "iban 1" in out["query_text"]
    values = {(e["kind"], privacy.normalise(e["kind"], e["value"])) for i in POSITIVES for e in i["entities"]}
    values |= {(m.kind, privacy.normalise(m.kind, m.value)) for m in privacy.find(QUESTION)}
    placeholders = set(re.findall(r"\[(?:%s) \d+\]" % "|".join(privacy.KINDS), prompts[0]))
    assert len(placeholders) == len(values)  # one placeholder per distinct value: all masked, none merged
    before_answer, after_answer = shown.stdout.split("--- Ende Prompt ---")[0], shown.stdout.split("\nQuellen:")[1]
    assert "--- Ende Kontext ---" in before_answer and "[STEUER-ID 1]" in before_answer
    audit_log = Path(pii_env["RAG_AUDIT"]).read_text(encoding="utf-8")
    assert len(audit_log.splitlines()) == 2
    for where, text in [("prompt", "\n".join(prompts)), ("--json", as_json.stdout), ("audit", audit_log),
                        ("--show-context/--explain/--show-prompt", before_answer), ("sources", after_answer),
                        ("stderr", as_json.stderr + shown.stderr)]:
        assert not leaked(text), f"{where}: {leaked(text)}"


def test_flag_mode_keeps_the_text_and_flags_the_sources(pii_env):
    with FakeLlamaServer() as server:
        result = run_script("ask_rag.py", *ALL, "--pii", "flag", QUESTION, env={**pii_env, "LLAMA_SERVER_URL": server.url})
    assert result.returncode == 0, result.stderr
    prompt = server.completions()[0]["body"]["prompt"]
    assert IBAN in prompt and "[IBAN 1]" not in prompt and "WARNUNG" not in prompt
    assert "⚠ markiert: pii:" in result.stdout


def test_off_mode_changes_nothing(pii_env):
    with FakeLlamaServer() as server:
        result = run_script("ask_rag.py", *ALL, QUESTION, env={**pii_env, "LLAMA_SERVER_URL": server.url, "RAG_PII": "off"})
    assert result.returncode == 0, result.stderr
    prompt = server.completions()[0]["body"]["prompt"]
    assert len(leaked(prompt)) == len(VALUES) and "pii:" not in result.stdout


def test_unknown_pii_mode_is_one_german_line(pii_env):
    result = run_script("ask_rag.py", "Frage?", env={**pii_env, "RAG_PII": "maybe"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == ["Fehler: --pii/RAG_PII='maybe' gibt es nicht – mask, flag oder off angeben"]


def test_build_index_counts_an_iban_without_printing_it(fake_embedding, small_wiki):
    write_wiki(small_wiki, {"hr/konto.md": f"# Konto\n\nGehalt bitte an {IBAN} überweisen.\n"})
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["Personenbezogene Daten: hr/konto.md: 1 IBAN"]
    assert IBAN not in result.stdout + result.stderr and "DE89370400440532013000" not in result.stdout + result.stderr
    again = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert again.returncode == 0 and again.stderr == ""  # unchanged pages are not reported again
