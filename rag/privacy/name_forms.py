"""Names found by their form rather than a cue word before them: a listed first name, capitals,
lower case, "Surname, First name", @mentions, initials, Vietnamese order, a person's verb or
department, an address after them.

    after_first_names("… mit Frank Jessen abstimmen", tokens(…)) -> [(6, 18)]
    alone("Sandra meldet sich", tokens(…))                       -> [(0, 6)]
    in_capitals("MÜLLER, THOMAS", tokens(…))                     -> [(0, 14)]

Each rule takes the text and its tokens (rag/privacy/name_words.py) and yields (start, end) spans;
rag/privacy/names.py joins them with the cue-word rules and resolves overlaps.

Does not handle: a single unlisted word ("Jolanda schreibt …"), two unlisted name words without a
person's verb (PERSON_VERBS), a department or an address around them, first names that are German
words too (COMMON_LOWER) when they stand alone.
"""
import re

from rag.privacy.addresses import find_streets, towns
from rag.privacy.name_words import (CLAUSE_END, STOP_WORDS, at, initial, is_first_name, is_noun,
                                    looks_like_name, opens_line, phrase, skip_titles)

# first names that are German words too
COMMON_LOWER = {"andre", "andres", "eitel", "gottlob", "reiner", "rosa"}


def after_first_names(text, toks):
    """A listed first name with a surname after it, anywhere: "… mit Frank Jessen abstimmen"."""
    for i, (s, e, raw) in enumerate(toks):
        if raw.endswith(".") or not is_first_name(raw) or not looks_like_name(raw):
            continue
        if i and is_first_name(toks[i - 1][2]) and "\n" not in text[toks[i - 1][1]:s]:
            continue  # the previous first name starts this name
        span = phrase(text, toks, i, strong=False)
        if span and " " in text[span[0]:span[1]].strip():
            yield span


# after a first name alone: "Wiebke hat gesagt"
VERBS = set("""hat hatte ist war wird wurde kann konnte soll sollte muss musste will wollte darf
    meldet meldete sagt sagte schreibt schrieb braucht brauchte kommt kam geht ging übernimmt
    übernahm bekommt bekam bittet bat fragt fragte prüft prüfte kümmert ruft rief hilft half
    arbeitet leitet vertritt erreicht schickt schickte bringt brachte holt holte weiß wusste findet
    fand""".split())


def alone(text, toks):
    """A listed first name on its own: before a verb ("Sandra meldet sich"), or sharing a surname
    ("Rüdiger und Dagmar Weiß": Rüdiger)."""
    for i, (s, e, raw) in enumerate(toks[:-1]):
        if (raw.endswith(".") or not is_first_name(raw) or not looks_like_name(raw)
                or raw.lower() in COMMON_LOWER):
            continue
        nxt = toks[i + 1][2]
        if nxt in VERBS and "\n" not in text[e:toks[i + 1][0]]:
            yield s, e
        elif nxt in ("und", "&") and i + 2 < len(toks) and is_first_name(toks[i + 2][2]):
            span = phrase(text, toks, i + 2, strong=False)
            if span and " " in text[span[0]:span[1]]:
                yield s, e


def in_capitals(text, toks):
    """Names in capitals with a listed first name: "MÜLLER, THOMAS", "THOMAS MÜLLER" (exports,
    forms)."""
    for i in range(len(toks) - 1):
        a, b = toks[i], toks[i + 2] if i + 2 < len(toks) and toks[i + 1][2] == "," else toks[i + 1]
        if not (a[2].isupper() and b[2].isupper() and len(a[2]) > 2 and len(b[2]) > 2
                and a[2].isalpha() and b[2].replace("-", "").isalpha()) or "\n" in text[a[1]:b[0]]:
            continue
        surname, first = ((a, b) if b is not toks[i + 1]
                          else ((b, a) if is_first_name(a[2].title()) else (a, b)))
        if is_first_name(first[2].title()) and not is_first_name(surname[2].title()) and \
                not is_noun(surname[2].title()) and surname[2].lower() not in STOP_WORDS:
            yield a[0], b[1]


def lower_case(text, toks):
    """In a paragraph written all in lower case (a chat, a ticket typed fast): the word after
    "herr"/"frau"."""
    if not re.search(r"\b(?:herrn?|frau)\b", text):
        return
    for paragraph in re.finditer(r"[^\n]+(?:\n[^\n]+)*", text):
        inside = range(at(toks, paragraph.start()), at(toks, paragraph.end()))
        words = [toks[k][2] for k in inside if toks[k][2][:1].isalpha()]
        if len(words) < 8 or sum(w[:1].isupper() for w in words) > len(words) // 20:
            continue
        for i in inside:
            if toks[i][2] in ("herr", "herrn", "frau") and i + 1 < len(toks):
                j = skip_titles(toks, i + 1)
                word = toks[j][2].rstrip(".") if j < len(toks) else ""
                if word.isalpha() and word not in STOP_WORDS and not is_noun(word.title()) and \
                        "\n" not in text[toks[i][1]:toks[j][0]]:
                    yield toks[j][0], toks[j][0] + len(word)


def before_addresses(text, toks):
    """Two or three name words right before a street, after a comma or on the line above:
    "Priya Raghunathan, Barmbeker Stieg 4", "Kateryna Bondarenko\\nHolstenstraße 2"."""
    starts = {m.start for m in find_streets(text)}
    if not starts:
        return
    for i, (s, e, raw) in enumerate(toks):
        if (not raw[:1].isupper() or i and toks[i - 1][2][:1].isupper()
                and "\n" not in text[toks[i - 1][1]:s]):
            continue  # a phrase starts at the first capitalised word only
        if not re.search(r"(?:^|\n|:)[ \t]*$", text[max(0, s - 40):s]) and s:
            # the name opens its line or follows a colon
            # ("Firma S.r.l. – Büro Deutschland\nLange Reihe 81")
            continue
        span = phrase(text, toks, i, strong=True)
        gap = span and re.match(r"(?:,[ \t]*|[ \t]*\n[ \t]*)", text[span[1]:])
        if gap and span[1] + gap.end() in starts and " " in text[span[0]:span[1]] \
                and text[span[0]:span[1]].split()[-1] not in towns():
            yield span  # ("Lager Lüneburg, Am Hafen 3" is a place)


REVERSED = re.compile(r"""(?m)(?:^|(?<=[|;"„“(:<]))[ \t]*
    (?P<name>(?P<surname>[A-ZÄÖÜ][\w'’-]+(?:[ \t][A-ZÄÖÜ][\w'’-]+)?)
    ,[ \t]+(?P<first>[A-ZÄÖÜ][\w-]+(?:[ \t][A-ZÄÖÜ][\w-]+)?))
    (?=[ \t]*(?:$|[|;"“”)>,–]|[ \t]<))""", re.X)


def reversed_names(text, toks):
    """"Surname, First name" with a listed first name, alone in a cell, field or quotes: "Öztürk,
    Mehmet | Lager", Von: "Demir, Yusuf" <…>."""
    for m in REVERSED.finditer(text):
        surname, first = m.group("surname").split(), m.group("first").split()
        if (all(is_first_name(w) for w in first)
                and all(looks_like_name(w) and not is_noun(w) for w in surname)):
            yield m.start("name"), m.end("name")


MENTION = re.compile(r"(?<![\w.@])@(?P<name>[A-ZÄÖÜ][\w-]+)(?![\w.@-])(?P<colon>[ \t]*[:,])?")


def mentions(text, toks):
    """"@Tobias: …" (a chat or ticket mention) with a listed first name or a colon ("@Override" is
    Java)."""
    for m in MENTION.finditer(text):
        name = m.group("name")
        if (looks_like_name(name) and not is_noun(name)
                and (is_first_name(name) or m.group("colon"))):
            yield m.start("name"), m.end("name")


PREPOSITIONS = {"an", "mit", "von", "für", "bei", "zu", "durch", "über", "gegenüber", "laut"}


def after_prepositions(text, toks):
    """A listed first name alone after a preposition: "an Svenja weitergegeben", "an Malgorzata
    (Lager)"."""
    for i in range(1, len(toks)):
        s, e, raw = toks[i]
        if toks[i - 1][2] not in PREPOSITIONS or raw.endswith(".") or not is_first_name(raw) or \
                not looks_like_name(raw) or raw.lower() in COMMON_LOWER:
            continue
        nxt = toks[i + 1][2] if i + 1 < len(toks) else ""
        if not nxt[:1].isupper() or "\n" in text[e:toks[i + 1][0]] or nxt in STOP_WORDS:
            yield s, e


def initials(text, toks):
    """An initial and a surname after a colon, comma or preposition: "Gesehen: M. Koch, 14.05."."""
    for i in range(1, len(toks) - 1):
        if (initial(toks[i][2])
                and (toks[i - 1][2] in (":", ",", "(") or toks[i - 1][2] in PREPOSITIONS)):
            word = toks[i + 1][2].rstrip(".")
            if looks_like_name(word) and not is_noun(word) \
                    and "\n" not in text[toks[i][1]:toks[i + 1][0]] and \
                    CLAUSE_END.match(text, toks[i + 1][0] + len(word)):
                yield toks[i][0], toks[i + 1][0] + len(word)


VN_SURNAMES = {"Nguyen", "Nguyễn", "Tran", "Trần", "Le", "Lê", "Pham", "Phạm", "Hoang",
               "Hoàng", "Huynh", "Huỳnh", "Phan", "Vu", "Vũ", "Vo", "Võ", "Dang", "Đặng",
               "Bui", "Bùi", "Do", "Đỗ", "Ho", "Hồ", "Ngo", "Ngô", "Duong", "Dương", "Ly",
               "Lý", "Truong", "Trương", "Dinh", "Đinh", "Mai", "Trinh", "Trịnh"}
VN_MIDDLE = {"Van", "Văn", "Thi", "Thị", "Duc", "Đức", "Ngoc", "Ngọc", "Quang", "Minh",
             "Thanh", "Huu", "Hữu", "Xuan", "Xuân", "Hong", "Hồng", "Kim", "Anh", "Tuan",
             "Tuấn", "Hoang", "Hoàng"}


def vietnamese(text, toks):
    """Vietnamese names, family name first: "Nguyen Thi Lan", "Dang Van Minh"."""
    for i in range(len(toks) - 2):
        a, b, c = toks[i], toks[i + 1], toks[i + 2]
        if a[2] in VN_SURNAMES and b[2] in VN_MIDDLE and looks_like_name(c[2].rstrip(".")) and \
                not is_noun(c[2].rstrip(".")) and "\n" not in text[a[1]:c[0]]:
            yield a[0], c[0] + len(c[2].rstrip("."))


# (not "hat", "ist", "kann": "Active Directory ist", "Google Chrome kann")
PERSON_VERBS = set("""sitzt saß wünscht wünschte möchte möchten wohnt wohnte fährt fuhr zieht
    zog wechselt wechselte beginnt begann fängt kennt kannte spricht sprach telefoniert
    telefonierte beantragt beantragte vertritt vertrat meldet meldete sagt sagte fragt fragte bittet
    bat ruft rief kümmert übernimmt übernahm arbeitet arbeitete pendelt pendelte geht ging kommt
    kam freut hilft half schreibt schrieb""".split())
FUNCTION_WORDS = set("""alle alles allem allen aller andere anderen anderer anderes beide beiden
    dasselbe derselbe dieselbe dieselben diesem diesen dieser dieses jede jedem jeden jeder jedes
    jene jener jenes manche mancher manches mehrere solche solchen viele vielen weitere weiteren
    weiterer weiteres wenige wenigen einige einigen ohne mit gegen durch um statt trotz während
    wegen außer seit sobald sofern soweit falls wenn weil damit dass ob als denn doch zwar sowohl
    weder entweder also auch außerdem dann danach darauf daher dabei dafür dagegen damit darin
    darum davon dazu hierzu hierfür hiermit somit sonst trotzdem zudem zuerst zuletzt zunächst
    immer nie oft selten manchmal bereits erst jetzt nun noch schon wieder sehr ganz gar etwa fast
    kaum nur mein meine meinem meinen meiner dein deine deinem deinen deiner sein seine seinem
    seinen seiner ihre ihrem ihren ihrer unsere unserem unseren unserer eure eurem euren eurer kein
    keine keinem keinen keiner keines welche welchem welchen welcher welches was wer wie wo wann
    warum weshalb wieso woher wohin womit wofür neue neuen neuer neues erste ersten erster erstes
    letzte letzten letzter letztes nächste nächsten gleiche gleichen eigene eigenen folgende
    folgenden bestimmte bestimmten verschiedene verschiedenen einzelne einzelnen wichtig wichtige
    wichtigen optional hinweis achtung tipp beispiel beispielsweise zum zur vom beim""".split())
NOT_NAME_WORDS = STOP_WORDS | FUNCTION_WORDS  # words that open no unlisted name
DEPARTMENT = re.compile(r"""[ \t]+(?:\((?:Lager|IT|EDV|HR|Einkauf|Vertrieb|Versand|Buchhaltung|
    Personal|Disposition|Zoll|Empfang|Marketing|Logistik|Kundenservice|Verwaltung|
    Geschäftsführung|Finanzen|Controlling|Fuhrpark|Werkstatt|[\w-]*schicht|[\w-]*abteilung|
    Team\ [\w-]+)\b[^)\n]{0,30}\)
    |(?:aus\ der|aus\ dem|vom|von\ der)\ (?:[\w-]*schicht|Buchhaltung|Disposition|Verwaltung|
    Geschäftsführung|Personalabteilung|[\w-]*abteilung|IT|EDV|Zentrale|Filiale|Niederlassung|
    Lager|Einkauf|Vertrieb|Versand|Team\b))""", re.X)


def unlisted(text, toks):
    """Two or three name words whose first name is not listed, where only a person fits: the subject
    of a sentence with a person's verb ("Farid Ahmadi kann …", "Semhar Tesfaye wurde …"), or
    with a department after them ("Thu Trang Vo aus der Frühschicht", "Bao Le (Lager)")."""
    for i, (s, e, raw) in enumerate(toks):
        if not raw[:1].isupper() or raw.isupper():
            continue
        sentence_start = opens_line(text, s) or re.search(r"[.!?:;]\s+$", text[max(0, s - 3):s])
        if i and toks[i - 1][2][:1].isupper() and not sentence_start:
            continue  # a phrase starts at the first capitalised word only
        span = phrase(text, toks, i, strong=True)
        if not span or " " not in text[span[0]:span[1]] or any(
                w.isupper() or w.lower() in NOT_NAME_WORDS for w in text[span[0]:span[1]].split()):
            continue
        k = at(toks, span[1])
        verb = k < len(toks) and toks[k][2] in PERSON_VERBS and sentence_start
        if verb or DEPARTMENT.match(text, span[1]):
            yield span


def vocative(text, toks):
    """A listed first name opening a line and addressed: "Felix, kannst du …", "Jonas: bitte
    …"."""
    for i, (s, e, raw) in enumerate(toks[:-1]):
        if is_first_name(raw) and looks_like_name(raw) and toks[i + 1][2] in (",", ":") and \
                opens_line(text, s) and raw.lower() not in COMMON_LOWER:
            yield s, e
