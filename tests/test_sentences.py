"""rag/text/sentences.py: the one splitter, checked on each German abbreviation and on the cases of the
five splitters it replaces (context, guard, expand, masking, chunking)."""
import pytest

from rag.text import sentences

ABBREVIATED = [  # (text, the sentences)
    ("Das geht z. B. mit Cyrus. Fertig.", ["Das geht z. B. mit Cyrus.", "Fertig."]),
    ("Das geht z.B. mit Cyrus. Fertig.", ["Das geht z.B. mit Cyrus.", "Fertig."]),
    ("Siehe Ticket Nr. 4711 im Tracker. Fertig.", ["Siehe Ticket Nr. 4711 im Tracker.", "Fertig."]),
    ("Nach § 5 Abs. 2 BDSG gilt das. Fertig.", ["Nach § 5 Abs. 2 BDSG gilt das.", "Fertig."]),
    ("Lager bzw. Versand melden sich. Fertig.", ["Lager bzw. Versand melden sich.", "Fertig."]),
    ("Das dauert ca. 10 Minuten. Fertig.", ["Das dauert ca. 10 Minuten.", "Fertig."]),
    ("Frag Dr. Weber im Labor. Fertig.", ["Frag Dr. Weber im Labor.", "Fertig."]),
    ("Anna Muster, Steuer-ID 12345678901, geb. 14.03.1979. Fertig.",
     ["Anna Muster, Steuer-ID 12345678901, geb. 14.03.1979.", "Fertig."]),
    ("Das gilt, d. h. Vorsicht. Fertig.", ["Das gilt, d. h. Vorsicht.", "Fertig."]),
    ("Es kamen u. a. Gäste. Fertig.", ["Es kamen u. a. Gäste.", "Fertig."]),
    ("Drucker, Scanner usw. Alles da.", ["Drucker, Scanner usw. Alles da."]),
    ("Dazu vgl. Abschnitt 3 im Handbuch. Fertig.", ["Dazu vgl. Abschnitt 3 im Handbuch.", "Fertig."]),
    ("Steht auf S. 4 oben. Fertig.", ["Steht auf S. 4 oben.", "Fertig."]),
    ("Wir sitzen in der Hauptstr. 5 in Bremen. Fertig.", ["Wir sitzen in der Hauptstr. 5 in Bremen.", "Fertig."]),
    ("Preis inkl. Versand 20 Euro. Fertig.", ["Preis inkl. Versand 20 Euro.", "Fertig."]),
    ("Das ist evtl. Sache der IT. Fertig.", ["Das ist evtl. Sache der IT.", "Fertig."]),
    ("Bitte ggf. Rücksprache halten. Fertig.", ["Bitte ggf. Rücksprache halten.", "Fertig."]),
    ("Anrufen unter Tel. 0421 555 3090. Fertig.", ["Anrufen unter Tel. 0421 555 3090.", "Fertig."]),
    ("Am 3. Oktober ist zu. Fertig.", ["Am 3. Oktober ist zu.", "Fertig."]),
    ("Geboren am 14.03.1979 in Kiel. Fertig.", ["Geboren am 14.03.1979 in Kiel.", "Fertig."]),
]


@pytest.mark.parametrize("text, expected", ABBREVIATED, ids=[t[:24] for t, _ in ABBREVIATED])
def test_abbreviations_and_ordinals_end_no_sentence(text, expected):
    assert sentences.split(text) == expected


OLD_CASES = [  # what each replaced splitter was tested on
    ("Z. B. mit cm. Am 2. Mai geht es los. Fertig!", ["Z. B. mit cm.", "Am 2. Mai geht es los.", "Fertig!"]),  # context
    ("Hallo. Wie geht das? Danke", ["Hallo.", "Wie geht das?", "Danke"]),  # expand
    ("Quota: 2 GB. Ignoriere das.", ["Quota: 2 GB.", "Ignoriere das."]),  # guard
    ("Dann 2. Schritt. Fertig!", ["Dann 2. Schritt.", "Fertig!"]),  # ordinal
    ("Er sagte „So geht das.“ Dann ging er.", ["Er sagte „So geht das.“", "Dann ging er."]),  # closing quote
    ("Was ist B? Dann geht es.", ["Was ist B?", "Dann geht es."]),  # "?" always ends one
    ("Version 2.5 geht. Dann 1.0 nicht.", ["Version 2.5 geht.", "Dann 1.0 nicht."]),  # no space, no cut
    ("Es ist spät. dann eben morgen.", ["Es ist spät. dann eben morgen."]),  # lower case goes on
    ("Stand 01.02.24. Danach neu.", ["Stand 01.02.24.", "Danach neu."]),  # a date's year ends one
    ("2. `cm` starten [1]. Dann prüfen.", ["2. `cm` starten [1].", "Dann prüfen."]),  # a citation is no ordinal
    ("Zeile eins\nZeile zwei. Drei", ["Zeile eins\nZeile zwei.", "Drei"]),  # a line break alone is no end
    ("", []),
]


@pytest.mark.parametrize("text, expected", OLD_CASES, ids=[t[:24] or "empty" for t, _ in OLD_CASES])
def test_cases_of_the_old_splitters(text, expected):
    assert sentences.split(text) == expected


def test_spans_take_the_quote_marker_along():  # guard: "> " continues a quote
    text = "> Quota: 2 GB.\n> Ignoriere das."
    assert [text[s:e] for s, e in sentences.spans(text)] == ["> Quota: 2 GB.", "Ignoriere das."]


def test_spans_within_a_range_keep_offsets_of_the_whole_text():
    text = "Vorweg. Eins. Zwei."
    assert sentences.spans(text, 8) == [(8, 13), (14, 19)]


def test_cuts_with_clause_marks_give_sentence_starts():  # masking: where the last sentence before a match starts
    text = "Hotline 0421 555; Frau Weber: 030 123"
    assert [b for _, b in sentences.cuts(text, 0, text.index("030"), marks=".!?;")] == [text.index("Frau")]
    assert sentences.cuts(text, 0, len(text), marks=".!?;:") == [(17, 18), (29, 30)]


def test_chunker_cuts_in_a_window():  # build_index.split_long(): the last sentence end that fits
    window = "Satz eins. Satz z. B. zwei. Satz drei"
    assert [a for a, _ in sentences.cuts(window)] == [10, 27]
