"""rag/search/expand.py: what is cut, what counts as a follow-up, what the model is asked and what comes back.

The model is a function here (`ask(messages, schema, max_tokens)` -> parsed JSON) that records its
calls, so every test can see exactly what would have gone to the server.
"""
import types

import pytest

from rag.privacy import mask as privacy
from rag.search import expand
from rag.search import followups
from rag.search import ranking as search
from rag.search import wiki_words

MAILBOX = [{"role": "user", "content": "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"},
           {"role": "assistant", "content": "Mit cyradm: cm user/vorname.nachname [1]."}]


class Model:
    """A fake model: returns the replies in order (an Exception is raised), records every call."""

    def __init__(self, *replies):
        self.replies, self.calls = list(replies), []

    def __call__(self, messages, schema, max_tokens):
        self.calls.append({"messages": messages, "schema": schema, "max_tokens": max_tokens})
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def sent(self):
        return "\n".join(m["content"] for call in self.calls for m in call["messages"])


LONG = ("Hallo zusammen, seit heute frueh ploppt bei mir im Mailprogramm dauernd so ne gelbe Warnung auf, dass "
        "mein Speicher fast am Ende ist, und eine Kundin hat grad angerufen und meinte, ihre Mail von gestern waere "
        "bei mir nie angekommen. Ich hab echt keine Zeit fuer sowas, wir haben Monatsabschluss. Wie schaffe ich am "
        "schnellsten wieder Platz, ohne dass ich was Wichtiges wegwerfe? Danke euch, Birgit aus der Buchhaltung")


def test_a_long_message_is_cut_to_what_it_asks():
    assert wiki_words.question_part(LONG) == (
        "Wie schaffe ich am schnellsten wieder Platz, ohne dass ich was Wichtiges wegwerfe?")


def test_a_long_message_without_question_mark_loses_only_greeting_and_sign_off():
    text = "Moin, " + " ".join(["das Postfach ist voll"] * 16) + ". Danke, Birgit"
    cut = wiki_words.question_part(text)
    assert not cut.startswith("Moin") and "Danke" not in cut and cut.startswith("das Postfach ist voll")


def test_a_long_message_keeps_a_question_with_an_abbreviation_whole():  # rag/text/sentences.py, not every "."
    text = ("Hallo zusammen, " + " ".join(["mein Postfach ist voll"] * 12) + ". Wie lösche ich z. B. alte Mails "
            "im Ordner Nr. 3?\nDanke, Birgit")
    assert wiki_words.question_part(text) == "Wie lösche ich z. B. alte Mails im Ordner Nr. 3?"


def test_a_short_question_stays_as_it_is():
    question = "Hallo, wie lege ich eine Mailbox an? Danke"
    assert wiki_words.question_part(question) == question


@pytest.mark.parametrize("question", [
    "Und wie lösche ich sie wieder?", "Und nachts?", "Geht das auch unter Linux?", "Wann wird das überprüft?",
    "Brauche ich die auch im Büro?", "Welche Rechte bekommt das Team dann?", "Wie komme ich an eins davon?",
    "Reicht dafür eine E-Mail?", "und wenn ich das aus Versehen gemacht habe?"])
def test_follow_ups_need_the_history(question):
    assert followups.needs_context(question)


@pytest.mark.parametrize("question", [
    "Wie lege ich in Cyrus IMAP eine neue Mailbox an?", "Wie lange dauert das Anlegen einer Mailbox in Cyrus?",
    "Welche Pakete brauche ich für das VPN unter Ubuntu?", "Können Sie mir die Quota der Mailbox erhöhen?",
    "Wer darf Verträge mit IT-Dienstleistern kündigen?",
    # a pronoun after a comma opens a clause, one after a noun of the same question points at that noun
    "Welchen Host muss die Firewall durchlassen, damit i-doit seine Lizenzen über den Token abrufen kann?",
    "Der Admin auf Port 8081 ist nicht erreichbar – wie starte ich ihn über die Konsole wieder?",
    "Ich möchte unseren Mandanten samt Dateien mit einem Befehl sichern – wie mache ich das?"])
def test_standalone_questions_do_not(question):
    assert not followups.needs_context(question)


def test_without_history_and_expansion_the_model_is_not_asked():
    model = Model()
    searched = expand.prepare("Und wie lösche ich sie wieder?", [], expand=False, ask=model)
    assert model.calls == [] and searched.question == "Und wie lösche ich sie wieder?" and not searched.rewritten


def test_a_standalone_question_in_a_conversation_is_not_rewritten():
    model = Model()
    searched = expand.prepare("Welche Pakete brauche ich für das VPN unter Ubuntu?", MAILBOX, ask=model)
    assert model.calls == [] and not searched.rewritten


def test_a_follow_up_is_rewritten_from_the_last_two_turns_only():
    old = [{"role": "user", "content": "Welcher Drucker kann A3?"}, {"role": "assistant", "content": "PR-204 [1]."}]
    model = Model("Wie lösche ich eine Mailbox in Cyrus IMAP wieder?")
    searched = expand.prepare("Und wie lösche ich sie wieder?", old + MAILBOX + MAILBOX[:1], ask=model)
    assert searched.question == "Wie lösche ich eine Mailbox in Cyrus IMAP wieder?" and searched.rewritten
    assert searched.original == "Und wie lösche ich sie wieder?" and "rewrite_s" in searched.timings
    (call,) = model.calls
    assert call["schema"] == followups.REWRITE_SCHEMA and call["messages"][0]["content"] == followups.REWRITE_SYSTEM
    user = call["messages"][-1]["content"]  # after the two worked examples
    assert "Letzte Frage: Und wie lösche ich sie wieder?" in user and "Mailbox" in user and "A3" not in user


def test_expansion_asks_for_phrases_of_the_question_part_and_weighs_them_below():
    model = Model(["Quota erhöhen", "quota erhöhen", "Mailbox voll", LONG, "Speicher"])
    searched = expand.prepare(LONG, expand=True, ask=model)
    assert searched.method == expand.METHOD == "phrases"
    expected = ["Quota erhöhen", "Mailbox voll", "Speicher"][:wiki_words.N_PHRASES]
    assert searched.expansions == expected
    assert searched.weights == [1.0] + [expand.EXPANSION_WEIGHT] * len(searched.expansions)
    assert all(w < 1.0 for w in searched.weights[1:])
    (call,) = model.calls
    assert call["schema"] == wiki_words.PHRASES_SCHEMA
    assert call["schema"]["maxItems"] == wiki_words.N_PHRASES
    assert call["messages"][1]["content"] == wiki_words.question_part(LONG) != LONG


def test_a_rewritten_follow_up_is_expanded_too():
    model = Model("Wie lösche ich eine Mailbox in Cyrus IMAP?", ["Mailbox löschen", "cyradm dm"])
    searched = expand.prepare("Und wie lösche ich sie?", MAILBOX, expand=True, ask=model)
    assert searched.question == "Wie lösche ich eine Mailbox in Cyrus IMAP?"
    assert searched.expansions[1:] == ["Mailbox löschen", "cyradm dm"]
    assert searched.weights == [followups.FOLLOWUP_WEIGHT, followups.HISTORY_WEIGHT] + [expand.EXPANSION_WEIGHT] * 2
    assert model.calls[1]["messages"][1]["content"] == "Wie lösche ich eine Mailbox in Cyrus IMAP?"


def test_a_failing_model_leaves_the_question_and_one_warning():
    model = Model(expand.ModelError("llama-server unter http://127.0.0.1:9 nicht erreichbar – starten mit: …"))
    searched = expand.prepare("Und wie lösche ich sie?", MAILBOX, expand=True, ask=model)
    assert searched.question == "Und wie lösche ich sie?" and not searched.rewritten
    # what needs no model stays: the follow-up searched together with the question before it
    assert searched.expansions == [f"{MAILBOX[0]['content']} Und wie lösche ich sie?"]
    assert searched.weights == [followups.FOLLOWUP_WEIGHT, followups.HISTORY_WEIGHT]
    assert "nicht erreichbar" in searched.warning and "\n" not in searched.warning
    assert len(model.calls) == 1  # after the first failure the model is not asked again


def test_personal_data_never_reaches_the_model_but_stays_in_the_search():
    model = Model("Wem gehört die Nummer [TELEFON 1] im Telefonbuch?", ["Telefonbuch [TELEFON 1]"])
    history = [{"role": "user", "content": "Wer hat die Durchwahl 040 1234567?"}, {"role": "assistant", "content": "-"}]
    searched = expand.prepare("Und wem gehört 030 23125123?", history, expand=True, ask=model)
    assert "23125123" not in model.sent() and "1234567" not in model.sent()
    assert searched.question == "Wem gehört die Nummer 030 23125123 im Telefonbuch?"
    assert searched.expansions == ["Wer hat die Durchwahl 040 1234567? Und wem gehört 030 23125123?",
                                   "Telefonbuch 030 23125123"]  # searched (never sent to the model) as asked
    assert "[TELEFON 1]" in searched.masked(privacy.Masker()).question
    assert "1234567" not in searched.masked(privacy.Masker()).previous


def test_model_output_that_is_no_list_gives_no_phrases():
    assert wiki_words.phrases("Wie lege ich eine Mailbox an?", Model({"x": 1})) == []


def test_recent_keeps_the_last_two_turns_and_cuts_long_messages():
    history = [{"role": "user", "content": f"Frage {n}"} for n in range(6)]
    history.append({"role": "assistant", "content": "x" * 2000})
    lines = followups.recent(history).splitlines()
    assert lines[0] == "Frage: Frage 3" and len(lines) == 4
    assert lines[-1] == "Antwort: " + "x" * followups.HISTORY_CHARS


def test_a_value_the_model_copies_from_the_history_comes_back_too():
    model = Model("Wer hat die Durchwahl [TELEFON 2] vor [TELEFON 1]?")
    history = [{"role": "user", "content": "Wer hat die Durchwahl 040 1234567?"}, {"role": "assistant", "content": "-"}]
    searched = expand.prepare("Und wer hatte sie vor 030 23125123?", history, ask=model)
    assert "1234567" not in model.sent() and searched.question == "Wer hat die Durchwahl 040 1234567 vor 030 23125123?"


def test_off_means_the_model_is_never_asked_and_nothing_is_shown():
    model = Model()
    searched = expand.prepare("Und wie lösche ich sie wieder?", [], expand=None, ask=model)
    assert model.calls == [] and searched.method is None and expand.shown(searched, privacy.Masker()) is None
    assert expand.json_field(None) == {} and expand.texts("Frage?", searched) == expand.texts("Frage?") == ["Frage?"]


def settings(**changes):
    """The fields of rag/core.py Settings that rag/search/expand.py reads."""
    fields = dict(server="http://127.0.0.1:9", api_key=None, llm_model_name=None, expand=None, rewrite=False,
                  pii="mask", pii_kinds=None, pii_keep=())
    return types.SimpleNamespace(**{**fields, **changes})


def test_prepare_for_reads_the_history_only_with_rewrite(monkeypatch):
    model = Model("Wie lösche ich eine Mailbox in Cyrus IMAP wieder?")
    monkeypatch.setattr(expand, "asker", lambda *args: model)
    plain = expand.prepare_for("Und wie lösche ich sie wieder?", MAILBOX, settings())
    assert model.calls == [] and plain.question == plain.original and not plain.rewritten
    searched = expand.prepare_for("Und wie lösche ich sie wieder?", MAILBOX, settings(rewrite=True))
    assert len(model.calls) == 1 and searched.rewritten and searched.method is None


def test_choose_asks_nothing_before_the_search():
    model = Model()
    searched = expand.prepare("Mein Postfach ist voll, was tun?", expand="choose", ask=model)
    assert model.calls == [] and searched.method == "choose" and searched.expansions == []


def source(doc_id, path, heading):
    return search.Source(doc_id, path, 0, heading, "Text", [])


SOURCES = [source(1, "mail/quota.md", "Quota › Quota › Warnungen"), source(2, "mail/quota.md", "Quota › Quota › Warnungen"),
           source(3, "vpn.md", "VPN"), source(4, "mail/quota.md", "Quota › Quota erhöhen"), source(5, "leer.md", "")]


def test_candidates_are_the_first_distinct_headings_as_page_and_section():
    assert [(text, s.doc_id) for text, s in wiki_words.candidates(SOURCES)] == [
        ("Quota › Warnungen", 1), ("VPN", 3), ("Quota › Quota erhöhen", 4), ("leer.md", 5)]
    assert len(wiki_words.candidates(SOURCES, limit=2)) == 2


@pytest.mark.parametrize("reply, chosen", [([3, 1], [4, 1]), ([3, 3, 9, "2"], [4]), ({"x": 1}, [])])
def test_the_choice_keeps_valid_numbers_once_in_order(reply, chosen):
    listed = wiki_words.candidates(SOURCES)
    model = Model(reply)
    assert [s.doc_id for _, s in wiki_words.choose("Postfach voll?", listed, model)] == chosen
    (call,) = model.calls
    assert call["schema"]["items"]["maximum"] == len(listed)
    assert call["schema"]["maxItems"] == wiki_words.N_CHOSEN
    assert call["messages"][1]["content"].endswith("\n1. Quota › Warnungen\n2. VPN\n3. Quota › Quota erhöhen\n4. leer.md")


def test_the_chooser_records_its_choice_and_gives_its_weight():
    searched = expand.prepare("Mein Postfach ist voll", expand="choose")
    pick = expand.chooser(searched, Model([3]))
    assert pick(SOURCES) == ([4], expand.CHOSEN_WEIGHT)
    assert searched.chosen == ["Quota › Quota erhöhen"] and "choose_s" in searched.timings


def test_a_failing_chooser_leaves_the_ranking_and_one_warning():
    searched = expand.prepare("Mein Postfach ist voll", expand="choose")
    model = Model(expand.ModelError("llama-server unter http://127.0.0.1:9 nicht erreichbar"))
    pick = expand.chooser(searched, model)
    assert pick(SOURCES) == ([], 0.0) and "nicht erreichbar" in searched.warning
    assert pick(SOURCES) == ([], 0.0) and len(model.calls) == 1  # not asked again


def test_the_chooser_shows_the_model_no_personal_data():
    searched = expand.prepare("Wer hat 030 23125123?", expand="choose")
    model = Model([1])
    expand.chooser(searched, model)([source(1, "telefon.md", "Telefon › Durchwahl 040 1234567")])
    assert "23125123" not in model.sent() and "1234567" not in model.sent() and "[TELEFON 1]" in model.sent()
    assert searched.chosen == ["Telefon › Durchwahl 040 1234567"]
    assert searched.masked(privacy.Masker()).chosen == ["Telefon › Durchwahl [TELEFON 2]"]  # 1: the question's


def test_asker_turns_a_server_failure_into_a_model_error():
    with pytest.raises(expand.ModelError, match="nicht erreichbar"):
        expand.asker("http://127.0.0.1:9")([{"role": "user", "content": "x"}], {"type": "string"}, 5)


def test_a_follow_up_is_searched_with_the_question_before_it_without_a_model():
    searched = expand.prepare("Und wie lösche ich sie wieder?", MAILBOX)  # no model at all
    assert searched.previous == MAILBOX[0]["content"] and not searched.rewritten
    assert expand.texts(searched.question, searched) == ["Und wie lösche ich sie wieder?",
                                                         f"{MAILBOX[0]['content']} Und wie lösche ich sie wieder?"]
    assert searched.weights[0] < searched.weights[1]
    line = expand.searched_line(searched.question, searched.rewritten, searched.previous)
    assert line == f"Und wie lösche ich sie wieder? (mit der Frage davor: „{MAILBOX[0]['content']}“)"
    assert expand.prepare("Wie lösche ich eine Mailbox in Cyrus IMAP?", MAILBOX).expansions == []  # stands alone


def test_a_rewrite_that_repeats_the_instructions_is_not_taken():
    echo = "Ersetze Wörter wie sie, das, dort und Auslassungen durch das, worauf sie sich beziehen."
    searched = expand.prepare("Und wie lösche ich sie wieder?", MAILBOX, ask=Model(echo))
    assert searched.question == "Und wie lösche ich sie wieder?" and not searched.rewritten
    assert followups.echoes(echo) and not followups.echoes("Wie lösche ich eine Mailbox in Cyrus IMAP wieder?")


def test_feedback_words_come_from_the_first_results_without_the_questions_words():
    first = [search.Source(1, "a.md", 0, "Quota › Warnungen", "Die Quota-Warnung kommt bei 90 Prozent. Quota erhöhen.", []),
             search.Source(2, "b.md", 0, "VPN", "Das VPN verbindet mit dem Firmennetz.", [])]
    df = {"quota": 2, "warnung": 1, "warnungen": 1}.get
    found = wiki_words.feedback_words("Mein Postfach ist voll, Warnung?", first,
                                      lambda w: df(w, 5), 10, docs=1, n=3)
    assert found[0] == "quota" and "warnung" not in found and "postfach" not in found
    assert all(w not in found for w in ("verbindet", "firmennetz"))  # the second result is not read (docs=1)
    # deterministic, ties by the word
    assert wiki_words.feedback_words("x", first, lambda w: 1, 10, docs=2, n=3) == \
        wiki_words.feedback_words("x", first, lambda w: 1, 10, docs=2, n=3)


def test_a_chain_of_follow_ups_keeps_the_question_that_stands_alone():
    chain = MAILBOX + [{"role": "user", "content": "Und wie lösche ich sie wieder?"}, {"role": "assistant", "content": "-"}]
    searched = expand.prepare("Und wenn ich das aus Versehen gemacht habe?", chain)
    assert searched.previous == f"{MAILBOX[0]['content']} Und wie lösche ich sie wieder?"
    standalone = [{"role": "user", "content": "Wie lösche ich eine Mailbox in Cyrus IMAP?"}] + chain[1:]
    assert followups.previous_question(standalone[:1]) == "Wie lösche ich eine Mailbox in Cyrus IMAP?"


def test_the_audit_names_the_question_before_the_expansions_and_the_feedback():
    from rag.doors import audit_show
    searched = expand.prepare("Und wie lösche ich sie wieder?", MAILBOX)
    searched.feedback = ["quota"]
    assert audit_show.searched_lines(searched.as_json()) == [
        f"Davor:     {MAILBOX[0]['content']}", f"Erweitert: {MAILBOX[0]['content']} Und wie lösche ich sie wieder?",
        "Rückkopplung: quota"]
