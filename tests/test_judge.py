"""rag/answer/judge.py (the model judges a how-to answer's finalists, rag/answer/choose.py),
rag/text/pointers.py (a sentence that only says where the answer stands) and what they change in the
context, the support check and the pipeline."""
from types import SimpleNamespace

import pytest

from rag.answer import choose, context, judge
from rag.check import support
from rag.text import pointers


def source(path, heading, content, cosine=0.9):
    return SimpleNamespace(path=path, heading=heading, content=content, cosine=cosine, flags=[])


@pytest.mark.parametrize("sentence", [
    "Die Kündigungsfrist des Rahmenvertrags mit der Elbe Systemhaus GmbH steht in dessen § 7 und ist hier nicht "
    "noch einmal aufgeführt.",
    "Bitte lesen Sie unsere [DNS-Konfiguration](dns.md) Anleitung.",
    "Die Einstellungen stehen in den [Systemeinstellungen](a.md).",
    "Details siehe unten."])
def test_a_sentence_that_only_says_where_is_a_pointer(sentence):
    assert pointers.is_pointer(sentence)


@pytest.mark.parametrize("sentence", [
    "Die Kündigungsfrist beträgt drei Monate zum Quartalsende (§ 7).",
    "Der Vertrag verlängert sich, wenn er nicht nach § 7 gekündigt wird.",
    "Die Quota steht in der Datei imapd.conf.",
    "1. Per SSH auf dem Mailserver anmelden (siehe Handbuch [7])."])  # an aside: the step still says what
def test_a_sentence_that_says_what_is_no_pointer(sentence):
    assert not pointers.is_pointer(sentence)


def test_the_context_does_not_show_a_pointer_for_its_words():
    from rag.text import german
    question = "Wie lange ist die Kündigungsfrist beim Rahmenvertrag mit dem Elbe Systemhaus?"
    text = ("Diese Übersicht hilft, Verträge rechtzeitig zu prüfen. Die Kündigungsfrist des Rahmenvertrags mit der "
            "Elbe Systemhaus GmbH steht in dessen § 7 und ist hier nicht noch einmal aufgeführt. Für den Rahmenvertrag "
            "mit dem Druckerdienst gilt eine Kündigungsfrist von drei Monaten.")
    terms = german.query_terms(question, frozenset())
    weights = [1.0] * len(terms)
    shown = context.shorten(source("a.md", "A", text), terms, weights, frozenset(), 400)
    assert "drei Monaten" in shown and "nicht noch einmal aufgeführt" not in shown


def test_a_statement_that_only_points_is_never_supported():
    sources = [source("a.md", "Übersicht", "Die Kündigungsfrist des Rahmenvertrags steht in dessen § 7 und ist hier "
                                          "nicht noch einmal aufgeführt.")]
    found = support.check("Die Kündigungsfrist des Rahmenvertrags steht in dessen § 7 und ist hier nicht noch einmal "
                          "aufgeführt. [1]", sources)
    (statement,) = found["statements"]
    assert statement["verdict"] == "nur Verweis" and statement["supported_by"] == [] and found["evidence"] == []
    assert any(line.startswith("Nur ein Verweis") for line in support.describe(found))


def rows_for(sources):
    return choose.table(sources, [], [], frozenset())


def test_finalists_are_one_per_section_best_score_first_and_a_pointer_last():
    sources = [source("vpn.md", "VPN", "Siehe [Anleitung](vpn-client.md).", 0.95),
               source("vpn.md", "VPN › Client", "1. Client laden.\n2. Anmelden.\n" + "Text " * 40, 0.94),
               source("vpn.md", "VPN › Client", "3. Verbinden.", 0.93),
               source("dns.md", "DNS", "Der DNS-Server ist 10.0.0.1. " * 10, 0.80)]
    assert choose.finalists(sources, rows_for(sources), 3) == [1, 3, 0]
    assert choose.choose(sources).order == [1]  # FINALISTS: the first only


def test_the_excerpt_is_cut_at_a_line_end():
    assert judge.excerpt("1. A\n2. B\n3. C", 9) == "1. A\n2. B"
    assert judge.excerpt("kurz") == "kurz"
    assert len(judge.excerpt("wort " * 200)) <= judge.EXCERPT


def test_the_section_prefix_is_the_answer_s_system_message_and_one_source():
    from rag.answer import prompt
    prefix = judge.section_prefix("Wie verbinde ich das VPN?", source("vpn.md", "VPN › Client", "1. Laden.\n2. Los."))
    assert prefix.startswith(prompt.SYSTEM) and "<<<QUELLE [1]: vpn.md › VPN › Client>>>" in prefix
    assert "[2]" not in prefix and prefix.endswith("Frage: Wie verbinde ich das VPN?")


@pytest.mark.parametrize("ps, chosen, refused, asked", [
    ([0.9, 0.9], 1, False, 1),      # the first finalist is accepted: one call
    ([0.2, 0.8], 2, False, 2),      # the second one is (0-based position)
    ([0.2, 0.1], None, True, 2),    # none: the refusal
    ([None, 0.1], 1, False, 1)])    # a server without logprobs: the chooser's first stands
def test_pick_judges_the_finalists_in_order(ps, chosen, refused, asked):
    sources = [source("a.md", "A", "Siehe [B](b.md)."), source("a.md", "A › B", "1. Eins.\n2. Zwei."),
               source("a.md", "A › C", "Kein Schritt."), source("c.md", "C", "1. Drei.\n2. Vier.")]
    answers, seen = list(ps), []

    def ask_p(s):
        seen.append(s.heading)
        return answers.pop(0)
    verdict = judge.pick(sources, choose.finalists(sources, rows_for(sources), 2), ask_p, 0.5)
    assert verdict.chosen == chosen and verdict.refused == refused and len(seen) == asked == len(verdict.judged)
    assert seen[0] == "A › B"


def test_without_a_threshold_nothing_is_asked():
    sources = [source("a.md", "A › B", "1. Eins.\n2. Zwei.")]
    verdict = judge.pick(sources, [0], lambda s: pytest.fail("asked"), None)
    assert verdict == judge.Verdict(0, [], False)


@pytest.mark.parametrize("verdict, close", [
    (judge.Verdict(0, [{"n": 1, "p_yes": 0.59}], False), True),   # accepted, but only just
    (judge.Verdict(1, [{"n": 1, "p_yes": 0.2}, {"n": 2, "p_yes": 0.93}], False), False),
    (judge.Verdict(None, [{"n": 1, "p_yes": 0.1}], True), False),  # refused: nothing printed
    (judge.Verdict(0, [{"n": 1, "p_yes": None}], False), False)])  # no logprobs: no P(ja)
def test_a_section_accepted_under_the_sure_mark_is_close(verdict, close):
    assert judge.as_answerable(verdict, 0.55, sure=0.7)["close"] is close
    assert judge.as_answerable(verdict, 0.55)["close"] is False  # no sure mark for this model
