"""German-aware search: folding, compounds, stems, headings, the cascade, the floor, determinism.

The search text functions are tested directly (tiny inputs, readable outputs); the ranking is
tested through ask_rag.py --retrieve-only --mode lexical on small wikis, as a reader runs it.
"""
import json
import sqlite3
import unicodedata

import pytest

from conftest import load_json, run_script, write_wiki
from rag.text import german

VOCAB = german.learn_vocabulary(["Kündigung Frist Zahlung Bedingungen Ersatzteil Drucker Warteschlange"])


# -- the search text ------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["Schnösel", "Schnoesel", "SCHNÖSEL", "schnoesel",
                                      unicodedata.normalize("NFD", "Schnösel")])
def test_fold_meets_every_spelling(spelling):
    assert german.fold(spelling) == "schnoesel"


@pytest.mark.parametrize("raw, folded", [("Straße", "strasse"), ("GROSS", "gross"), ("Größe", "groesse"),
                                         ("Übergabe", "uebergabe"), ("Ärger", "aerger")])
def test_fold_eszett_and_umlauts(raw, folded):
    assert german.fold(raw) == folded


def test_index_text_adds_the_plain_vowel_spelling():
    tokens = german.index_text("Kündigungsfrist", VOCAB).split()
    assert "kuendigungsfrist" in tokens and "kundigungsfrist" in tokens


@pytest.mark.parametrize("word, parts", [
    ("kuendigungsfrist", ["kuendigung", "frist"]),  # linking s
    ("zahlungsbedingungen", ["zahlung", "bedingungen"]),
    ("druckerwarteschlange", ["drucker", "warteschlange"]),  # no linking element
    ("datenschutzbeauftragter", ["daten", "schutz", "beauftragter"]),  # built-in words, three parts
])
def test_compounds_split_against_the_vocabulary(word, parts):
    assert german.split_compound(word, VOCAB) == parts


@pytest.mark.parametrize("word", ["drucker", "frist", "mailbox", "passwortxyz"])
def test_words_that_do_not_split(word):
    assert german.split_compound(word, VOCAB) == []


@pytest.mark.parametrize("a, b", [("ersatzteilen", "ersatzteile"), ("bedingungen", "bedingung"),
                                  ("mailboxen", "mailbox"), ("legen", "lege")])
def test_stems_meet(a, b):
    assert german.stem(a) == german.stem(b)


@pytest.mark.parametrize("question_word, page_word", [("groß", "Größe"), ("Größe", "groß"), ("Vertrag", "Verträge"),
                                                      ("Verträge", "Vertrag"), ("Postfach", "Postfächer")])
def test_an_inflecting_umlaut_meets_its_base_form(question_word, page_word):
    term, = german.query_terms(question_word, VOCAB)
    assert term.found_in(set(german.index_text(page_word, VOCAB).split()))
    assert not set(term.exact).isdisjoint(german.index_text(page_word, VOCAB).split())  # the strict stage too


def test_separable_verb_meets_its_infinitive():
    assert "lege" in german.expand("anlegen", set())


def test_query_terms_drop_stopwords_and_keep_alternatives():
    terms = german.query_terms("Wie lang ist die Kuendigungsfrist für den Drucker?", VOCAB)
    assert [t.word for t in terms] == ["kuendigungsfrist", "drucker"]
    assert {"kuendigung", "frist"} <= set(terms[0].loose)
    assert terms[0].prefix == "kuendi" and terms[1].prefix == "drucke"


# -- ranking through ask_rag.py -------------------------------------------------------------------
WIKI = {
    "vertraege/dienstleister.md": """\
        # Rahmenvertrag Dienstleister

        ## § 4 Zahlungsbedingungen

        Rechnungen sind innerhalb von 30 Tagen ohne Abzug zu begleichen.

        ## § 7 Kündigung

        Die Kündigungsfrist beträgt drei Monate zum Quartalsende.
        """,
    "hardware/ersatzteile.md": """\
        # Ersatzteile

        Netzteile, Akkus und Tastaturen liegen im Lager im Keller.
        """,
    "arbeitsplatz/drucker.md": """\
        # Drucker

        Die Druckerwarteschlange leert der Helpdesk. Toner liegt im Kopierraum.
        """,
    "mail/groesse.md": """\
        # Postfachgröße

        Jedes Postfach darf 2 GB groß sein.
        """,
    "allgemein/heading-only.md": """\
        # Schlüsselausgabe

        Montags von 9 bis 11 Uhr im Raum 0.12.
        """,
}


@pytest.fixture
def lexical_index(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    result = run_script("build_index.py", "--wiki", wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    return fake_embedding


def top(env, question, mode="lexical"):
    result = run_script("ask_rag.py", "--retrieve-only", "--json", "--mode", mode, question, env=env)
    assert result.returncode == 0, result.stderr
    return load_json(result.stdout)


@pytest.mark.parametrize("question, path, heading_end", [
    ("Kuendigungsfrist Dienstleister", "vertraege/dienstleister.md", "§ 7 Kündigung"),  # ae/oe/ue typed
    ("Kundigungsfrist", "vertraege/dienstleister.md", "§ 7 Kündigung"),  # plain vowel typed
    ("Welche Frist gilt?", "vertraege/dienstleister.md", "§ 7 Kündigung"),  # part -> compound
    ("Frist für die Kündigung", "vertraege/dienstleister.md", "§ 7 Kündigung"),  # split -> compound
    ("Was ist die Zahlungsfrist?", "vertraege/dienstleister.md", "§ 4 Zahlungsbedingungen"),  # compound -> heading part
    ("Gibt es Ersatzteilen im Lager?", "hardware/ersatzteile.md", "Ersatzteile"),  # stem
    ("Warteschlange leeren", "arbeitsplatz/drucker.md", "Drucker"),  # compound in the text -> part
    ("Wie groß darf das Postfach sein", "mail/groesse.md", "Postfachgröße"),  # ß and ö
    ("Schluesselausgabe", "allgemein/heading-only.md", "Schlüsselausgabe"),  # only in the heading
])
def test_german_question_finds_its_section(lexical_index, question, path, heading_end):
    out = top(lexical_index, question)
    best = out["sources"][0]
    assert (best["path"], best["heading"].split(" › ")[-1]) == (path, heading_end), out["sources"]


def test_strategy_is_reported(lexical_index):
    assert top(lexical_index, "Kündigungsfrist")["strategy"] == "strict"
    assert top(lexical_index, "Zahlungsfrist")["strategy"] in ("compound", "or")


def test_explain_shows_search_text_strategy_and_ranks(lexical_index):
    result = run_script("ask_rag.py", "--retrieve-only", "--explain", "Kuendigungsfrist", env=lexical_index)
    assert result.returncode == 0, result.stderr
    assert "Suchtext:" in result.stdout and "kuendigungsfrist" in result.stdout
    assert "Suchstufe: strict" in result.stdout and "lexical#1" in result.stdout


def test_out_of_wiki_question_is_refused_without_llm(lexical_index):
    # The server URL points nowhere: a refusal must not even try to reach it.
    env = {**lexical_index, "LLAMA_SERVER_URL": "http://127.0.0.1:9"}
    result = run_script("ask_rag.py", "--json", "Was gibt es heute in der Kantine?", env=env)
    assert result.returncode == 0, result.stderr
    out = load_json(result.stdout)
    assert out["answer"] == "Dazu habe ich keine Information."
    assert out["llm_called"] is False and out["weak_evidence"] is True
    assert isinstance(out["sources"], list)


def test_in_wiki_question_passes_the_floor(lexical_index):
    out = top(lexical_index, "Wie lang ist die Kündigungsfrist?", mode="hybrid")
    assert out["weak_evidence"] is False


def test_ranking_identical_across_eight_reindex_runs(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    seen = set()
    for run in range(8):
        db = tmp_path / f"k{run}.db"
        env = {**fake_embedding, "RAG_DB": str(db)}
        assert run_script("build_index.py", "--wiki", wiki, env=env).returncode == 0
        out = top(env, "Frist Drucker Postfach Lager", mode="hybrid")
        seen.add(json.dumps([(s["path"], s["chunk_index"], s["score"]) for s in out["sources"]]))
    assert len(seen) == 1


def test_at_most_max_per_file_chunks(lexical_index):
    result = run_script("ask_rag.py", "--retrieve-only", "--json", "--top-k", "4", "--max-per-file", "1",
                        "Zahlungsbedingungen Kündigung Drucker Ersatzteile", env=lexical_index)
    paths = [s["path"] for s in load_json(result.stdout)["sources"]]
    assert len(paths) == len(set(paths)) >= 3


def test_index_without_fts5_falls_back_to_vectors(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", WIKI)
    env = {**fake_embedding, "RAG_NO_FTS5": "1"}
    build = run_script("build_index.py", "--wiki", wiki, env=env)
    assert build.returncode == 0 and "kein FTS5" in build.stderr
    conn = sqlite3.connect(fake_embedding["RAG_DB"])
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'fts'").fetchone() is None
    lexical = run_script("ask_rag.py", "--retrieve-only", "--mode", "lexical", "Drucker", env=env)
    assert lexical.returncode == 1 and "FTS5" in lexical.stderr and "Traceback" not in lexical.stderr
    hybrid = run_script("ask_rag.py", "--retrieve-only", "--json", "Drucker", env=env)
    assert hybrid.returncode == 0 and load_json(hybrid.stdout)["mode"] == "vector"


# -- evaluate.py ----------------------------------------------------------------------------------
def test_evaluate_prints_the_table_and_json(tmp_path, lexical_index):
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in [
        {"question": "Kuendigungsfrist", "expected": [{"file": "vertraege/dienstleister.md", "heading": "§ 7 Kündigung"}]},
        {"question": "Zahlungsfrist", "expected": [{"file": "vertraege/dienstleister.md", "heading": "§ 4 Zahlungsbedingungen"}]},
        {"question": "Was gibt es heute in der Kantine?", "expected": []},
    ]), encoding="utf-8")
    table = run_script("evaluate.py", "--questions", questions, env=lexical_index)
    assert table.returncode == 0, table.stderr
    assert "| hybrid" in table.stdout and "Recall@1" in table.stdout
    out = load_json(run_script("evaluate.py", "--questions", questions, "--json", "--modes", "lexical",
                               env=lexical_index).stdout)
    lexical = out["modes"]["lexical"]
    assert lexical["recall@1"] == 1.0 and lexical["mrr@10"] == 1.0
    assert lexical["refused_out_of_wiki"] == 1.0 and lexical["refused_in_wiki"] == 0.0


# -- the per-file cap ------------------------------------------------------------------------------
def ranked(*paths):
    """Sources in rank order; chunk_index counts per path. Example: ranked("a", "a") -> a#0, a#1"""
    from rag.search.ranking import Source
    seen = {}
    out = []
    for path in paths:
        out.append(Source(len(out) + 1, path, seen.get(path, 0), "", "", []))
        seen[path] = seen.get(path, 0) + 1
    return out


def names(sources):
    return [f"{s.path}#{s.chunk_index}" for s in sources]


@pytest.mark.parametrize("comparable, expected", [
    (0, ["a#0", "b#0", "c#0"]),  # hard cap: one per file, then the list ends
    (0.9, ["a#0", "b#0", "c#0", "a#1"]),  # b and c are near enough to give way to; then a fills up
    (2, ["a#0", "a#1", "a#2", "b#0"]),  # no cap
])
def test_cap_gives_way_only_to_comparable_candidates(comparable, expected):
    from rag.search.ranking import cap_per_file
    assert names(cap_per_file(ranked("a", "a", "a", "b", "c"), 4, 1, comparable)) == expected


def test_one_big_file_still_fills_the_list():
    from rag.search.ranking import COMPARABLE, cap_per_file
    assert names(cap_per_file(ranked("law", "law", "law", "law", "law"), 4, 3, COMPARABLE)) == \
        ["law#0", "law#1", "law#2", "law#3"]
    assert len(cap_per_file(ranked("law", "law", "law", "law", "law"), 4, 3, 0)) == 3


def test_a_far_away_file_does_not_push_out_the_big_one():
    from rag.search.ranking import cap_per_file
    # positions 1-3 and 4 from "law", the other file only at position 40: 1/100 < 0.9 × 1/64
    paths = ["law"] * 39 + ["other"]
    assert names(cap_per_file(ranked(*paths), 4, 3, 0.9)) == ["law#0", "law#1", "law#2", "law#3"]


# -- the relevance floor with a cosine reject threshold --------------------------------------------
@pytest.mark.parametrize("cosine, coverage, strategy, weak", [
    (0.83, 0.9, "strict", True),  # below the reject threshold: refused even when most words match
    (0.83, 1.0, "strict", False),  # … but not when a hit holds every word (a table row: "Durchwahl … Sven Schütt")
    (0.83, 1.0, "compound", True),  # … as words, not as parts of compounds ("Urlaubstage" in "Urlaub" and "Tage")
    (0.855, 0.10, "or", True),  # between the thresholds: the full-text rule decides (too little covered)
    (0.855, 0.60, "or", False),
    (0.87, 0.10, "or", False),  # from the floor on the vectors alone are enough evidence
])
def test_the_floor_rejects_low_cosine_unless_every_word_matches(cosine, coverage, strategy, weak):
    from rag.search.ranking import Retrieval, floor
    found = Retrieval([], "hybrid", coverage=coverage, unknown=0.0, best_cosine=cosine,
                      strategy=strategy)
    result = floor(found, 0.862, 0.85)
    assert result.weak is weak
    assert ("< 0.85" in result.weak_reason) is (weak and cosine < 0.85)


def test_index_settings_measured_per_model_and_stored_values_win():
    from rag.search.ranking import index_settings
    assert index_settings({"embed_model": "multilingual-e5-small-q4_0.gguf"}) == (1.0, 0.862, 0.85)
    assert index_settings({"embed_model": "gemma-3-270m-q4_k_m.gguf"}) == (0.01, 0.956, None)
    stored = {"embed_model": "multilingual-e5-small-q4_0.gguf", "vector_weight": "0.5", "floor_cosine": "",
              "reject_cosine": "0.8"}
    assert index_settings(stored) == (0.5, None, 0.8)
    assert index_settings(stored, 0.25, 0.9, 0.7) == (0.25, 0.9, 0.7)
