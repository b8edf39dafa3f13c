"""Postal addresses and company identifiers in German text (rag/privacy/mask.py masks them).

    find("Lieferung an Hauptstraße 12a, 20095 Hamburg")
    -> [Match("ADRESSE", 13, 28, "Hauptstraße 12a"), Match("PLZ-ORT", 30, 43, "20095 Hamburg")]
    find("Amtsgericht Hamburg HRB 12345, USt-IdNr. DE136695976")
    -> [Match("HANDELSREGISTER", 20, 29, "HRB 12345"), Match("UST-ID", 41, 52, "DE136695976")]
    find("Die Hauptstraße ist gesperrt.") -> []

  ADRESSE          street + house number ("12", "12a", "12 a", "12-14", "7/1"; no year): one word
                   ending in a street suffix (-straße, -str., -weg, -allee, -platz, -gasse, -ring,
                   -damm, -chaussee, -ufer, -steig, -stieg, -pfad, -graben, -kai, -promenade,
                   -twiete, -deich, -kamp, -markt, -wall, -gang; not NOT_STREETS such as
                   "Arbeitsplatz", "Vorgang"), hyphenated ("Karl-Marx-Straße 5"), two words
                   ("Potsdamer Straße 7", "Neuer Wall 5"), a preposition ("Am Markt 3", "An der
                   Alster 4", "Unter den Linden 77": then only before a comma, a line end or a full
                   stop, and not a weekday or the like), or any word + number right before a
                   postcode ("Stephanikirchweide 8, 28217 Bremen"); in lower case only together with
                   a postcode ("bäckerbreitergang 14, 20355 hamburg")
  PLZ-ORT          five digits (01001–99998) + town, when the town is in data/orte.txt, an address
                   or a legal form stands right before it, a word such as "PLZ", "Anschrift",
                   "Sitz", or when postcode and town stand alone between commas or lines ("…,
                   37434 Gieboldehausen"); four digits (Austria, Switzerland) only after "A-"/"CH-"
                   or an address
  HANDELSREGISTER  HRA/HRB + number ("HRB 12345", "HRB-Nr. 12345"); the court is not part of the
                   value
  UST-ID           DE + 9 digits with the ISO 7064 MOD 11,10 check digit (the same as the
                   Steuer-ID's)
  STEUERNUMMER     10–13 digits in the formats of the Länder (21/815/08150, 93815/08152, 013 815
                   08153, 2181508150) up to CONTEXT_CHARS after "Steuernummer", "St.-Nr." or "StNr."
  BIC              8 or 11 characters (bank, ISO country, place, branch) up to CONTEXT_CHARS after
                   "BIC"/"SWIFT"

Does not handle: addresses without a house number ("die Hauptstraße ist gesperrt" is a topic),
street names without a suffix and without a postcode after them, "Straße des 17. Juni", post
office boxes, foreign formats (UK, US), towns missing from the list without other evidence
("20095 Entenhausen" alone), Austrian and Swiss VAT numbers, tax numbers without a context word
(they have no check digit), BICs without "BIC"/"SWIFT" before them.
"""
import re
from functools import lru_cache
from pathlib import Path

from rag.privacy.checks import CONTEXT_CHARS, Match, compact, vat_ok
from rag.privacy.tables import column_cells

TOWNS = Path(__file__).resolve().parent / "data" / "orte.txt"
SUFFIXES = ("straße", "strasse", "str.", "weg", "allee", "platz", "gasse", "ring", "damm",
            "chaussee", "ufer", "steig", "stieg", "pfad", "graben", "kai", "promenade", "twiete",
            "deich", "kamp", "markt", "wall", "gang")
NOT_STREETS = {  # compounds with a street suffix that a wiki writes before a number
    "arbeitsplatz", "stellplatz", "parkplatz", "speicherplatz", "steckplatz", "sitzplatz",
    "spielplatz", "schulungsplatz", "messplatz", "lagerplatz", "ausweg", "rückweg", "umweg",
    "dienstweg", "rechtsweg", "lösungsweg", "fluchtweg", "rettungsweg", "postweg", "lieferweg",
    "freigabeweg", "schlüsselring", "token-ring", "dateipfad", "suchpfad", "netzwerkpfad",
    "installationspfad", "speicherpfad", "datenpfad", "firewall", "schutzwall", "supermarkt",
    "arbeitsmarkt", "wochenmarkt", "flohmarkt", "binnenmarkt", "weihnachtsmarkt", "baumarkt",
    "getränkemarkt", "drogeriemarkt", "elektromarkt", "absatzmarkt", "eingang", "ausgang",
    "durchgang", "jahrgang", "lehrgang", "rundgang", "zugang", "übergang", "vorgang", "rückgang",
    "arbeitsgang", "abgang", "umgang", "hausflurgang", "seitengang", "mittelgang", "wareneingang",
    "warenausgang", "posteingang", "postausgang", "zahlungseingang", "hintereingang",
    "haupteingang", "notausgang"}
ADJECTIVES = {"alte", "alter", "altes", "neue", "neuer", "neues", "große", "großer", "kleine",
              "kleiner", "hohe", "hoher", "lange", "langer", "breite", "breiter", "obere", "oberer",
              "untere", "unterer", "innere", "äußere", "hintere", "vordere", "schöne", "weiße",
              "rote", "grüne", "krumme", "stille", "hohe"}
# "in der Großen Elbstraße"
ADJECTIVES |= {w[:-1] + ending for w in ADJECTIVES if w.endswith("e") for ending in ("en", "em")}
NOT_ADJECTIVES = {"der", "die", "das", "oder", "aber", "über", "unser", "jeder", "dieser", "einer",
                  "keiner", "ihrer", "euer", "hier", "vier", "wieder", "immer", "später", "weiter",
                  "unter", "hinter", "nur", "per", "neben", "unten", "oben", "vorher", "nachher",
                  "außer", "sowieso", "danach", "daher", "seiner", "meiner", "deiner", "unserer",
                  "eurer", "ihr", "mehr", "sehr", "wer", "ander", "aller"}
SEPARATE = (r"(?:Straße|Strasse|Str\.|Weg|Allee|Platz|Ring|Damm|Chaussee|Landstraße|Heerstraße|"
            r"Ufer|Steig|Markt|Tor|Brücke|Kai|Wall|Graben|Twiete|Burstah|Steinweg)")
PREPOSITIONS = (r"(?:Am|Im|Zum|Zur|Beim|Vorm|Hinterm|Unterm|Überm|Ans|Ins|"
                r"(?:An|Auf|In|Bei|Hinter|Unter|Vor|Über|Neben|Zu|Zwischen)\ (?:der|dem|den|des)|"
                r"Platz\ der|Platz\ des|Straße\ der|Straße\ des|Allee\ der)")
# nouns after "Am"/"Im" … that make a time or a thing, not a street ("Am Montag 3 Tickets")
NOT_PLACES = {
    "montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag", "wochenende",
    "anfang", "ende", "tag", "abend", "morgen", "mittag", "vormittag", "nachmittag", "jahr",
    "monat", "standort", "lager", "raum", "server", "rechner", "gerät", "büro", "stock",
    "gebäude", "keller", "netz", "netzwerk", "system", "ticket", "schritt", "kapitel", "abschnitt",
    "punkt", "fall", "beispiel", "januar", "februar", "märz", "april", "mai", "juni", "juli",
    "august", "september", "oktober", "november", "dezember", "quartal", "telefon", "wiki",
    "portal", "vertrag", "anhang", "bildschirm", "laptop", "drucker", "schrank", "regal"}
WORD = r"[A-ZÄÖÜ][a-zäöüß]+"
SUFFIX = "|".join(re.escape(s) for s in SUFFIXES)  # "straße|strasse|str\.|…"
# not a year
HOUSE = (r"(?:\d{1,3}|(?!19|20)\d{4})(?:\ ?[a-zA-Z](?![\w])"
         r")?(?:\ ?[-–/]\ ?\d{1,4}(?:\ ?[a-zA-Z](?![\w]))?)?")
HOUSE_END = (r"(?![\w]|[.,:]\d|\ ?(?:%|€|Euro|EUR|GB|MB|TB|KB|Prozent|Stück|Tage|Stunden|"
             r"Minuten|Jahre|Monate|Uhr|x\b))")
STREET = re.compile(r"(?<![\w-])(?P<street>"
                    rf"(?:{WORD}-|[A-ZÄÖÜ][\w.]*\.-)*(?:{WORD}|[A-ZÄÖÜ])"
                    r"-(?:Straße|Strasse|Str\.|Weg|Allee|Platz|Gasse|Ring|Damm|Chaussee|Ufer|"
                    r"Steig|Stieg|Pfad|Kai|Promenade|Twiete|Deich|Kamp)|"
                    rf"{WORD}(?:{SUFFIX})|{WORD}\ {SEPARATE})"
                    rf"\ (?P<number>{HOUSE}){HOUSE_END}")
# The long patterns below are spelled out with re.VERBOSE (white space between the parts is
# ignored, a comment says what a part matches); the parts above escape a space as "\ ".
PREPOSITIONAL = re.compile(rf"""
    (?<![\w-])
    (?P<street> {PREPOSITIONS}                        # "Am", "An der", "Platz der"
      \ (?:[A-ZÄÖÜ][a-zäöüß]+(?:en|em|er|es|e)\ )?    # an adjective, if any: "Alten "
      (?P<noun> {WORD}(?:-{WORD})* ) )                # "Markt", "Alster"
    \ (?P<number>{HOUSE})                             # " 3", " 12a"
    (?= \s* (?: , | \n | $ | \.(?!\d) | ; | \) | · | \|    # then the end of the address
              | in\ \d{{5}}\ [A-ZÄÖÜ] ) )                  # or "in 20095 Hamburg"
    """, re.X)
BEFORE_POSTCODE = re.compile(rf"""
    (?<![\w-])
    (?P<street> (?:{WORD}[-\ ])? {WORD} )             # any word or two: "Stephanikirchweide"
    \ (?P<number>{HOUSE}) (?![.,]\d)                  # " 8", not " 8,5"
    (?= \s* (?:,|;|\n|·|\|) \s* (?:D-)? \d{{5}} \s+ [A-ZÄÖÜ] )  # then ", 28217 Bremen"
    """, re.X)
LOWER_ADDRESS = re.compile(rf"""
    (?<![\w-])
    (?P<street> [a-zäöüß]+ (?:{SUFFIX})               # "bäckerbreitergang"
              | [a-zäöüß]+er\ [a-zäöüß]* (?:{SUFFIX}) )  # "potsdamer straße"
    \ (?P<number>{HOUSE}) ,\ ?                        # " 14, "
    (?P<code>\d{{5}}) \ (?P<town>[a-zäöüß]+(?:-[a-zäöüß]+)*)  # "20355 hamburg"
    (?![\w-])
    """, re.X)
# words before a number: no postcode
NOT_CODES = re.compile(r"""
    (?: kostenstelle | \bkst\b\.?                               # "Kostenstelle", "KST."
      | ticket | artikel | bestell | rechnung | auftrag | vorgang  # numbers of records
      | kunden | projekt | konto | inventar | \bport | personal   # and of other things
      | \bnr\.? | nummer | \# )                                 # "Nr.", "Nummer", "#"
    \S* [.:#\s]* $                                              # "-Nr.: ", "nummer "
    """, re.I | re.X)
ISLANDS = "|".join([
    "Föhr", "Amrum", "Sylt", "Pellworm",  # North Frisian
    "Rügen", "Fehmarn", "Usedom", "Hiddensee", "Poel",  # Baltic Sea
    "Borkum", "Juist", "Norderney", "Baltrum", "Langeoog", "Spiekeroog",  # East Frisian
    "Wangerooge", "Helgoland",  # East Frisian, Heligoland
    "Reichenau", "Mainau"])  # Lake Constance
# a part of POSTCODE (re.VERBOSE)
TOWN = rf"""
    (?: (?:Bad|St\.|Sankt|Hansestadt)\ )?               # "Bad ", "St. "
    {WORD}(?:-{WORD})*                                  # "Hamburg", "Castrop-Rauxel"
    (?: \ (?:am|an\ der|an\ dem|im|in\ der|ob\ der|bei|vor\ der)\ {WORD}  # "Frankfurt am Main"
      | \ \({WORD}\)                                    # "Neustadt (Holstein)"
      | \ auf\ (?:{ISLANDS})                            # "Wyk auf Föhr"
      | /{WORD} )?                                      # "Halle/Saale"
    """
POSTCODE = re.compile(rf"""
    (?: (?<![\w.,/-]) | (?<=[^\W\d],) )               # not inside a word or number, or: "Bonn,"
    (?P<prefix> (?:D|DE|A|AT|CH)- )?                  # the country: "D-", "CH-"
    (?P<code>\d{{4,5}}) \ (?P<town>{TOWN})            # "20095 Hamburg"
    (?![\w-])
    """, re.X)
AFTER_PREPOSITION = re.compile(r"(?:^|[\s(])(?:in|aus|nach|bei|von|wohnt|wohnhaft|Wohnort)\s+$")
NOT_TOWNS = re.compile(r"""(?:
      en | ern                                        # a plural or a verb: "Tagen", "Kindern"
    | Euro | EUR | CHF | Dollar | USD                 # a currency
    | Stück | Prozent | Mal | Byte | Bytes | Zeichen  # a unit
    | Punkte? | Seiten | Tickets?                    # a count
    )$""", re.X)
POSTCODE_WORDS = re.compile(r"""
    (?: \bplz | postleitzahl | \bort | wohnort        # "PLZ", "Ort"
      | anschrift | adresse | \bsitz | postfach )     # "Anschrift", "Sitz"
    \s* :? \s* $                                      # then ": "
    """, re.I | re.X)
# "Co. KG" ends in KG
LEGAL_FORM = re.compile(r"\b(?:GmbH|AG|KG|OHG|SE|UG|e\.\s?V\.|mbH|KGaA|GbR|Ltd\.?|Inc\.?)(?!\w)")
# "Hansa GmbH, " before a postcode: its seat
ENDS_WITH_COMPANY = re.compile(LEGAL_FORM.pattern + r"\s*[,·|\n]\s*$")
REGISTER = re.compile(r"""
    (?<![\w-]) HR\s? (?P<letter>[AB])                 # "HRB", "HR A"
    (?: \s* -? \s* Nr\.? )? \s* :? \s*                # "-Nr.: ", if any
    (?P<number>\d{1,6}) (?![\d,./-]\d) (?!\w)         # "12345", not a part of "12.345,00"
    """, re.X)
VAT = re.compile(r"(?<![\w-])DE[ ]?(?P<digits>\d{3}[ ]?\d{3}[ ]?\d{3})(?![\w-]|[.,/]\d| \d)")
TAX_WORDS = re.compile(r"""(?:
      steuer-?\s?nummer | steuernr\.? | steuer-nr\.?  # "Steuernummer", "Steuer-Nr."
    | \bst\.?\s?-?nr\.? | \bstnr\.?                   # "St.-Nr.", "StNr."
    )""", re.I | re.X)
TAX_NUMBER = re.compile(r"""
    (?<![\w/.-])
    (?: \d{2,4}/\d{3,4}/\d{4,5}                       # "21/815/08150"
      | \d{5}/\d{5}                                   # "93815/08152"
      | \d{2,3}\ \d{3,4}\ \d{4,5}                     # "013 815 08153"
      | \d{10,13} )                                   # "2181508150"
    (?![\w/-]|[.,]\d)                                 # the whole number
    """, re.X)
BIC_WORDS = re.compile(r"(?i)\b(?:bic|swift)(?:[-/ ]?(?:code|bic|swift))?\b")
# lower case: typed in a chat
BIC = re.compile(r"(?<![\w-])(?:[A-Z]{4}(?P<country>[A-Z]{2})[A-Z0-9]{2}(?:[A-Z0-9]{3})?"
                 r"|[a-z]{4}(?P<lower>[a-z]{2})[a-z0-9]{2}(?:[a-z0-9]{3})?)(?![\w-])")
COUNTRIES = set("""AD AE AF AG AL AM AO AR AT AU AZ BA BB BD BE BF BG BH BI BJ BN BO BR BS BT BW BY
    BZ CA CD CF CG CH CI CL CM CN CO CR CU CV CY CZ DE DJ DK DM DO DZ EC EE EG ER ES ET FI FJ FM FR
    GA GB GD GE GH GI GM GN GQ GR GT GW GY HK HN HR HT HU ID IE IL IN IQ IR IS IT JM JO JP KE KG KH
    KI KM KN KP KR KW KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MG MH MK ML MM MN MR MT MU MV
    MW MX MY MZ NA NE NG NI NL NO NP NR NZ OM PA PE PG PH PK PL PS PT PW PY QA RO RS RU RW SA SB SC
    SD SE SG SI SK SL SM SN SO SR ST SV SY SZ TD TG TH TJ TL TM TN TO TR TT TV TW TZ UA UG US UY UZ
    VA VC VE VN VU WS YE ZA ZM ZW""".split())  # ISO 3166-1, as in a BIC


@lru_cache(maxsize=1)
def towns():
    """First words of the towns in data/orte.txt: {"Hamburg", "Frankfurt", "Halle", …}."""
    lines = TOWNS.read_text(encoding="utf-8").splitlines()
    return frozenset(line.split()[0] for line in lines if line.strip() and not line.startswith("#"))


# -- streets and towns -----------------------------------------------------------------------------
@lru_cache(maxsize=64)
def find_streets(text):
    """Street + house number as written: "Hauptstraße 12a", "Am Markt 3", "Potsdamer Straße 7" (a
    tuple; cached, because rag/privacy/name_forms.py asks for the same text's streets as find()
    does)."""
    found = []
    for m in STREET.finditer(text):
        street = m.group("street")
        words = street.split()
        if street.lower() in NOT_STREETS or street.lower() in SUFFIXES:
            continue
        if len(words) == 2 and not adjective(words[0]):
            continue  # "Die Straße 5", "Jeder Weg 3": only "Potsdamer Straße", "Neuer Wall"
        start = m.start()
        before = re.search(rf"(?<![\w-])({WORD})\ $", text[max(0, start - 40):start])
        if len(words) == 1 and before and adjective(before.group(1)):
            start -= len(before.group(0))  # "Großen Elbstraße 145", "Lokstedter Steindamm 35"
        found.append(Match("ADRESSE", start, m.end("number"), text[start:m.end("number")]))
    for m in PREPOSITIONAL.finditer(text):
        if m.group("noun").lower() not in NOT_PLACES:
            found.append(Match("ADRESSE", m.start(), m.end("number"),
                               text[m.start():m.end("number")]))
    for m in BEFORE_POSTCODE.finditer(text):
        words = m.group("street").replace("-", " ").split()
        # "Anschrift Leopoldstraße 28a": the street
        start = (m.start() if len(words) == 1 or words[0].lower() in ADJECTIVES
                 or words[0].endswith("er")
                 else m.start("street") + m.group("street").rindex(words[-1]))
        if (not {w.lower() for w in words[-1:]} & NOT_PLACES
                and not any(f.start <= start < f.end for f in found)):
            found.append(Match("ADRESSE", start, m.end("number"), text[start:m.end("number")]))
    # "bäckerbreitergang 14, 20355 hamburg" (typed in lower case)
    for m in LOWER_ADDRESS.finditer(text):
        if m.group("street") not in NOT_STREETS:
            found.append(Match("ADRESSE", m.start(), m.end("number"),
                               text[m.start():m.end("number")]))
    return tuple(found)


def adjective(word):
    """A word that can open a street name: "Potsdamer", "Großen" -> True; "Jeder", "Hier"
    -> False"""
    low = word.lower()
    return low not in NOT_ADJECTIVES and (low in ADJECTIVES or low.endswith("er"))


def find_postcodes(text, streets=()):
    """Postcode + town ("20095 Hamburg"), when something says it is one (see the module
    docstring)."""
    ends = {s.end for s in streets}
    for m in LOWER_ADDRESS.finditer(text):
        yield Match("PLZ-ORT", m.start("code"), m.end("town"), text[m.start("code"):m.end("town")])
    for m in POSTCODE.finditer(text):
        code, prefix, town = m.group("code"), m.group("prefix"), m.group("town")
        if len(code) == 5 and not "01001" <= code <= "99998" or len(code) == 4 and code[0] == "0":
            continue
        before = text[max(0, m.start() - 30):m.start()]
        if NOT_CODES.search(before):
            continue  # "Kostenstelle 41020 Hamburg", "Ticket 20457: …"
        after_street = any(0 <= m.start() - end <= 4
                           and re.fullmatch(r"\s*[,·|\n]?\s*", text[end:m.start()])
                           for end in ends)
        if len(code) == 4:
            evidence = bool(prefix and prefix[0] in "AC") or after_street
        else:
            segment = re.search(r"(?:^|[\n,;·|(])[ \t]*$",
                                before) and re.match(r"[ \t]*(?:$|[\n,;·|)]|\.(?!\w))",
                                                                               text[m.end():])
            # "aus 21465 Reinbek"
            preposition = AFTER_PREPOSITION.search(before) and not NOT_TOWNS.search(town.split()[0])
            evidence = (town.split()[0] in towns() or after_street or bool(prefix) or bool(segment)
                        or bool(preposition) or
                        bool(POSTCODE_WORDS.search(before))
                        or bool(ENDS_WITH_COMPANY.search(before)))
        if evidence:
            yield Match("PLZ-ORT", m.start("code"), m.end(), text[m.start("code"):m.end()])


# -- company identifiers ---------------------------------------------------------------------------
def find_registers(text):
    """Handelsregister numbers: "HRB 12345", "HRA 4711", "HRB-Nr. 98765"."""
    for m in REGISTER.finditer(text):
        yield Match("HANDELSREGISTER", m.start(), m.end(), m.group(0))


def find_vat_ids(text):
    """German USt-IdNr with a valid check digit: "DE136695976", "DE 136 695 976"."""
    for m in VAT.finditer(text):
        if vat_ok(m.group("digits").replace(" ", "")):
            yield Match("UST-ID", m.start(), m.end(), m.group(0))


def after_word(text, words, pattern, kind):
    """Values of `pattern` starting up to CONTEXT_CHARS after a match of `words`, on the same
    line."""
    for w in words.finditer(text):
        line_end = text.find("\n", w.end())
        m = pattern.search(text, w.end(), len(text) if line_end < 0 else line_end)
        if m and m.start() <= w.end() + CONTEXT_CHARS:
            yield m, Match(kind, m.start(), m.end(), m.group(0))


def in_column(text, title, pattern, kind):
    """Values of `pattern` filling a cell of a table column whose title matches `title` ("|
    Steuernummer |")."""
    for _, (start, end, cell) in column_cells(text, title.fullmatch):
        m = pattern.fullmatch(cell.strip())
        if m:
            lead = len(cell) - len(cell.lstrip())
            yield m, Match(kind, start + lead, start + lead + len(m.group(0)), m.group(0))


def find_tax_numbers(text):
    """Steuernummern after their context word or in its column: "Steuernummer: 21/815/08150"."""
    found = list(after_word(text, TAX_WORDS, TAX_NUMBER, "STEUERNUMMER")) + list(
        in_column(text, TAX_WORDS, TAX_NUMBER, "STEUERNUMMER"))
    for m, match in found:
        if 10 <= len(re.sub(r"\D", "", m.group(0))) <= 13:
            yield match


def find_bics(text):
    """BICs after "BIC" or "SWIFT", or in its column: "BIC: COBADEFFXXX"."""
    for m, match in list(after_word(text, BIC_WORDS, BIC,
                                    "BIC")) + list(in_column(text, BIC_WORDS, BIC, "BIC")):
        country = m.group("country") or m.group("lower").upper()
        if country in COUNTRIES and (m.group("country") or re.search(r"\d|xxx$", m.group())):
            yield match  # a lower-case one needs a digit or "xxx" ("bic: erfragen" is a word)


def find(text):
    """All of this module's kinds in `text` (possibly overlapping; rag/privacy/mask.py resolves
    overlaps)."""
    streets = list(find_streets(text))
    return (streets + list(find_postcodes(text,
                                          streets)) + list(find_registers(text)) + list(
                                              find_vat_ids(text))
            + list(find_tax_numbers(text)) + list(find_bics(text)))


def normalise(kind, value):
    """One spelling per value. Examples: ("ADRESSE", "Hauptstr. 12 a")
    -> "HAUPTSTR12A" (as "Hauptstraße 12a");
    ("HANDELSREGISTER", "HRB-Nr. 12345 B") -> "HRB12345"; ("STEUERNUMMER", "21/815/08150")
    -> "2181508150"
    """
    short = compact(value).upper()
    if kind == "ADRESSE":
        return re.sub(r"STRASSE|STRAẞE|STR\.", "STR", short).replace("–", "")
    if kind == "HANDELSREGISTER":
        m = re.search(r"HR([AB]).*?(\d+)", short)
        return f"HR{m.group(1)}{m.group(2)}" if m else short
    if kind in ("STEUERNUMMER", "UST-ID"):
        return ("DE" if kind == "UST-ID" else "") + re.sub(r"\D", "", value)
    if kind == "PLZ-ORT":  # "21423 Winsen (Luhe)" is "21423 Winsen"
        return re.sub(r"[\s-]", "", re.sub(r"\s*\([^)]*\)\s*$", "", value)).upper()
    return short
