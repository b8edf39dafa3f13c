"""rag/check/echo.py: a fact answer that only repeats the question, and the wiki line printed
instead."""
import pytest

from rag.check import echo
from rag.search.ranking import Source
from rag.text import german


def source(heading, content):
    return Source(1, "arbeitsplatz/homeoffice.md", 0, heading, content, [])


SOURCES = [
    source("Homeoffice › Das Homeoffice-Paket",
           "Zum Paket gehören:\n\n- ein Laptop mit Tasche,\n- ein 27-Zoll-Monitor (Dell P2723DE) mit USB-C,\n"
           "- Tastatur und Maus.\n"),
    source("Mail › Servereinstellungen", "| Einstellung | Wert |\n|---|---|\n| IMAP-Port und Verschlüsselung | 993, SSL/TLS |\n"),
]
VOCAB = frozenset(german.index_text(" ".join(f"{s.heading} {s.content}" for s in SOURCES), frozenset()).split())


@pytest.mark.parametrize("question, answer, nothing", [
    ("Welcher Monitor gehört zum Homeoffice-Paket?", "Der Monitor gehört zum Homeoffice-Paket [1].", True),
    ("Welchen IMAP-Port trage ich in Thunderbird ein?", "Die Nummer der Quelle ist [1].", True),
    ("Welcher Schlüssel öffnet Tor 8?", "Der Schlüssel für Tor 8 öffnet Tor 8. [1]", True),  # its number is asked
    ("Welcher Monitor gehört zum Homeoffice-Paket?", "Zum Paket gehört ein Dell P2723DE [1].", False),
    ("Nach wie vielen falschen Passworteingaben wird das Konto gesperrt?",  # one digit is content too
     "Nach 5 falschen Passworteingaben wird das Konto gesperrt. [1]", False),
    ("Wie viele Zeichen darf ein Eintrag lang sein?", "110 Zeichen[1]", False),
    ("Gibt es WLAN im Lager?", "Ja, es gibt WLAN im Lager [1].", False),  # a yes/no question's answer
    ("Muss ich das Passwort ändern?", "Sie müssen das Passwort nicht ändern [1].", False),
    ("Welcher Monitor gehört zum Homeoffice-Paket?", "Dazu habe ich keine Information.", False),
])
def test_an_answer_says_nothing_when_every_word_stands_in_the_question(question, answer, nothing):
    assert echo.says_nothing(question, answer) is nothing


def test_the_line_that_holds_the_question_s_nouns_replaces_it():
    record, text, by = echo.replace("Welcher Monitor gehört zum Homeoffice-Paket?",
                                    "Der Monitor gehört zum Homeoffice-Paket [1].", SOURCES, VOCAB)
    assert by == "line" and text == "Laut Quelle [1]:\n- ein 27-Zoll-Monitor (Dell P2723DE) mit USB-C,"
    assert record["echo"] is True and record["refused"] is False and record["line"] == 1
    assert record["answer"] == "Der Monitor gehört zum Homeoffice-Paket [1]." and record["why"] == echo.WHY


def test_a_table_row_is_printed_without_its_outer_pipes():
    _, text, by = echo.replace("Welchen IMAP-Port trage ich in Thunderbird ein?", "Die Nummer der Quelle ist [1].",
                               SOURCES, VOCAB)
    assert by == "line" and text == "Laut Quelle [2]:\nIMAP-Port und Verschlüsselung | 993, SSL/TLS"


def test_without_a_unit_about_the_question_the_answer_is_refused():
    record, text, by = echo.replace("Wie heißt der Hausmeister im Keller?", "Der Hausmeister im Keller heißt [1].",
                                    SOURCES, VOCAB)
    assert text == "Dazu habe ich keine Information." and by == "model"
    assert record["refused"] is True and record["line"] is None
