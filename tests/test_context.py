"""rag/answer/context.py (what the model sees of each source), the how-to prefill and the answerability share."""
from pathlib import Path

import pytest

from rag import tuned
from rag.answer import answerable
from rag.answer import choose
from rag.answer import context
from rag.answer import prompt as answer
from rag.models import answer_stream
from rag.search.ranking import Source
from rag.text import german, sentences, units

STEPS = """Diese Anleitung beschreibt das Anlegen.

1. Per SSH anmelden.
2. `cyradm` starten und das Passwort eingeben.
3. Die Mailbox mit `cm` anlegen. Der Name ist `user/vorname.nachname`.
4. Die Quota setzen. Dafür gibt es `sq`; der Wert ist in KB.

```bash
cyradm --user cyrus localhost
```"""


@pytest.mark.parametrize("question, expected", [
    ("Wie lege ich in Cyrus IMAP eine neue Mailbox an?", "howto"),
    ("Wie richte ich VPN unter Linux ein?", "howto"),
    ("Was muss ich tun, wenn mein Passwort abgelaufen ist?", "howto"),
    ("Welche Schritte braucht ein neuer Laptop?", "howto"),
    ("Mein Drucker druckt nicht – wie bekomme ich ihn wieder zum Laufen?", "howto"),
    ("Wie lange ist die Kündigungsfrist beim Elbe Systemhaus?", "fact"),
    ("Wie heißt der Drucker im 2. Stock?", "fact"),
    ("Wie groß darf mein Postfach sein?", "fact"),
    ("Wer ist für die Handscanner zuständig?", "fact"),
    ("Kann ich eine gelöschte Mailbox wiederherstellen?", "fact"),
])
def test_kind_tells_procedures_from_facts(question, expected):
    assert context.kind(question) == expected


def test_sentences_do_not_split_after_abbreviations_or_ordinals():
    assert sentences.split("Z. B. mit cm. Am 2. Mai geht es los. Fertig!") == \
        ["Z. B. mit cm.", "Am 2. Mai geht es los.", "Fertig!"]


def test_units_keep_items_code_rows_and_sentences_whole():
    found = units.units(STEPS + "\n\n| Gruppe | Quota |\n| Lager | 2 GB |")
    kinds = [u.kind for u in found]
    assert kinds == ["sentence", "item", "item", "item", "item", "code", "row", "row"]
    assert found[5].text.startswith("```bash") and found[5].text.endswith("```")
    assert all(u.text in STEPS + "\n\n| Gruppe | Quota |\n| Lager | 2 GB |" for u in found)  # verbatim


@pytest.mark.parametrize("content, expected", [
    ("Wegen Umbau bleibt die Kantine vom\n12. bis 16. August geschlossen.",  # a scanned notice, wrapped
     [("sentence", "Wegen Umbau bleibt die Kantine vom 12. bis 16. August geschlossen.")]),
    ("Schritte:\n1. anmelden\n2. starten", [("sentence", "Schritte:"), ("item", "1. anmelden"), ("item", "2. starten")]),
    ("Text\n- Punkt", [("sentence", "Text"), ("item", "- Punkt")]),
    ("2. Dienst starten\n3. prüfen", [("item", "2. Dienst starten"), ("item", "3. prüfen")]),
])
def test_units_a_numbered_line_inside_a_paragraph_continues_it_unless_it_is_1_or_a_bullet(content, expected):
    assert [tuple(u) for u in units.units(content)] == expected


def test_units_a_code_block_indented_under_a_list_item_stands_as_its_closing_fence():
    content = "1. Führe aus:\n\n    ```sql\n    UPDATE s SET v = 1;\n      -- Kommentar\n    ```\n\n    Dabei ist s die Tabelle."
    assert [tuple(u) for u in units.units(content)] == [
        ("item", "1. Führe aus:"), ("code", "```sql\nUPDATE s SET v = 1;\n  -- Kommentar\n```"),
        ("sentence", "Dabei ist s die Tabelle.")]
    code = "```\n    eingerückt\n```"
    assert units.units(code)[0].text == code  # its own indent stays


def test_steps_keep_each_first_sentence_and_a_later_command():
    assert context.steps(STEPS) == ("1. Per SSH anmelden.\n2. `cyradm` starten und das Passwort eingeben.\n"
                                    "3. Die Mailbox mit `cm` anlegen.\n4. Die Quota setzen. Dafür gibt es `sq`; "
                                    "der Wert ist in KB.")
    assert context.steps("Nur Text.\n\n```\nls\n```") == "Nur Text.\n\n```\nls\n```"  # no numbered list


def source(path, heading, content):
    return Source(1, path, 0, heading, content, [])


def test_select_keeps_the_procedure_and_the_best_sentence_of_the_others():
    filler = " ".join(f"Das Wetter ist am Tag {n} schön." for n in range(120))  # longer than BUDGET
    sources = [source("a.md", "Mailbox", f"Die Mailbox ist wichtig. {filler} Kantine ab 12 Uhr."),
               source("a.md", "Mailbox › Anlegen", STEPS)]
    vocab = german.learn_vocabulary(s.content for s in sources)
    question = "Wie lege ich eine Mailbox an?"
    terms = german.query_terms(question, vocab)
    weights = [1.0] * len(terms)
    chosen = choose.procedure(sources, terms, weights, vocab)  # rag/answer/choose.py
    texts, procedure = context.select(question, sources, terms, weights, vocab, procedure=chosen)
    assert procedure == 2 and texts[1] == context.steps(STEPS)
    assert texts[0] == "Die Mailbox ist wichtig."  # the one unit that shares a word with the question
    facts, none = context.select("Wie groß ist die Mailbox?", sources, terms, [1.0] * len(terms), vocab, "fact")
    assert none is None and "Wetter" not in facts[0]


def test_a_source_that_fits_its_share_is_shown_whole():
    # the table row names none of the question's words ("normale" = "Standard"), but there is room for it
    quota = ("Der Höchstwert von 10 GB für persönliche Mailboxen braucht eine Freigabe.\n\n"
             "| Benutzergruppe | Quota |\n|---|---|\n| Mitarbeitende (Standard) | 2 GB |")
    sources = [source("q.md", "Quota › Standard-Quota nach Benutzergruppe", quota)]
    vocab = german.learn_vocabulary([quota])
    question = "Wie viel Speicherplatz hat eine normale Mailbox?"
    terms = german.query_terms(question, vocab)
    texts, _ = context.select(question, sources, terms, [1.0] * len(terms), vocab, "fact")
    assert "Mitarbeitende (Standard) | 2 GB" in texts[0]


def test_a_fact_answer_reads_the_best_source_and_the_one_whose_sentence_holds_the_question_s_words():
    sources = [source("a.md", "Vertrag › § 9", "Störungen gehen telefonisch an die Hotline."),
               source("b.md", "Fristen", "Verträge mit Dienstleistern kündigt die Geschäftsführung."),
               source("c.pdf", "Seite 2", "Die Hotline des Dienstleisters ist 0421 555 3090. Das Wetter ist schön."),
               source("d.md", "Handys", "Ein Diensthandy bekommt der Vertrieb.")]
    vocab = german.learn_vocabulary(s.content for s in sources)
    question = "Welche Hotline hat der Dienstleister?"
    terms = german.query_terms(question, vocab)
    assert context.fact_reads(sources, terms, [1.0] * len(terms), vocab, 2) == [0, 2]  # not [0, 1]: rank alone
    texts, none = context.select(question, sources, terms, [1.0] * len(terms), vocab, "fact", read=2)
    assert none is None and texts[1] is None and texts[3] is None and "0421 555 3090" in texts[2]
    assert texts[2] == sources[2].content  # it fits its share: whole
    assert context.select(question, sources, terms, [1.0] * len(terms), vocab, "fact", read=4)[0][1] is not None
    assert context.fact_reads(sources[:2], terms, [1.0] * len(terms), vocab, 2) == [0, 1]


def ranked(*items):
    """Sources in rank order from (heading, content, cosine)."""
    out = []
    for n, (heading, content, cosine) in enumerate(items):
        s = source("a.md", heading, content)
        s.cosine = cosine
        out.append(s)
    return out


@pytest.mark.parametrize("items, expected", [
    ([("Mailbox", "Die Mailbox ist wichtig.", 0.913), ("Mailbox › Anlegen", STEPS, 0.919)], 1),  # best cosine
    ([("Mailbox", "Kurz: `cm` nutzen.", 0.915), ("Mailbox › Anlegen", STEPS, 0.912)], 1),  # intro, steps: ±0.01
    ([("Mailbox › Quota", "Die Quota ist 2 GB.", 0.93), ("Mailbox › Anlegen", STEPS, 0.91)], 0),  # 0.02 apart
    ([("Mailbox › A", "Text.", 0.9), ("Mailbox › B", "Text.", 0.9)], 0),  # a tie keeps the better rank
    ([("Mailbox › A", "Text.", None), ("Mailbox › B", "- eins\n- zwei", None)], 1),  # no cosines: the shape
])
def test_the_old_choice_takes_the_closest_section_shaped_like_a_procedure(items, expected):
    sources = ranked(*items)  # choose.BEFORE: best_section() of issue 29, as weights
    assert choose.choose(sources, signal_weights=choose.BEFORE).order == [expected]
    assert choose.choose([]).order == []


def test_steps_answer_is_the_section_verbatim_a_unit_a_line():
    found = answer.steps_answer(2, STEPS)
    lines = found.split("\n")
    assert lines[0] == "Laut Quelle [2]:" and lines[1] == "Diese Anleitung beschreibt das Anlegen."
    assert lines[4] == "3. Die Mailbox mit `cm` anlegen. Der Name ist `user/vorname.nachname`."  # whole steps
    assert found.endswith("```bash\ncyradm --user cyrus localhost\n```")
    assert all(" ".join(line.split()) in " ".join(STEPS.split()) for line in lines[1:])
    assert answer.steps_answer(1, "  \n") is None


def test_prefill_is_sent_once_whether_or_not_the_server_repeats_it():
    start = "Laut Quelle [2]:\n1."
    assert "".join(answer_stream.with_prefill(["Laut Quelle", " [2]:\n1.", " SSH"], start)) == start + " SSH"
    assert "".join(answer_stream.with_prefill([" SSH", " an"], start)) == start + " SSH an"
    assert "".join(answer_stream.with_prefill([], start)) == ""


def test_share_yes_reads_yes_and_no_spellings():
    assert answerable.share_yes([{"token": "Ja", "logprob": 0.0}, {"token": " nein", "logprob": -30}]) > 0.99
    assert answerable.share_yes([{"token": "Ne", "logprob": -0.1}, {"token": "ja", "logprob": -2.4}]) < 0.1
    assert answerable.share_yes([{"token": "Vielleicht", "logprob": -0.1}]) is None


# -- rag/check/support.py --------------------------------------------------------------------------
from rag.check import grounding, support  # noqa: E402

SOURCES = [source("a.md", "Mailbox", "Die Mailbox ist wichtig. Das Passwort steht im Tresor der IT."),
           source("a.md", "Mailbox › Anlegen", STEPS)]
VOCAB = german.learn_vocabulary(s.content for s in SOURCES)


def test_statements_inherit_the_citation_of_a_source_line():
    found = support.statements("Laut Quelle [2]:\n1. Per SSH anmelden.\n2. `cm` starten [1]. Dann prüfen.\nEnde.")
    assert found == [("Laut Quelle [2]:", [2]), ("1. Per SSH anmelden", [2]), ("2. `cm` starten", [1]),
                     ("Dann prüfen", [1]), ("Ende", [2])]
    assert support.statements("Laut Quelle [2]:\n1. SSH.\n\nEnde.")[-1] == ("Ende", [])  # up to a blank line



def test_a_citation_after_the_full_stop_belongs_to_the_sentence_before_it():
    assert support.statements("Die Hotline ist 0421 555 3090. [3]") == [("Die Hotline ist 0421 555 3090", [3])]
    assert support.statements("A gilt [1]. [2] B gilt.") == [("A gilt", [1]), ("B gilt", [2])]  # no second owner

@pytest.mark.parametrize("answer, verdict, by", [
    ("Das Passwort steht im Tresor der IT [1].", "gestützt", [1]),
    ("Das Passwort steht im Tresor der IT [2].", "anderes Zitat", [1]),
    ("Das Passwort steht im Tresor der IT.", "ohne Zitat", [1]),
    ("Mailboxen bestellt man im Webportal des Providers [1].", "nicht gestützt", []),
    ("Die Mailbox mit `dm` anlegen [2].", "nicht gestützt", []),  # a command must stand in the source as written
    ("Die Mailbox mit `cm` anlegen [2].", "gestützt", [2]),
])
def test_each_statement_is_matched_to_the_source_that_supports_it(answer, verdict, by):
    (statement,) = support.check(answer, SOURCES, VOCAB)["statements"]
    assert statement["verdict"] == verdict and statement["supported_by"] == by


def test_evidence_is_verbatim_and_skips_what_the_answer_copied():
    found = support.check("Laut Quelle [2]:\n1. Per SSH anmelden.\n2. Die Quota mit `sq` setzen.", SOURCES, VOCAB)
    assert found["evidence"] == [{"n": 2, "text": "4. Die Quota setzen. Dafür gibt es `sq`; der Wert ist in KB."}]
    assert support.describe(found)[0] == "Beleg [2]: „4. Die Quota setzen. Dafür gibt es `sq`; der Wert ist in KB.“"
    assert support.check("Dazu habe ich keine Information.", SOURCES, VOCAB) == {"statements": [], "evidence": []}


@pytest.mark.parametrize("text, fixed", [
    ("Das Passwort steht im Tresor der IT [2].", "Das Passwort steht im Tresor der IT [1]."),
    ("Das Passwort steht im Tresor der IT [2, 3] [4].", "Das Passwort steht im Tresor der IT [1]."),
    ("Das Passwort steht im Tresor der IT.", "Das Passwort steht im Tresor der IT [1]."),
    ("Die Mailbox ist wichtig [1]. Das Passwort steht im Tresor der IT. [2]",
     "Die Mailbox ist wichtig [1]. Das Passwort steht im Tresor der IT. [1]"),
    ("Das Passwort steht im Tresor der IT. [QUELLE [2]]", "Das Passwort steht im Tresor der IT. [QUELLE [1]]"),
    ("Das Passwort steht im Tresor der IT [1].", "Das Passwort steht im Tresor der IT [1]."),  # right: unchanged
    ("Mailboxen bestellt man im Webportal [1].", "Mailboxen bestellt man im Webportal [1]."),  # no support: kept
    ("Laut Quelle [2]:\n- Das Passwort steht im Tresor der IT",  # inherited: the line is right for the others
     "Laut Quelle [2]:\n- Das Passwort steht im Tresor der IT"),
    ("1. Per SSH anmelden. Das Passwort steht im Tresor der IT [2].",  # an item's [n] is the item's
     "1. Per SSH anmelden. Das Passwort steht im Tresor der IT [2]."),
])
def test_a_citation_is_corrected_to_the_source_that_supports_the_statement(text, fixed):
    found = support.check(text, SOURCES, VOCAB, correct=True)
    assert found["answer"] == fixed
    changed = [s for s in found["statements"] if "corrected" in s]
    assert bool(changed) == (text != fixed)
    assert all("where" not in s for s in found["statements"])


def test_a_corrected_citation_is_said_under_the_answer():
    found = support.check("Das Passwort steht im Tresor der IT [2].", SOURCES, VOCAB, correct=True)
    assert found["statements"][0]["corrected"] == [2] and found["statements"][0]["best"] == 1
    assert support.describe(found)[-1] == ("Zitat [2] passt nicht zu „Das Passwort steht im Tresor der IT“ – "
                                           "gestützt von [1]; in der Antwort durch [1] ersetzt")
    assert "corrected" not in support.check("Das Passwort steht im Tresor der IT [2].", SOURCES, VOCAB)["statements"][0]


def test_the_source_that_holds_the_number_supports_a_statement_worded_like_another():
    sources = [source("f.md", "Fristen", "| Vertrag | Frist |\n|---|---|\n| Wartung Telefonanlage | 1 Monat zum Monatsende |"),
               source("r.md", "Kündigung", "Der Vertrag kann von beiden Seiten mit einer Frist von 3 Monaten zum Ende "
                                           "der Laufzeit ordentlich gekündigt werden.")]
    vocab = german.learn_vocabulary(s.content for s in sources)
    text = "Die Wartung der Telefonanlage kann von beiden Seiten mit einer Frist von 1 Monat ordentlich gekündigt werden. [2]"
    found = support.check(text, sources, vocab, correct=True)
    assert found["statements"][0]["supported_by"] == [1] and found["answer"].endswith("[1]")


CONTRACT = [source("fristen.md", "Kündigungsfristen", "Die Frist zum Rahmenvertrag steht in dessen § 7."),
            source("rahmenvertrag.md", "Rahmenvertrag mit der Elbe Systemhaus GmbH › § 7 Kündigung",
                   "Der Vertrag kann mit einer Frist von 3 Monaten zum Ende der Laufzeit gekündigt werden.")]


def test_a_unit_is_read_under_its_heading_path():
    vocab = german.learn_vocabulary(f"{s.heading}\n{s.content}" for s in CONTRACT)
    text = "Die Kündigungsfrist beim Rahmenvertrag mit dem Elbe Systemhaus ist 3 Monate. [2]"
    found = support.check(text, CONTRACT, vocab, question="Wie lange ist die Kündigungsfrist beim Rahmenvertrag "
                                                          "mit dem Elbe Systemhaus?")
    assert [(s["verdict"], s["supported_by"]) for s in found["statements"]] == [("gestützt", [2])]
    assert found["evidence"][0]["text"].startswith("Der Vertrag kann mit einer Frist von 3 Monaten")


MAIL = [source("mail.md", "E-Mail-Programm einrichten › Maximale Größe von Anhängen",
               "Eine einzelne E-Mail darf einschließlich aller Anhänge höchstens 25 MB groß sein.")]


def test_a_unit_that_lacks_the_question_s_nouns_does_not_support_a_statement_about_them():
    vocab = german.learn_vocabulary(s.content for s in MAIL)
    text = "Ein Postfach darf einschließlich aller Anhänge höchstens 25 MB groß sein. [1]"
    assert [n.word for n in support.asked("Wie groß darf mein Postfach sein?", text, vocab)] == ["postfach"]
    found = support.check(text, MAIL, vocab, question="Wie groß darf mein Postfach sein?")
    assert found["statements"][0]["verdict"] == "nicht gestützt" and found["evidence"] == []
    # the same sentence about an e-mail, asked about an e-mail, is supported; without a question as before
    asked = support.check(text.replace("Ein Postfach", "Eine E-Mail"), MAIL, vocab,
                          question="Wie groß darf eine E-Mail sein?")
    assert asked["statements"][0]["verdict"] == "gestützt"
    assert support.check(text, MAIL, vocab)["statements"][0]["verdict"] == "gestützt"


ROOMS = [source("raeume.md", "Besprechungsräume › Räume und Ausstattung",
                "| Raum | Etage | Plätze |\n|---|---|---|\n| Alster | 2. OG | 6 Plätze |\n| Elbe | 3. OG | 12 Plätze |"),
         source("schulung.md", "Schulungen", "Schulungen finden im Erdgeschoss der Zentrale statt.")]


@pytest.mark.parametrize("question, text, coverage", [
    ("Wie viele Plätze hat der Besprechungsraum Elbe?", "Der Besprechungsraum Elbe hat 12 Plätze [1].", 1.0),
    # the number stands in the wiki, but said of another room: few of the question's words around it
    ("Wie viele Plätze hat der Schulungsraum im Erdgeschoss der Zentrale?", "Er hat 6 Plätze [1].", 0.25),
    ("Wie hoch ist das jährliche IT-Budget?", "Das IT-Budget beträgt 250.000 € [1].", 0.0),  # in no source
])
def test_grounding_is_the_share_of_the_question_around_the_answer_s_facts(question, text, coverage):
    vocab = german.learn_vocabulary(s.content for s in ROOMS)
    found = grounding.grounding(question, text, ROOMS, vocab)
    assert found["coverage"] == coverage and found["facts"]


def test_grounding_measures_only_facts_the_question_does_not_name():
    vocab = german.learn_vocabulary(s.content for s in ROOMS)
    said = grounding.grounding("Welcher Raum hat 12 Plätze?", "Der Raum Elbe [1].", ROOMS, vocab)
    refused = grounding.grounding("Wie viele Plätze hat Elbe?", "Dazu habe ich keine Information.",
                                  ROOMS, vocab)
    assert said is None and refused is None


def test_measured_thresholds_are_written_to_the_cache_not_into_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_CACHE", str(tmp_path))
    tuned_file = tuned.TOML.read_bytes()
    written = answerable.store("test-model.gguf", {"threshold": 0.42})
    assert written == tmp_path / "answerable.json" and answerable.threshold("test-model.gguf") == 0.42
    assert tuned.TOML.read_bytes() == tuned_file  # the package's table is never written
    for model, number in tuned.ANSWER_MODELS.items():  # the shipped values still count
        assert answerable.threshold(model) == number.value["threshold"]
    other = answerable.store("test-model.gguf", {"threshold": 0.1}, tmp_path / "eval.json")  # a path evaluate.py gives
    assert answerable.threshold("test-model.gguf", other) == 0.1 and answerable.threshold("test-model.gguf") == 0.42


def test_a_printed_section_shows_an_image_as_its_alt_text_and_keeps_links():
    section = ("1. Den Reiter öffnen.\n"
               "[![Dashboard](../assets/images/de/asc-1.png)](../assets/images/de/asc-1.png)\n"
               '2. <img src="media/admin.png" alt="Die Admin-Instanz" width="864" /> konfigurieren, '
               "siehe [Benutzer](/docs/admin/users.md).\n3. ![](x.png) Speichern.\n\n```\necho '![a](b.png)'\n```")
    found = answer.steps_answer(1, section)
    assert "[Bild: Dashboard]" in found and "[Bild: Die Admin-Instanz]" in found and "[Bild] Speichern" in found
    assert "asc-1.png" not in found and "<img" not in found and "[Benutzer](/docs/admin/users.md)" in found
    assert "echo '![a](b.png)'" in found  # code stays as it is
