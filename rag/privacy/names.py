"""Person names in German text, found by their context: rules, no model (rag/privacy/mask.py masks them).

    find("Bitte an Herrn Dr. Thomas Müller wenden.")  -> [Match("NAME", 22, 35, "Thomas Müller")]
    find("Ansprechpartnerin: Frau Weber")               -> [Match("NAME", 24, 29, "Weber")]
    find("Mit freundlichen Grüßen\\nKatrin Focke")       -> [Match("NAME", 24, 36, "Katrin Focke")]
    find("Die Hauptstraße ist gesperrt.")              -> []

The value is the name as written, without salutation, title or role word. Contexts:
  salutation  Herr/Herrn/Frau/Hr./Fr. and titles (Dr., Prof., Dipl.-Ing. …), also after "Hallo", "Liebe"
  first name  a first name from data/vornamen.txt (Faker, MIT) followed by a surname: "Frank Jessen";
              alone before a verb ("Sandra meldet sich") or sharing a surname ("Paul und Lisa Brandt")
  role word   Ansprechpartner(in), zuständig, Mitarbeiter(in), Kontakt, Vertretung, IT-Leiter, …beauftragte,
              also with a department before the colon ("Ansprechpartnerin Einkauf: …")
  signature   "Mit freundlichen Grüßen", "Viele Grüße", "i. A.", "gez." and the name after it
  field       "Name:", "Vorname:", "Von:", "Cc:", "Teilnehmer:" (a list too), "Name, Vorname: Mustermann, Max"
  table       cells of a column titled Name, Ansprechpartner(in), Mitarbeiter(in), Kontakt, Vertretung …
              ("Kruse, Jana" as one)
  capitals    "MÜLLER, THOMAS", "THOMAS MÜLLER" with a listed first name; in a paragraph written all in
              lower case, the word after "herr"/"frau"
  repeat      a surname or first name found by one of the above, again elsewhere in the text
A name is one to three capitalised words (hyphens, apostrophes and accents allowed, particles
such as "von der" before the surname); a second word is taken only after a listed first name or
in a strong context (salutation, field, table, signature, role word with a colon). Words that are
German nouns by their ending (-ung, -heit, -schaft …) or by STOP_WORDS never count as a name, nor
do names followed by a legal form or an institution ("Robert Bosch GmbH", "Max-Planck-Institut").

Does not handle: names without any of these contexts and without a listed first name ("Jolanda
schreibt …"), other names in lower case or capitals, surnames that are nouns after a dative ("Herrn
Müller Zugang geben" is cut right only for the nouns in STOP_WORDS), genitives ("Müllers
Laptop" is missed), nicknames, names split over two lines, names inside e-mail addresses (that
is E-MAIL), and two persons with the same surname (a bare "Weber" then takes the first one's
placeholder).
"""
import bisect
import re
from collections import namedtuple
from functools import lru_cache
from pathlib import Path

Match = namedtuple("Match", "kind start end value")  # the same shape as rag/privacy/mask.py's

DATA = Path(__file__).resolve().parent / "data" / "vornamen.txt"
MAX_WORDS = 3  # name words in one name (first names + surname); particles do not count
SALUTATIONS = {"herr", "herrn", "frau", "hr.", "fr.", "hrn.", "frl.", "familie", "fam."}
TITLES = {"dr.", "prof.", "professor", "professorin", "dipl.-ing.", "dipl.-kfm.", "dipl.-kff.", "dipl.-inf.",
          "dipl.-kauffrau", "dipl.-kaufmann", "dipl.", "ing.", "mag.", "med.", "rer.", "nat.", "pol.", "jur.",
          "phil.", "dr.-ing.", "dr.med.", "h.c.", "b.sc.", "m.sc.", "mba", "ll.m.", "kollege", "kollegin",
          "doktor", "rechtsanwalt", "rechtsanwältin", "ra", "notar", "notarin", "pfarrer", "pfarrerin"}
OPENERS = {"hallo", "hi", "hey", "liebe", "lieber", "moin", "servus", "sehr geehrte", "sehr geehrter"}
PARTICLES = {"von", "van", "de", "der", "den", "du", "zu", "zur", "vom", "ten", "ter", "di", "da", "del", "della",
             "dos", "le", "la", "af", "al", "el", "bin", "ibn"}  # "Ursula von der Leyen"
FIRST_PARTICLES = PARTICLES - {"der", "den", "del", "della"}  # what can open them: "Herr der Lage" is no name
ROLE_WORDS = re.compile(r"""(?ix)
    (?:ansprech|kontakt)(?:partner|partnerin|person)(?:s|in)? | kontakt | zuständig(?:e[rn]?)? | verantwortlich(?:e[rn]?)?
  | (?:sach)?bearbeiter(?:in)? | mitarbeit(?:er|erin|ende[rn]?) | kolleg(?:e|in) | vertret(?:ung|er|erin)
  | [\w-]*leiter(?:in)? | [\w-]*leitung | [\w-]*beauftragte[rn]? | [\w-]*führer(?:in)? | [\w-]*manager(?:in)?
  | [\w-]*inhaber(?:in)? | vorstand | vorsitzende[rn]? | assistent(?:in)? | techniker(?:in)? | administrator(?:in)?
  | berater(?:in)? | referent(?:in)? | koordinator(?:in)? | disponent(?:in)? | fahrer(?:in)? | auszubildende[rn]?
  | azubi | praktikant(?:in)? | werkstudent(?:in)? | absender(?:in)? | empfänger(?:in)? | verfasser(?:in)?
  | autor(?:in)? | vorgesetzte[rn]? | chef(?:in)? | teilnehmer(?:in)? | antragsteller(?:in)? | bewerber(?:in)?
  | [\w-]+meister(?:in)? | direktor(?:in)? | präsident(?:in)? | sekretär(?:in)? | minister(?:in)? | betreuer(?:in)?
  | director | nachbar(?:in)? | owner | ceo | cfo | cto | coo
  | erstellt\ von | geändert\ von | vertreten\ durch | i\.\ ?a\. | i\.\ ?v\. | ppa\. | gez\.""")
GREETINGS = re.compile(r"""(?ix)(?<![\w-])(?:
    (?:mit\ )?(?:freundlichen|besten|herzlichen|lieben|schönen|sonnigen|kollegialen|vielen)\ grüßen
  | (?:freundliche|beste|herzliche|liebe|schöne|viele|sonnige)\ grüße | viele\ grüsse | mit\ freundlichen\ gr(?:ü|ue)ssen
  | mfg | lg | vg | gruß | grüße | best\ regards | kind\ regards | regards | cheers)(?![\w-])""")
FIELD_LABELS = re.compile(r"""(?x)(?<![\w-])(?:(?:Vor|Nach|Familien|Geburts|Anzeige|Kontakt|Mitarbeiter)?[Nn]ame
    (?:\ (?:des|der|von)\ [\wäöüÄÖÜß]+)? (?P<reverse>\s*,\s*Vorname)? | Mitarbeiter(?:in|innen|ende)? | Teilnehm(?:er|erin|ende)
    | Antragsteller(?:in)? | Teilnehmerliste(?:\ [^:\n]{1,30})? | Anwesend | Verteiler | Von | An | Cc | CC | Bcc | Gemeldet\ von | Zugewiesen\ an
    | Erstellt\ von | Geändert\ von | Bearbeitet\ von | Protokoll | Unterschrift)\s*:[ \t]*""")  # also e-mail headers
NAME_COLUMNS = re.compile(r"(?i)^(?:name|vorname|nachname|vor- und nachname|name, vorname|ansprechpartner(?:in)?|"
                          r"ansprechperson|kontakt(?:person)?|mitarbeiter(?:in)?|mitarbeitende|person|verantwortlich|"
                          r"verantwortliche[r]?|zuständig|zuständige[r]?|vertretung|bearbeiter(?:in)?|"
                          r"sachbearbeiter(?:in)?|teilnehmer(?:in)?|teilnehmende|empfänger(?:in)?|inhaber(?:in)?|"
                          r"displayname|anzeigename|cn|full ?name|rufname|familienname)$")
SINGLE_WORD_COLUMNS = re.compile(r"(?i)^(?:vor|nach|familien|ruf|geburts|given ?|sur|last ?|first ?)name|sn$")  # a cell of one word is a name
NOUN_ENDINGS = ("ung", "heit", "keit", "schaft", "tion", "sion", "ität", "nis", "ment", "ismus", "tum", "ie",
                "ei", "eur", "ieren", "system", "systeme", "technik", "logistik", "informatik", "grafik", "statistik",
                "elektronik", "mechanik", "fabrik", "politik", "klinik", "republik", "musik", "physik", "optik",
                "keramik", "dynamik", "thematik", "logik", "kritik", "taktik", "service", "team", "gruppe",
                "zentrum", "center", "dienst", "amt", "werk", "daten", "netz", "portal", "konto", "vertrag",
                "programm", "ware", "gerät", "geräte", "anlage", "liste", "nummer", "adresse", "straße", "zeit",
                "stelle", "büro", "raum", "haus", "institut", "schule", "preis", "heim", "hotel", "desk")  # a word ending so is a German noun, not a name
STOP_WORDS = set("""
    der die das dem den des ein eine einer einem einen und oder aber auch nur noch schon bitte danke bei mit von
    für über unter nach vor seit ab an am im in zum zur aus auf bis ist sind war hat haben wird werden kann soll
    muss darf sie er es wir ihr ich du uns unser unsere ihre ihr sein seine dieser diese dieses jeder jede alle
    kein keine wie wer was wo wann warum welche welcher hier dort dann heute morgen gestern ja nein nicht sehr
    sehr geehrte geehrter geehrten liebe lieber hallo guten tag gruß grüße grüßen dank vielen freundlichen
    team abteilung vertrieb einkauf buchhaltung personal personalabteilung geschäftsführung zentrale hotline
    service support helpdesk kundenservice kundendienst empfang sekretariat verwaltung disposition lager
    it edv firma unternehmen kunde kunden kundin gast gäste alle allen kollegen kolleginnen mitarbeitende
    mitarbeiter mitarbeiterin herr herrn frau frauen damen herren person personen leute mensch menschen
    montag dienstag mittwoch donnerstag freitag samstag sonntag januar februar märz april mai juni juli
    august september oktober november dezember jahr monat woche stunde minute uhr anfang ende mitte
    bescheid zugriff zugang rechte info infos feedback urlaub termin auskunft hilfe mail post laptop
    telefon handy mobil fax durchwahl nummer tel ansprechpartner ansprechpartnerin kontakt name vorname
    nachname leitung chef chefin vertretung urlaubsvertretung rufbereitschaft bereitschaft schichtleitung
    ihnen euch wiki seite kapitel abschnitt anlage anhang siehe ticket server drucker netzwerk vpn
    gmbh ag kg ohg ug se mbh ev gbr kgaa ltd inc co stiftung institut schule universität hochschule klinik
    klinikum krankenhaus preis verlag bank sparkasse versicherung verein gemeinde stadt land bund
    straße str weg allee platz gasse ring damm führungskraft fachkraft lehrkraft aushilfe key-user
    unterlagen bericht antwort nachricht rückmeldung vollmacht schlüssel ausweis karte dokumente formular
    rechnung zeit glückwünsche boss versand tailor o'polo oetker wolfskin
    web app apps cloud client clients desktop online office teams windows linux outlook admin mobile
    spedition autohaus bäckerei gaststätte kanzlei praxis apotheke
""".split())
AFTER_NOT_PERSON = re.compile(r"(?:[ \t]+[A-ZÄÖÜ][\w&.-]*){0,2}?[ \t]*(?:&|\+|GmbH|AG\b|KG\b|OHG\b|SE\b|UG\b|e\.\s?V\.|e\.\s?K(?:fm)?\.|mbH|"
                              r"S\.r\.l\.|S\.p\.A\.|S\.A\.|B\.V\.|N\.V\.|Ltd\b|LLC\b|Inc\b|SARL\b|Sp\.\ z|A/S\b|Oy\b|AB\b|"
                              r"Stiftung|Institut|Straße|Str\.|Weg\b|Allee|Platz|Ring\b|Schule|Gymnasium|Universität|"
                              r"Klinik|Preis|Haus\b|Verlag|Bank\b|Werke?\b)")  # "Robert Bosch GmbH", "Müller Logistik GmbH"
BEFORE_NOT_PERSON = re.compile(r"(?i)(?:\bfirma|\bfa\.|\bmarke|\bprodukt|\bmodell|\btyp|\bspedition|\bautohaus|"
                               r"\bbäckerei|\bkanzlei|\bpraxis|\bgaststätte|\bhotel)\s*$")
AFTER_ARTICLE = re.compile(r"(?i)\b(?:der|die|das|dem|den|des|ein|eine|einen|einem|im|am|vom|zum|zur|beim|ins|ans)\s+$")
TOKEN = re.compile(r"[^\W\d_]+(?:[-'’.][^\W\d_]+)*\.?|\d+|\n|[^\w\s]")


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
    """A capitalised word that may be a name: "Müller-Lüdenscheidt", "O'Brien", "José" -> True; "IT", "Team" -> False"""
    parts = re.split(r"[-'’]", word)
    if len(word) < 2 or not all(p.isalpha() for p in parts if p) or word.lower() in STOP_WORDS or ROLE_WORDS.fullmatch(word):
        return False  # ("Ansprechpartnerin: Geschäftsführerin" names a role, not a person)
    return all(p[:1].isupper() and (len(p) == 1 or not p[1:].isupper()) for p in parts if p)


def is_noun(word):
    """A German noun by its ending or a stop word. Example: "Buchhaltung" -> True, "Hollander" -> False"""
    low = word.lower()
    if low.endswith("nis") and low[-4:-3] in "aeiouyn" or low.endswith("ei") and low[-3:-2] in "aeiou":
        return low in STOP_WORDS  # "Karagiannis", "Rezaei": no German -nis or -ei noun has a vowel before it
    return low in STOP_WORDS or (not is_first_name(word) and len(low) > 4 and low.endswith(NOUN_ENDINGS))


def initial(word):
    """Example: "A." -> True (an initial in "A. Weber"), "Am" -> False"""
    return len(word) == 2 and word[0].isupper() and word[1] == "."


# -- name phrases ----------------------------------------------------------------------------------
def tokens(text):
    """[(start, end, text)] of words (with a trailing dot), numbers, line breaks and punctuation."""
    return [(m.start(), m.end(), m.group()) for m in TOKEN.finditer(text)]


def skip_titles(toks, i):
    """Index after salutations, titles and a role after them at toks[i].

    Example: "Herr Dr. med. Müller" -> index of "Müller"; "Frau Bürgermeisterin Weber" -> index of "Weber"
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
    words, last_first, pending, j = 0, False, False, i  # last_first: a surname may follow; pending: particles
    while j < len(toks) and words < MAX_WORDS:
        s, e, raw = toks[j]
        if j > i and "\n" in text[toks[j - 1][1]:s]:
            break  # a name never spans two lines
        if raw.lower() in FIRST_PARTICLES and not pending and (last_first or start is None and strong):
            k = j
            while k < len(toks) and toks[k][2].lower() in PARTICLES:
                k += 1
            if k < len(toks) and looks_like_name(toks[k][2].rstrip(".")) and not is_noun(toks[k][2].rstrip(".")):
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
        short = words == 2 and end - s <= 5 and len(text[toks[j - 1][0]:toks[j - 1][1]]) <= 4  # "Thi Lan Nguyen"
        if words and not (last_first or pending or strong and words == 1 or short):
            break
        start, end, words, j = s if start is None else start, s + len(word), words + 1, j + 1
        if pending or raw.endswith("."):
            break  # the surname after its particles; a full stop ends the sentence
        last_first = is_first_name(word)
    if start is None or words == 0:
        return None
    if AFTER_NOT_PERSON.match(text, end) or BEFORE_NOT_PERSON.search(text[max(0, start - 12):start]):
        return None
    return start, end


# -- the contexts ----------------------------------------------------------------------------------
def after_salutations(text, toks):
    """Names after Herr/Frau/Dr./Prof. and after openers ("Hallo Anna")."""
    for i, (s, e, raw) in enumerate(toks):
        low = raw.lower()
        if low in SALUTATIONS or low in ("dr.", "prof.", "dipl.-ing.", "mag."):
            if i and toks[i - 1][2].lower() in SALUTATIONS | TITLES:
                continue  # inside a run of titles: the first one already looked
            j = skip_titles(toks, i)
            if j < len(toks) and ("\n" not in text[e:toks[j][0]] or alone_on_line(text, s, toks[j - 1][1], toks[j][0])):
                span = phrase(text, toks, j, strong=True)
                if span:
                    yield span
        elif low in OPENERS or (low == "geehrte" or low == "geehrter"):
            j = skip_titles(toks, i + 1)
            if j < len(toks) and j == i + 1 and is_first_name(toks[j][2].rstrip(".")):
                span = phrase(text, toks, j, strong=True)
                if span:
                    yield span


def opens_line(text, pos):
    """True when only blanks stand between the line's start and pos. Example: opens_line("a\\n  Anna", 4) -> True"""
    return not text[text.rfind("\n", 0, pos) + 1:pos].strip()


def alone_on_line(text, start, end, following):
    """True when text[start:end] fills its line and `following` starts the next one ("Frau\\nAnna Weber")."""
    return opens_line(text, start) and text[end:following].strip(" \t") == "\n"


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


ROLE_PHRASES = re.compile(r"(?i)(?<![\w-])(?:erstellt von|geändert von|vertreten durch|i\.\s?a\.|i\.\s?v\.|c/o|geb\.|geborene?"
                          r"|(?:gemeldet|angelegt|beantragt|bestellt|freigegeben|genehmigt|unterschrieben|abgeholt|"
                          r"geprüft|übergeben|protokolliert|notiert|protokoll|notiz|gesprächsnotiz|rückruf)"
                          r"\s+(?:von|durch|mit|an))(?![\w-])")
ROLE_QUALIFIED = re.compile(r"[ \t]+(?:(?:für|im|in\ der|bei|vor)[ \t]+)?[\w-]+[ \t]*(?P<colon>:)[ \t]*")  # "… Vertrieb:"
ROLE_REST = re.compile(r"[ \t]*(?P<colon>[:–-])?[ \t]*,?[ \t]*(?:(?:ist|sind|war|wird|bleibt|bleiben)[ \t]+)?")
CLAUSE_END = re.compile(r"[ \t]*(?:[,;.:()\n–]|$)")
SIGNED = ("i.a.", "i.v.", "ppa.", "gez.", "c/o", "geb.", "geboren", "geborene")  # the name after these may be one word


def after_roles(text, toks):
    """Names after role words: "Ansprechpartnerin: Jolanda Krüger", "IT-Leiter Jens Hollander"."""
    roles = [(e, raw) for s, e, raw in toks if raw[:1].isalpha() and ROLE_WORDS.fullmatch(raw)]
    roles += [(m.end(), m.group()) for m in ROLE_PHRASES.finditer(text)]
    for role_end, role in roles:
        rest = ROLE_QUALIFIED.match(text, role_end) or ROLE_REST.match(text, role_end)  # "Ansprechpartnerin ist …"
        i = at(toks, rest.end())
        j = skip_titles(toks, i)
        if j >= len(toks) or "\n" in text[role_end:toks[j][0]]:
            continue
        strong = bool(rest.group("colon")) or j > i or role.lower().replace(" ", "") in SIGNED
        span = phrase(text, toks, j, strong=strong)
        if not strong and not (span and " " in text[span[0]:span[1]]):
            wide = phrase(text, toks, j, strong=True)  # two name words ending the phrase: "Bewerberin Ioana Popescu,"
            span = wide if wide and " " in text[wide[0]:wide[1]] and CLAUSE_END.match(text, wide[1]) else None
        if span:
            yield span


def at(toks, pos):
    """Index of the first token starting at or after pos (len(toks) if none)."""
    return bisect.bisect_left(toks, pos, key=lambda t: t[0])


def after_greetings(text, toks):
    """The name under or after a closing: "Mit freundlichen Grüßen\\nKatrin Focke", "Viele Grüße, Anna".

    A short closing ("LG", "Gruß") needs a comma or a line break before the name ("LG Monitor" is a screen).
    """
    for m in GREETINGS.finditer(text):
        rest = re.match(r"[ \t]*(?P<sep>[,!.]?)[ \t]*(?:aus[ \t]+\w+[ \t]*)?(?P<nl>\n?)[ \t]*\n?[ \t]*"
                        r"(?:(?:i\.[ \t]?A\.|i\.[ \t]?V\.|ppa\.|gez\.|Ihr|Ihre|Dein|Deine|Euer|Eure)[ \t]+)?", text[m.end():])
        line_start = opens_line(text, m.start())
        if " " not in m.group() and not (rest.group("sep") == "," or rest.group("nl") or line_start):
            continue
        i = at(toks, m.end() + rest.end())
        j = skip_titles(toks, i)
        span = phrase(text, toks, j, strong=True) if j < len(toks) else None
        own_line = span and re.match(r"[ \t]*(?:\n|$)", text[span[1]:]) and ("\n" in text[m.end():span[0]] or line_start)
        if " " not in m.group() and not (rest.group("sep") == "," or rest.group("nl") or own_line and (
                not m.group().isupper() or span and is_first_name(text[span[0]:span[1]]))):
            continue  # "LG Monitor UltraFine", "LG Monitor" on its line: a screen; "Gruß Piotrek", "LG Anna": names
        if span and (" " in text[span[0]:span[1]] or is_first_name(text[span[0]:span[1]]) or own_line):
            if not re.match(r"[ \t]*(?:GmbH|AG\b|KG\b|Team\b)", text[span[1]:]):
                yield span


def in_fields(text, toks):
    """Values of "Name:", "Vorname:", "Von:", "Teilnehmer:" fields, a list ("Anna Weber, Jolanda Krüger und
    Tobias Lange") included; "Name, Vorname: Mustermann, Max" is one name."""
    for m in FIELD_LABELS.finditer(text):
        start = m.end()
        while True:
            i = at(toks, start)
            j = skip_titles(toks, i)
            if j >= len(toks) or "\n" in text[start:toks[j][0]]:
                break
            span = phrase(text, toks, j, strong=True)
            if not span or re.match(r"[ \t]*:", text[span[1]:]):
                break  # ("…; Protokoll: Wanda": the next field's label)
            comma = re.match(r",[ \t]*", text[span[1]:])  # "Mustermann, Max"
            if comma and " " not in text[span[0]:span[1]]:
                k = at(toks, span[1] + comma.end())
                second = phrase(text, toks, k, strong=True) if k < len(toks) else None
                if second and " " not in text[second[0]:second[1]] and (
                        m.group("reverse") or is_first_name(text[second[0]:second[1]])
                        or re.match(r"[ \t]*;", text[second[1]:]) or start == m.end() and re.match(
                            r"[ \t]*$", text[second[1]:], re.M)):  # "Mbeki, Thandiwe; Wagner, Till"
                    span = (span[0], second[1])
            yield span
            more = re.match(r"[ \t]*(?:\([^)\n]*\)[ \t]*)?(?:,|;|\bund\b|&)[ \t]*", text[span[1]:])  # the next name
            if not more:
                break
            start = span[1] + more.end()


def column_cells(text, is_title):
    """(title, (start, end, cell)) for every cell below a header cell that is_title accepts, in Markdown,
    "a | b" and CSV tables (the |---| line skipped). Example: column_cells("| Name |\\n|---|\\n| Jana Kruse |",
    NAME_COLUMNS.match) -> [("Name", (13, 25, " Jana Kruse "))]"""
    titles, offset = None, 0
    for line in text.split("\n"):
        cells = table_cells(line, offset)
        offset += len(line) + 1
        if len(cells) < 2:
            titles = None
            continue
        texts = [cell.strip() for _, _, cell in cells]
        if all(re.fullmatch(r":?-{2,}:?", t) for t in texts if t):
            continue  # the |---|---| line
        if titles is None:
            titles = {n: t.rstrip(":").strip() for n, t in enumerate(texts) if is_title(t.rstrip(":").strip())}
            continue
        for n in sorted(titles):
            if n < len(cells):
                yield titles[n], cells[n]


def in_tables(text, toks):
    """Cells of table columns titled Name, Ansprechpartner(in), Kontakt, … (Markdown, "a | b" or CSV rows)."""
    for title, (start, end, cell) in column_cells(text, NAME_COLUMNS.match):
        cell_toks = [(s + start, e + start, t) for s, e, t in tokens(cell)]
        j = skip_titles(cell_toks, 0)
        span = phrase(text, cell_toks, j, strong=True) if j < len(cell_toks) else None
        comma = span and re.match(r",[ \t]*", text[span[1]:end])  # "Kruse, Jana" as an export writes it
        if comma:
            k = at(cell_toks, span[1] + comma.end())
            second = phrase(text, cell_toks, k, strong=True) if k < len(cell_toks) else None
            if second and " " not in text[second[0]:second[1]] and not text[second[1]:end].strip():
                span = (span[0], second[1])
        if span and re.fullmatch(r"(?:[\s,;(–-].*)?", text[span[1]:end], re.S) and (
                j > 0 or " " in text[span[0]:span[1]] or is_first_name(text[span[0]:span[1]]) or
                SINGLE_WORD_COLUMNS.match(title)):
            yield span  # one word alone only with a salutation, as a listed first name or in a column
            # titled Nachname or Vorname ("Clients" in a column "Name" is a VLAN)


def table_cells(line, offset):
    """[(start, end, text)] of the cells of a table line ("| a | b |", "a | b", CSV "a;b", "a,b,c" or "a<TAB>b"),
    offsets in the whole text."""
    sep = next((c for c in "|;\t" if c in line), None)
    if sep is None and line.count(",") >= 2 and ", " not in line:
        sep = ","  # a CSV export: "Ahmadzai,Farid,21073 Hamburg" (prose puts a space after its commas)
    if sep is None:
        return []
    cells, pos = [], 0
    parts = line.split(sep)
    for n, part in enumerate(parts):
        if not ((n == 0 or n == len(parts) - 1) and not part.strip()):
            cells.append((offset + pos, offset + pos + len(part), part))
        pos += len(part) + 1
    return cells


VERBS = set("""hat hatte ist war wird wurde kann konnte soll sollte muss musste will wollte darf meldet meldete
    sagt sagte schreibt schrieb braucht brauchte kommt kam geht ging übernimmt übernahm bekommt bekam bittet bat
    fragt fragte prüft prüfte kümmert ruft rief hilft half arbeitet leitet vertritt erreicht schickt schickte
    bringt brachte holt holte weiß wusste findet fand""".split())  # after a first name alone: "Wiebke hat gesagt"


def alone(text, toks):
    """A listed first name on its own: before a verb ("Sandra meldet sich"), or sharing a surname
    ("Rüdiger und Dagmar Weiß": Rüdiger)."""
    for i, (s, e, raw) in enumerate(toks[:-1]):
        if raw.endswith(".") or not is_first_name(raw) or not looks_like_name(raw) or raw.lower() in COMMON_LOWER:
            continue
        nxt = toks[i + 1][2]
        if nxt in VERBS and "\n" not in text[e:toks[i + 1][0]]:
            yield s, e
        elif nxt in ("und", "&") and i + 2 < len(toks) and is_first_name(toks[i + 2][2]):
            span = phrase(text, toks, i + 2, strong=False)
            if span and " " in text[span[0]:span[1]]:
                yield s, e


def in_capitals(text, toks):
    """Names in capitals with a listed first name: "MÜLLER, THOMAS", "THOMAS MÜLLER" (exports, forms)."""
    for i in range(len(toks) - 1):
        a, b = toks[i], toks[i + 2] if i + 2 < len(toks) and toks[i + 1][2] == "," else toks[i + 1]
        if not (a[2].isupper() and b[2].isupper() and len(a[2]) > 2 and len(b[2]) > 2 and a[2].isalpha()
                and b[2].replace("-", "").isalpha()) or "\n" in text[a[1]:b[0]]:
            continue
        surname, first = (a, b) if b is not toks[i + 1] else ((b, a) if is_first_name(a[2].title()) else (a, b))
        if is_first_name(first[2].title()) and not is_first_name(surname[2].title()) and \
                not is_noun(surname[2].title()) and surname[2].lower() not in STOP_WORDS:
            yield a[0], b[1]


def lower_case(text, toks):
    """In a paragraph written all in lower case (a chat, a ticket typed fast): the word after "herr"/"frau"."""
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
    from rag.privacy.addresses import find_streets, towns  # (imported late: rag/privacy/addresses.py imports rag/privacy/mask.py)
    starts = {m.start for m in find_streets(text)}
    if not starts:
        return
    for i, (s, e, raw) in enumerate(toks):
        if not raw[:1].isupper() or i and toks[i - 1][2][:1].isupper() and "\n" not in text[toks[i - 1][1]:s]:
            continue  # a phrase starts at the first capitalised word only
        if not re.search(r"(?:^|\n|:)[ \t]*$", text[max(0, s - 40):s]) and s:
            continue  # the name opens its line or follows a colon ("Firma S.r.l. – Büro Deutschland\nLange Reihe 81")
        span = phrase(text, toks, i, strong=True)
        gap = span and re.match(r"(?:,[ \t]*|[ \t]*\n[ \t]*)", text[span[1]:])
        if gap and span[1] + gap.end() in starts and " " in text[span[0]:span[1]] \
                and text[span[0]:span[1]].split()[-1] not in towns():
            yield span  # ("Lager Lüneburg, Am Hafen 3" is a place)


REVERSED = re.compile(r"""(?m)(?:^|(?<=[|;"„“(:<]))[ \t]*(?P<name>(?P<surname>[A-ZÄÖÜ][\w'’-]+(?:[ \t][A-ZÄÖÜ][\w'’-]+)?)
    ,[ \t]+(?P<first>[A-ZÄÖÜ][\w-]+(?:[ \t][A-ZÄÖÜ][\w-]+)?))(?=[ \t]*(?:$|[|;"“”)>,–]|[ \t]<))""", re.X)


def reversed_names(text, toks):
    """"Surname, First name" with a listed first name, alone in a cell, field or quotes: "Öztürk, Mehmet | Lager",
    Von: "Demir, Yusuf" <…>."""
    for m in REVERSED.finditer(text):
        surname, first = m.group("surname").split(), m.group("first").split()
        if all(is_first_name(w) for w in first) and all(looks_like_name(w) and not is_noun(w) for w in surname):
            yield m.start("name"), m.end("name")


MENTION = re.compile(r"(?<![\w.@])@(?P<name>[A-ZÄÖÜ][\w-]+)(?![\w.@-])(?P<colon>[ \t]*[:,])?")


def mentions(text, toks):
    """"@Tobias: …" (a chat or ticket mention) with a listed first name or a colon ("@Override" is Java)."""
    for m in MENTION.finditer(text):
        name = m.group("name")
        if looks_like_name(name) and not is_noun(name) and (is_first_name(name) or m.group("colon")):
            yield m.start("name"), m.end("name")


PREPOSITIONS = {"an", "mit", "von", "für", "bei", "zu", "durch", "über", "gegenüber", "laut"}


def after_prepositions(text, toks):
    """A listed first name alone after a preposition: "an Svenja weitergegeben", "an Malgorzata (Lager)"."""
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
        if initial(toks[i][2]) and (toks[i - 1][2] in (":", ",", "(") or toks[i - 1][2] in PREPOSITIONS):
            word = toks[i + 1][2].rstrip(".")
            if looks_like_name(word) and not is_noun(word) and "\n" not in text[toks[i][1]:toks[i + 1][0]] and \
                    CLAUSE_END.match(text, toks[i + 1][0] + len(word)):
                yield toks[i][0], toks[i + 1][0] + len(word)


VN_SURNAMES = {"Nguyen", "Nguyễn", "Tran", "Trần", "Le", "Lê", "Pham", "Phạm", "Hoang", "Hoàng", "Huynh", "Huỳnh",
               "Phan", "Vu", "Vũ", "Vo", "Võ", "Dang", "Đặng", "Bui", "Bùi", "Do", "Đỗ", "Ho", "Hồ", "Ngo", "Ngô",
               "Duong", "Dương", "Ly", "Lý", "Truong", "Trương", "Dinh", "Đinh", "Mai", "Trinh", "Trịnh"}
VN_MIDDLE = {"Van", "Văn", "Thi", "Thị", "Duc", "Đức", "Ngoc", "Ngọc", "Quang", "Minh", "Thanh", "Huu", "Hữu", "Xuan",
             "Xuân", "Hong", "Hồng", "Kim", "Anh", "Tuan", "Tuấn", "Hoang", "Hoàng"}


def vietnamese(text, toks):
    """Vietnamese names, family name first: "Nguyen Thi Lan", "Dang Van Minh"."""
    for i in range(len(toks) - 2):
        a, b, c = toks[i], toks[i + 1], toks[i + 2]
        if a[2] in VN_SURNAMES and b[2] in VN_MIDDLE and looks_like_name(c[2].rstrip(".")) and \
                not is_noun(c[2].rstrip(".")) and "\n" not in text[a[1]:c[0]]:
            yield a[0], c[0] + len(c[2].rstrip("."))


PERSON_VERBS = set("""sitzt saß wünscht wünschte möchte möchten wohnt wohnte fährt fuhr zieht zog wechselt wechselte
    beginnt begann fängt kennt kannte spricht sprach telefoniert telefonierte beantragt beantragte vertritt vertrat
    meldet meldete sagt sagte fragt fragte bittet bat ruft rief kümmert übernimmt übernahm arbeitet arbeitete
    pendelt pendelte geht ging kommt kam freut hilft half schreibt schrieb""".split())  # (not "hat", "ist", "kann":
# "Active Directory ist", "Google Chrome kann")
FUNCTION_WORDS = set("""alle alles allem allen aller andere anderen anderer anderes beide beiden dasselbe derselbe
    dieselbe dieselben diesem diesen dieser dieses jede jedem jeden jeder jedes jene jener jenes manche mancher
    manches mehrere solche solchen viele vielen weitere weiteren weiterer weiteres wenige wenigen einige einigen
    ohne mit gegen durch um statt trotz während wegen außer seit sobald sofern soweit falls wenn weil damit dass
    ob als denn doch zwar sowohl weder entweder also auch außerdem dann danach darauf daher dabei dafür dagegen
    damit darin darum davon dazu hierzu hierfür hiermit somit sonst trotzdem zudem zuerst zuletzt zunächst
    immer nie oft selten manchmal bereits erst jetzt nun noch schon wieder sehr ganz gar etwa fast kaum nur
    mein meine meinem meinen meiner dein deine deinem deinen deiner sein seine seinem seinen seiner ihre ihrem
    ihren ihrer unsere unserem unseren unserer eure eurem euren eurer kein keine keinem keinen keiner keines
    welche welchem welchen welcher welches was wer wie wo wann warum weshalb wieso woher wohin womit wofür
    neue neuen neuer neues erste ersten erster erstes letzte letzten letzter letztes nächste nächsten gleiche
    gleichen eigene eigenen folgende folgenden bestimmte bestimmten verschiedene verschiedenen einzelne einzelnen
    wichtig wichtige wichtigen optional hinweis achtung tipp beispiel beispielsweise zum zur vom beim""".split())
NOT_NAME_WORDS = STOP_WORDS | FUNCTION_WORDS  # words that open no unlisted name
DEPARTMENT = re.compile(r"""[ \t]+(?:\((?:Lager|IT|EDV|HR|Einkauf|Vertrieb|Versand|Buchhaltung|Personal|Disposition|Zoll|
    Empfang|Marketing|Logistik|Kundenservice|Verwaltung|Geschäftsführung|Finanzen|Controlling|Fuhrpark|Werkstatt|
    [\w-]*schicht|[\w-]*abteilung|Team\ [\w-]+)\b[^)\n]{0,30}\)|(?:aus\ der|aus\ dem|vom|von\ der)\ (?:[\w-]*schicht|
    Buchhaltung|Disposition|Verwaltung|Geschäftsführung|Personalabteilung|[\w-]*abteilung|IT|EDV|Zentrale|Filiale|
    Niederlassung|Lager|Einkauf|Vertrieb|Versand|Team\b))""", re.X)


def unlisted(text, toks):
    """Two or three name words whose first name is not listed, where only a person fits: the subject of a
    sentence with a person's verb ("Farid Ahmadi kann …", "Semhar Tesfaye wurde …"), or with a department
    after them ("Thu Trang Vo aus der Frühschicht", "Bao Le (Lager)")."""
    for i, (s, e, raw) in enumerate(toks):
        if not raw[:1].isupper() or raw.isupper():
            continue
        sentence_start = opens_line(text, s) or re.search(r"[.!?:;]\s+$", text[max(0, s - 3):s])
        if i and toks[i - 1][2][:1].isupper() and not sentence_start:
            continue  # a phrase starts at the first capitalised word only
        span = phrase(text, toks, i, strong=True)
        if not span or " " not in text[span[0]:span[1]] or any(w.isupper() or w.lower() in NOT_NAME_WORDS
                                                               for w in text[span[0]:span[1]].split()):
            continue
        k = at(toks, span[1])
        verb = k < len(toks) and toks[k][2] in PERSON_VERBS and sentence_start
        if verb or DEPARTMENT.match(text, span[1]):
            yield span


def vocative(text, toks):
    """A listed first name opening a line and addressed: "Felix, kannst du …", "Jonas: bitte …"."""
    for i, (s, e, raw) in enumerate(toks[:-1]):
        if is_first_name(raw) and looks_like_name(raw) and toks[i + 1][2] in (",", ":") and \
                opens_line(text, s) and raw.lower() not in COMMON_LOWER:
            yield s, e


COMMON_LOWER = {"andre", "andres", "eitel", "gottlob", "reiner", "rosa"}  # first names that are German words too
CONTEXTS = (after_salutations, after_first_names, after_roles, after_greetings, in_fields, in_tables, alone,
            in_capitals, lower_case, before_addresses, reversed_names, mentions, after_prepositions, initials,
            vietnamese, unlisted, vocative)


def with_surname(text, start, end, kept):
    """The end of a name found again, taking a surname right after it: "Deepak" again as "Deepak Venkataraman"
    (not into a firm: "Malhotra Freight Forwarding Ltd", nor into another name already kept)."""
    surname = re.match(r"[ \t]+([A-ZÄÖÜ][\w'’-]+)", text[end:])
    if not surname or not looks_like_name(surname.group(1)) or is_noun(surname.group(1)):
        return end
    longer = end + surname.end()
    if AFTER_NOT_PERSON.match(text, longer) or not all(longer <= ks or start >= ke for ks, ke in kept):
        return end
    return longer


def find(text):
    """All person names in `text`: [Match("NAME", start, end, value)], sorted, never overlapping.

    Longer spans win over shorter ones inside them; then every surname or listed first name found
    is looked for again as a whole word ("Frau Weber … Weber bestätigte"), except after an article
    or preposition ("im Keller" is no Frau Keller).
    """
    toks = tokens(text)
    spans = {span for context in CONTEXTS for span in context(text, toks)}
    kept = []
    for s, e in sorted(spans, key=lambda se: (-(se[1] - se[0]), se[0])):
        if all(e <= ks or s >= ke for ks, ke in kept):
            kept.append((s, e))
    words = {w for s, e in kept for w in re.split(r"[\s,]+", text[s:e])
             if len(w) > 2 and not initial(w) and w.lower() not in PARTICLES}
    for w in sorted(words):
        for m in re.finditer(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", text):
            before = text[max(0, m.start() - 12):m.start()]
            if all(m.end() <= ks or m.start() >= ke for ks, ke in kept) and not AFTER_ARTICLE.search(before) \
                    and not BEFORE_NOT_PERSON.search(before) and not AFTER_NOT_PERSON.match(text, m.end()):
                kept.append((m.start(), with_surname(text, m.start(), m.end(), kept)))
                # (not "Spedition Claußen e.K." after "Dieter Claußen")
    return [Match("NAME", s, e, text[s:e]) for s, e in sorted(kept)]
