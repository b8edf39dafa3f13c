"""What a person's name looks like in German text: the word lists, the word tests and the name
phrase.

    tokens("Herr Dr. Weber") -> [(0, 4, "Herr"), (5, 8, "Dr."), (9, 14, "Weber")]
    phrase("Frank Jessen, Service-Manager", tokens(…), 0, strong=False) -> (0, 12)
    is_first_name("Anna-Lena") -> True;  looks_like_name("Team") -> False;  is_noun("Buchhaltung")
    -> True

The shared ground of rag/privacy/names.py (the entry point and the rules led by a cue word) and
rag/privacy/name_forms.py (the rules led by a name's form); neither decides here whether a phrase is
a name.

Does not handle: names of more than MAX_WORDS words, names in lower case or capitals (the rules
that find those look at the words themselves), names split over two lines.
"""
import bisect
import re
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "vornamen.txt"
MAX_WORDS = 3  # name words in one name (first names + surname); particles do not count
SALUTATIONS = {"herr", "herrn", "frau", "hr.", "fr.", "hrn.", "frl.", "familie", "fam."}
TITLES = {"dr.", "prof.", "professor", "professorin", "dipl.-ing.", "dipl.-kfm.", "dipl.-kff.",
          "dipl.-inf.", "dipl.-kauffrau", "dipl.-kaufmann", "dipl.", "ing.", "mag.", "med.", "rer.",
          "nat.", "pol.", "jur.", "phil.", "dr.-ing.", "dr.med.", "h.c.", "b.sc.", "m.sc.", "mba",
          "ll.m.", "kollege", "kollegin", "doktor", "rechtsanwalt", "rechtsanwältin", "ra",
          "notar", "notarin", "pfarrer", "pfarrerin"}
# "Ursula von der Leyen"
PARTICLES = {"von", "van", "de", "der", "den", "du", "zu", "zur", "vom", "ten", "ter", "di", "da",
             "del", "della", "dos", "le", "la", "af", "al", "el", "bin", "ibn"}
# what can open them: "Herr der Lage" is no name
FIRST_PARTICLES = PARTICLES - {"der", "den", "del", "della"}
ROLE_WORDS = re.compile(r"""(?ix)
    (?:ansprech|kontakt)(?:partner|partnerin|person)(?:s|in)? | kontakt | zuständig(?:e[rn]?)?
  | verantwortlich(?:e[rn]?)? | (?:sach)?bearbeiter(?:in)? | mitarbeit(?:er|erin|ende[rn]?)
  | kolleg(?:e|in) | vertret(?:ung|er|erin) | [\w-]*leiter(?:in)? | [\w-]*leitung
  | [\w-]*beauftragte[rn]? | [\w-]*führer(?:in)? | [\w-]*manager(?:in)? | [\w-]*inhaber(?:in)?
  | vorstand | vorsitzende[rn]? | assistent(?:in)? | techniker(?:in)? | administrator(?:in)?
  | berater(?:in)? | referent(?:in)? | koordinator(?:in)? | disponent(?:in)? | fahrer(?:in)?
  | auszubildende[rn]? | azubi | praktikant(?:in)? | werkstudent(?:in)? | absender(?:in)?
  | empfänger(?:in)? | verfasser(?:in)? | autor(?:in)? | vorgesetzte[rn]? | chef(?:in)?
  | teilnehmer(?:in)? | antragsteller(?:in)? | bewerber(?:in)? | [\w-]+meister(?:in)?
  | direktor(?:in)? | präsident(?:in)? | sekretär(?:in)? | minister(?:in)? | betreuer(?:in)?
  | director | nachbar(?:in)? | owner | ceo | cfo | cto | coo | erstellt\ von | geändert\ von
  | vertreten\ durch | i\.\ ?a\. | i\.\ ?v\. | ppa\. | gez\.""")
# a word ending so is a German noun, not a name
NOUN_ENDINGS = ("ung", "heit", "keit", "schaft", "tion", "sion", "ität", "nis", "ment", "ismus",
                "tum", "ie", "ei", "eur", "ieren", "system", "systeme", "technik", "logistik",
                "informatik", "grafik", "statistik", "elektronik", "mechanik", "fabrik", "politik",
                "klinik", "republik", "musik", "physik", "optik", "keramik", "dynamik", "thematik",
                "logik", "kritik", "taktik", "service", "team", "gruppe", "zentrum", "center",
                "dienst", "amt", "werk", "daten", "netz", "portal", "konto", "vertrag", "programm",
                "ware", "gerät", "geräte", "anlage", "liste", "nummer", "adresse", "straße",
                "zeit", "stelle", "büro", "raum", "haus", "institut", "schule", "preis", "heim",
                "hotel", "desk")
STOP_WORDS = set("""
    der die das dem den des ein eine einer einem einen und oder aber auch nur noch schon bitte danke
    bei mit von für über unter nach vor seit ab an am im in zum zur aus auf bis ist sind war hat
    haben wird werden kann soll muss darf sie er es wir ihr ich du uns unser unsere ihre ihr sein
    seine dieser diese dieses jeder jede alle kein keine wie wer was wo wann warum welche welcher
    hier dort dann heute morgen gestern ja nein nicht sehr sehr geehrte geehrter geehrten liebe
    lieber hallo guten tag gruß grüße grüßen dank vielen freundlichen team abteilung vertrieb
    einkauf buchhaltung personal personalabteilung geschäftsführung zentrale hotline service
    support helpdesk kundenservice kundendienst empfang sekretariat verwaltung disposition lager it
    edv firma unternehmen kunde kunden kundin gast gäste alle allen kollegen kolleginnen
    mitarbeitende mitarbeiter mitarbeiterin herr herrn frau frauen damen herren person personen
    leute mensch menschen montag dienstag mittwoch donnerstag freitag samstag sonntag januar februar
    märz april mai juni juli august september oktober november dezember jahr monat woche stunde
    minute uhr anfang ende mitte bescheid zugriff zugang rechte info infos feedback urlaub termin
    auskunft hilfe mail post laptop telefon handy mobil fax durchwahl nummer tel ansprechpartner
    ansprechpartnerin kontakt name vorname nachname leitung chef chefin vertretung urlaubsvertretung
    rufbereitschaft bereitschaft schichtleitung ihnen euch wiki seite kapitel abschnitt anlage
    anhang siehe ticket server drucker netzwerk vpn gmbh ag kg ohg ug se mbh ev gbr kgaa ltd inc co
    stiftung institut schule universität hochschule klinik klinikum krankenhaus preis verlag bank
    sparkasse versicherung verein gemeinde stadt land bund straße str weg allee platz gasse ring
    damm führungskraft fachkraft lehrkraft aushilfe key-user unterlagen bericht antwort nachricht
    rückmeldung vollmacht schlüssel ausweis karte dokumente formular rechnung zeit glückwünsche
    boss versand tailor o'polo oetker wolfskin web app apps cloud client clients desktop online
    office teams windows linux outlook admin mobile spedition autohaus bäckerei gaststätte kanzlei
    praxis apotheke
""".split())
# "Robert Bosch GmbH", "Müller Logistik GmbH"
AFTER_NOT_PERSON = re.compile(r"(?:[ \t]+[A-ZÄÖÜ][\w&.-]*){0,2}?[ \t]*(?:&|\+|GmbH|AG\b|KG\b|"
                              r"OHG\b|SE\b|UG\b|e\.\s?V\.|e\.\s?K(?:fm)?\.|mbH|S\.r\.l\.|S\.p\.A\.|"
                              r"S\.A\.|B\.V\.|N\.V\.|Ltd\b|LLC\b|Inc\b|SARL\b|Sp\.\ z|A/S\b|Oy\b|"
                              r"AB\b|Stiftung|Institut|Straße|Str\.|Weg\b|Allee|Platz|Ring\b|"
                              r"Schule|Gymnasium|Universität|Klinik|Preis|Haus\b|Verlag|Bank\b|"
                              r"Werke?\b)")
BEFORE_NOT_PERSON = re.compile(r"(?i)(?:\bfirma|\bfa\.|\bmarke|\bprodukt|\bmodell|\btyp|"
                               r"\bspedition|\bautohaus|\bbäckerei|\bkanzlei|\bpraxis|"
                               r"\bgaststätte|\bhotel)\s*$")
AFTER_ARTICLE = re.compile(r"(?i)\b(?:der|die|das|dem|den|des|ein|eine|einen|einem|im|am|vom|zum|"
                           r"zur|beim|ins|ans)\s+$")
TOKEN = re.compile(r"[^\W\d_]+(?:[-'’.][^\W\d_]+)*\.?|\d+|\n|[^\w\s]")
CLAUSE_END = re.compile(r"[ \t]*(?:[,;.:()\n–]|$)")  # a name phrase ends here: "M. Koch, 14.05."


@lru_cache(maxsize=1)
def first_names():
    """The shipped first-name list (data/vornamen.txt): {"Anna", "Thomas", …}."""
    lines = DATA.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


# -- words -----------------------------------------------------------------------------------------
@lru_cache(maxsize=65536)
def is_first_name(word):
    """Example: "Anna-Lena" -> True (each part listed), "Müller" -> False"""
    return all(part in first_names() for part in word.split("-"))


def looks_like_name(word):
    """A capitalised word that may be a name: "Müller-Lüdenscheidt", "O'Brien", "José"
    -> True; "IT", "Team" -> False"""
    parts = re.split(r"[-'’]", word)
    if (len(word) < 2 or not all(p.isalpha() for p in parts if p) or word.lower() in STOP_WORDS
            or ROLE_WORDS.fullmatch(word)):
        return False  # ("Ansprechpartnerin: Geschäftsführerin" names a role, not a person)
    return all(p[:1].isupper() and (len(p) == 1 or not p[1:].isupper()) for p in parts if p)


def is_noun(word):
    """A German noun by its ending or a stop word. Example: "Buchhaltung" -> True, "Hollander"
    -> False"""
    low = word.lower()
    if (low.endswith("nis") and low[-4:-3] in "aeiouyn" or low.endswith("ei")
            and low[-3:-2] in "aeiou"):
        # "Karagiannis", "Rezaei": no German -nis or -ei noun has a vowel before it
        return low in STOP_WORDS
    return (low in STOP_WORDS or (not is_first_name(word) and len(low) > 4
                                  and low.endswith(NOUN_ENDINGS)))


def initial(word):
    """Example: "A." -> True (an initial in "A. Weber"), "Am" -> False"""
    return len(word) == 2 and word[0].isupper() and word[1] == "."


# -- name phrases ----------------------------------------------------------------------------------
def tokens(text):
    """[(start, end, text)] of words (with a trailing dot), numbers, line breaks and punctuation."""
    return [(m.start(), m.end(), m.group()) for m in TOKEN.finditer(text)]


def skip_titles(toks, i):
    """Index after salutations, titles and a role after them at toks[i].

    Example: "Herr Dr. med. Müller" -> index of "Müller"; "Frau Bürgermeisterin Weber"
             -> index of "Weber"
    """
    start = i
    while i < len(toks) and (toks[i][2].lower() in SALUTATIONS or toks[i][2].lower() in TITLES
                             or i > start and ROLE_WORDS.fullmatch(toks[i][2])):
        i += 1
    return i


def phrase(text, toks, i, strong):
    """(start, end) of the name starting at toks[i], or None.

    strong: the context says a name follows (salutation, field, table, signature, role word with a
    colon); then a second word is taken even after a first word that is no listed first name.
    Example: ("Frank Jessen, Service-Manager", i=0, strong=False) -> (0, 12)
    """
    start = end = None
    # last_first: a surname may follow; pending: particles
    words, last_first, pending, j = 0, False, False, i
    while j < len(toks) and words < MAX_WORDS:
        s, e, raw = toks[j]
        if j > i and "\n" in text[toks[j - 1][1]:s]:
            break  # a name never spans two lines
        if (raw.lower() in FIRST_PARTICLES and not pending
                and (last_first or start is None and strong)):
            k = j
            while k < len(toks) and toks[k][2].lower() in PARTICLES:
                k += 1
            if (k < len(toks) and looks_like_name(toks[k][2].rstrip("."))
                    and not is_noun(toks[k][2].rstrip("."))):
                start, pending, j = s if start is None else start, True, k  # "Ursula von der Leyen"
                continue
            break
        if initial(raw):
            if start is not None and not last_first:
                break
            start, end, last_first, j = s if start is None else start, e, True, j + 1  # "A. Weber"
            continue
        word = raw.rstrip(".")
        if not looks_like_name(word) or is_noun(word):
            break
        # "Thi Lan Nguyen"
        short = words == 2 and end - s <= 5 and len(text[toks[j - 1][0]:toks[j - 1][1]]) <= 4
        if words and not (last_first or pending or strong and words == 1 or short):
            break
        start, end, words, j = s if start is None else start, s + len(word), words + 1, j + 1
        if pending or raw.endswith("."):
            break  # the surname after its particles; a full stop ends the sentence
        last_first = is_first_name(word)
    if start is None or words == 0:
        return None
    if (AFTER_NOT_PERSON.match(text, end)
            or BEFORE_NOT_PERSON.search(text[max(0, start - 12):start])):
        return None
    return start, end


def opens_line(text, pos):
    """True when only blanks stand between the line's start and pos. Example:
    opens_line("a\\n  Anna", 4) -> True"""
    return not text[text.rfind("\n", 0, pos) + 1:pos].strip()


def at(toks, pos):
    """Index of the first token starting at or after pos (len(toks) if none)."""
    return bisect.bisect_left(toks, pos, key=lambda t: t[0])
