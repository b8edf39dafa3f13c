"""German personal data in text: find it, count it, and mask it with numbered placeholders.

    find("Überweisung an DE89 3704 0044 0532 0130 00, Rückfragen unter 030 23125123")
    -> [Match("IBAN", 15, 42, "DE89 3704 0044 0532 0130 00"), Match("TELEFON", 61, 73, "030 23125123")]
    mask("IBAN DE89 3704 0044 0532 0130 00 = DE89370400440532013000", Masker())
    -> "IBAN [IBAN 1] = [IBAN 1]"
    counts("Tel. 030 23125123, Fax 030 23125124") -> {"TELEFON": 2}

What makes a match more than a pattern (check digits where the format has one):
  IBAN          a SEPA country with its IBAN length, the mod-97 check; spaces in groups of 4 or none
  E-MAIL        name@domain.tld; function addresses (info@, it-helpdesk@ …) and templates
                (vorname.nachname@) are no personal data
  TELEFON       +49 …/0049 …/+43 …, or national 0xxx with a separator (0xxx/…, 0xxx-…, (0xxx) …, spaces);
                01… only for mobile 015x/016x/017x and 0180; digits run together only after "Tel."/"Mobil"…;
                never right after "Bestellnr.", "Rechnung", "Ticket" … (NOT_PHONE)
  STEUER-ID     11 digits, first not 0, one digit twice or three times in the first ten, ISO 7064 MOD 11,10
  SVNR          Rentenversicherungsnummer BBTTMMJJ A SS P: a real day and month, the letter, the check digit
  AUSWEIS, PASS ID card (authority letter + 8) or passport (C + 8) from the ICAO alphabet, 7-3-1 check digit,
                and a word such as "Personalausweis" or "Reisepass" up to CONTEXT_CHARS before it
  KREDITKARTE   13–19 digits (spaces/dashes in groups), a known IIN prefix with its length, Luhn
  GEBURTSDATUM  a valid date right after "geb.", "geboren am", "Geburtsdatum", "Geb.-Datum" (only that date)
  NAME          by context: salutations, titles, role words, signatures, Name: fields, name columns,
                a listed first name (rag/privacy/names.py)
  ADRESSE, PLZ-ORT, HANDELSREGISTER, UST-ID, STEUERNUMMER, BIC   (rag/privacy/addresses.py)

Business contacts stay readable: a phone number or e-mail address whose nearest cue before it is
"Hotline", "Zentrale", "Service", "Support", "Helpdesk", "Bereitschaft", "Fax" (not a person:
"Herr", "Frau", a name, "mich", "mobil", "privat", "Durchwahl"), a switchboard number ("…-0"), or
one labelled "Tel."/"E-Mail" in a paragraph with a legal form (GmbH …) and no person's name before
it (a signature), is kept, and so is every value matching RAG_PII_KEEP (parse_keep). The kept
values and why are Masker.kept (ask_rag.py --explain: "Telefon behalten: 0421 555 3090 (Hotline)").
Each kind can be switched off (parse_kinds: RAG_PII_KINDS / --pii-kinds "-ADRESSE,-PLZ-ORT").

Masker gives the same value the same placeholder within one answer ("[IBAN 1]" everywhere), after
normalising it (IBAN without spaces, +49 30 … = 030 …, e-mail in lower case), and a surname or
first name alone the placeholder of the full name it belongs to; a value it has masked once is
masked again where it comes back without its context (an answer that writes only "Weber").

Does not handle: names without a context (see rag/privacy/names.py), ages, health data, IP and MAC
addresses, licence plates, ID card numbers written without their check digit or from before 2010,
phone numbers with dots or in words, values split over two lines, IBANs in lower case, personal
data in file paths; a business contact that is only a person's direct line ("Hotline: Frau Weber,
0171 …" is kept when the word "Hotline" stands nearer than the name).
"""
import dataclasses
import fnmatch
import re
from collections import Counter, namedtuple

from rag.privacy import addresses
from rag.privacy import names

MODES = ("mask", "flag", "off")  # --pii / RAG_PII: replace values, only flag the sources, do nothing
KINDS = ("IBAN", "E-MAIL", "SVNR", "AUSWEIS", "PASS", "KREDITKARTE", "STEUER-ID", "GEBURTSDATUM", "TELEFON",
         "NAME", "ADRESSE", "PLZ-ORT", "HANDELSREGISTER", "UST-ID", "STEUERNUMMER", "BIC")  # in tables and counts
PRIORITY = ("IBAN", "E-MAIL", "UST-ID", "BIC", "HANDELSREGISTER", "SVNR", "AUSWEIS", "PASS", "KREDITKARTE",
            "STEUER-ID", "STEUERNUMMER", "GEBURTSDATUM", "TELEFON", "ADRESSE", "PLZ-ORT", "NAME")  # overlaps: earlier wins
LABELS = {"E-MAIL": "E-Mail", "TELEFON": "Telefon", "NAME": "Name", "ADRESSE": "Adresse", "PLZ-ORT": "PLZ und Ort",
          "STEUERNUMMER": "Steuernummer", "GEBURTSDATUM": "Geburtsdatum"}  # for "Telefon behalten: …"
CUE_CHARS = 60  # how far before a phone number or e-mail address its cue (Hotline, Herr …) may stand
BUSINESS = re.compile(r"(?i)hotline|zentrale|service|support|help-?desk|kundendienst|bereitschaft|notdienst|"
                      r"störung|vermittlung|fax")  # words for a function's number, not a person's
PERSONAL = re.compile(r"(?i)\b(?:herrn?|frau|hr\.|fr\.|mich|mir|meine[mnrs]?)(?!\w)|mobil|handy|privat|persönlich|"
                      r"direkt|durchwahl")  # … for a person's
CONTACT_LABEL = re.compile(r"(?i)(?:\btel\.?|telefon|\bfon|\bfax|\bt|e-?mail|\bmail)\s*[:.]?\s*$")
LEGAL_FORM = re.compile(r"\b(?:GmbH|AG|KG|OHG|SE|UG|e\.\s?V\.|mbH|KGaA|GbR|Ltd\.?|Inc\.?)(?!\w)")
SENTENCE_END = re.compile(r"[.!?;]\s+(?=[A-ZÄÖÜ])")
CONTEXT_CHARS = 60  # how far before an ID card or passport number its context word may stand
IBAN_LENGTHS = {  # SEPA countries (EPC list, 2025) -> IBAN length
    "AD": 24, "AL": 28, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18,
    "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GI": 23, "GR": 27, "HR": 21, "HU": 28, "IE": 22,
    "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MT": 31, "NL": 18, "NO": 15, "PL": 28, "PT": 25, "RO": 24, "RS": 22, "SE": 24, "SI": 19, "SK": 24,
    "SM": 27, "VA": 22}
CARD_RULES = [  # (IIN prefixes, allowed lengths); a prefix "2221-2720" is a numeric range
    (("4",), (13, 16, 19)),  # Visa
    (("51-55", "2221-2720"), (16,)),  # Mastercard
    (("34", "37"), (15,)),  # American Express
    (("300-305", "36", "38", "39"), (14, 16)),  # Diners Club
    (("6011", "644-649", "65"), (16, 19)),  # Discover
    (("3528-3589",), (16, 19)),  # JCB
    (("62",), (16, 17, 18, 19)),  # UnionPay
    (("50", "56-69"), (13, 16, 19)),  # Maestro
]
ROLE_MAILBOXES = {  # local parts of function addresses: not a person, so not masked
    "abuse", "admin", "bewerbung", "buchhaltung", "datenschutz", "disposition", "einkauf", "empfang",
    "helpdesk", "hostmaster", "hr", "info", "it", "karriere", "kontakt", "mail", "marketing", "monitoring",
    "newsletter", "noreply", "no-reply", "office", "personal", "phishing", "post", "postmaster", "presse",
    "raum", "rechnungen", "root", "sales", "security", "sekretariat", "service", "support", "team",
    "tickets", "verwaltung", "vertrieb", "webmaster", "zentrale", "zoll", "rechnung", "eingang", "bestellung",
    "auftrag", "anfrage", "reklamation", "lieferung", "versand", "lager", "logistik", "dispo", "jobs", "career",
    "billing", "invoice", "accounting", "finance", "finanz", "lohn", "gehalt", "hotline", "servicedesk", "notfall",
    "bereitschaft", "poststelle"}  # (also as the start of a longer part: "rechnungseingang", "supportteam")
TEMPLATE_PARTS = {"vorname", "nachname", "name", "benutzer", "benutzername", "user", "username", "kuerzel",
                  "kürzel", "initialen"}  # "vorname.nachname@firma.de" explains a scheme, names nobody
ICAO_ALPHABET = "0123456789CFGHJKLMNPRTVWXYZ"  # characters of German ID card and passport numbers
MONTHS = {"januar": 1, "jan": 1, "jänner": 1, "februar": 2, "feb": 2, "märz": 3, "maerz": 3, "mär": 3,
          "april": 4, "apr": 4, "mai": 5, "juni": 6, "jun": 6, "juli": 7, "jul": 7, "august": 8, "aug": 8,
          "september": 9, "sep": 9, "sept": 9, "oktober": 10, "okt": 10, "november": 11, "nov": 11,
          "dezember": 12, "dez": 12}

Match = namedtuple("Match", "kind start end value")  # value: the text as written
Kept = namedtuple("Kept", "kind value reason")  # a value left readable, and why ("Hotline", "RAG_PII_KEEP")

_B = r"(?<![\w+/.,-])"  # no longer token to the left
_E = r"(?![\w-]|[.,/]\d)"  # … nor to the right (a sentence's full stop is fine)
IBAN = re.compile(_B + r"([A-Z]{2}) ?(\d{2})((?: ?[A-Z0-9]){11,30})" + _E)
EMAIL = re.compile(r"(?<![\w.+-])([A-Za-z0-9][A-Za-z0-9._%+-]*)@((?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,})(?![\w-])")
PHONE = re.compile(_B + r"""(
      (?:\+|00)[1-9]\d{0,2}[ -]?(?:\(0\)[ -]?)?\(?\d{1,5}\)?   # +49 30, 0049 (0)30, +49 (30)
    | \(0[1-9]\d{1,4}\)                                       # (030)
    | 0[1-9]\d{1,4}                                           # 030, 0171
  )((?:(?:\ ?[/-]\ ?|\ )?\d{2,}){1,4}(?:-\d{1,5})?)""" + _E, re.X)
PHONE_WORDS = re.compile(r"(?i)(?:tel\b|telefon|fon\b|phone|mobil|handy|fax|ruf|durchwahl|anrufen|erreichbar)"
                         r"[^\n]{0,25}$")
NOT_PHONE = re.compile(r"(?i)(?:bestell|rechnung|auftrag|ticket|vorgang|serien|artikel|kunden|vertrag|akten|"
                       r"lieferschein|sendung|inventar|charge|version|kostenstelle|projekt|konto|lager|raum|"
                       r"zimmer|position|referenz|kennung|postleitzahl|\b(?:nr|no|id|az|pin|plz|blz|isbn)\b|#)"
                       r"\S*[.:#\s]*$")  # words right before a number that make it no phone number
STEUER_ID = re.compile(r"(?<![\w+/.,-])(?<!\d )[1-9](?: ?\d){10}(?![\w-]|[.,/]\d| \d)")
SVNR = re.compile(_B + r"(\d{2}) ?(\d{2})(\d{2})(\d{2}) ?([A-Z]) ?(\d{2}) ?(\d)" + _E)
DOCUMENT = re.compile(_B + r"([CFGHJKLMNPRTVWXYZ][0-9CFGHJKLMNPRTVWXYZ]{8})(\d)" + _E)
DOCUMENT_WORDS = re.compile(r"(?i)ausweis|reisepass|\bpass(?:nummer|-?nr\b|port)?\b|dokumentennummer")
CARD = re.compile(_B + r"(\d{4}(?:[ -]\d{4}){3}(?:[ -]?\d{1,3})?|\d{4}[ -]\d{6}[ -]\d{4,5}|\d{13,19})" + _E)
BIRTH = re.compile(r"(?i)(?:\bgeb\.-datum|\bgeburtsdatum|\bgeburtstag|\bgeboren(?:\s+am)?|\bgeb\.)\s*:?\s*(?:am\b\s*:?\s*)?"
                   r"(?P<date>(?P<d>\d{1,2})\.\s?(?:(?P<m>\d{1,2})\.\s?|(?P<mname>[a-zä]{3,9})\.?\s+)"
                   r"(?P<y>\d{4}|\d{2})|(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2}))" + _E)


# -- check digits ----------------------------------------------------------------------------------
def iban_ok(iban):
    """Country length and mod 97. Example: iban_ok("DE89370400440532013000") -> True"""
    if IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def iban_check(country, bban):
    """The two check digits an IBAN needs. Example: iban_check("DE", "370400440532013000") -> "89" """
    rest = int("".join(str(int(c, 36)) for c in bban + country + "00")) % 97
    return f"{98 - rest:02d}"


def luhn_ok(digits):
    """Luhn check of a card number. Example: luhn_ok("4111111111111111") -> True"""
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def card_ok(digits):
    """Luhn plus a known IIN prefix with its length. Example: card_ok("4111111111111111") -> True"""
    for prefixes, lengths in CARD_RULES:
        if len(digits) in lengths and any(_prefix(digits, p) for p in prefixes):
            return luhn_ok(digits)
    return False


def _prefix(digits, rule):
    low, _, high = rule.partition("-")
    return low <= digits[:len(low)] <= (high or low)


def steuer_id_check(first10):
    """ISO 7064 MOD 11,10 check digit. Example: steuer_id_check("8609574271") -> 9"""
    product = 10
    for c in first10:
        total = (int(c) + product) % 10 or 10
        product = total * 2 % 11
    return (11 - product) % 10


def steuer_id_ok(digits):
    """11 digits, first not 0, one digit twice or thrice (not thrice in a row), check digit.

    Example: steuer_id_ok("86095742719") -> True
    """
    if len(digits) != 11 or digits[0] == "0":
        return False
    repeated = [n for n in Counter(digits[:10]).values() if n > 1]
    if repeated not in ([2], [3]) or any(c * 3 in digits[:10] for c in "0123456789"):
        return False
    return steuer_id_check(digits[:10]) == int(digits[10])


def svnr_check(first11):
    """Check digit of a Rentenversicherungsnummer, letter included. Example: svnr_check("15070649C10") -> 3

    The letter becomes its place in the alphabet (C -> 03); weights 2 1 2 5 7 1 2 1 2 1 2 1; the
    digit sums of the products, added up, mod 10.
    """
    digits = first11[:8] + f"{ord(first11[8]) - 64:02d}" + first11[9:11]
    return sum(sum(divmod(int(d) * w, 10)) for d, w in zip(digits, (2, 1, 2, 5, 7, 1, 2, 1, 2, 1, 2, 1))) % 10


def svnr_ok(value):
    """Example: svnr_ok("15070649C103") -> True (a real day and month, the check digit)"""
    day, month = int(value[2:4]), int(value[4:6])
    return (1 <= day <= 31 and 1 <= month <= 12 and value[8].isalpha()
            and svnr_check(value[:11]) == int(value[11]))


def icao_check(chars):
    """ICAO 9303 check digit, weights 7-3-1. Example: icao_check("T22000129") -> 3"""
    return sum(int(c, 36) * (7, 3, 1)[i % 3] for i, c in enumerate(chars)) % 10


def date_ok(day, month, year):
    """Example: date_ok(31, 4, 1980) -> False (April has 30 days)"""
    days = [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28] + [31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return 1 <= month <= 12 and 1 <= day <= days[month - 1]


# -- finding ---------------------------------------------------------------------------------------
def _compact(value):
    return re.sub(r"[\s/()-]", "", value)


def find_ibans(text):
    """IBANs: the country's length of characters after the letters, spaces allowed, mod 97 valid."""
    for m in IBAN.finditer(text):
        need = IBAN_LENGTHS.get(m.group(1))
        if not need:
            continue
        end, taken = m.start(3), 4  # take characters until the country's length is reached
        while end < m.end() and taken < need:
            end += 1
            taken += text[end - 1] != " "
        if taken == need and (end == len(text) or not text[end].isalnum()) and iban_ok(_compact(text[m.start():end])):
            yield Match("IBAN", m.start(), end, text[m.start():end])


def role_mailbox(local):
    """A function address or a template, no person?

    Examples: "helpdesk", "it-monitoring", "vorname.nachname" -> True; "anna.beispiel" -> False
    """
    local = local.lower()
    if all(part in TEMPLATE_PARTS for part in re.split(r"[-_.]", local)):
        return True
    def role(part):
        return part in ROLE_MAILBOXES or any(part.startswith(r) for r in ROLE_MAILBOXES if len(r) >= 4)
    if "." not in local:
        return any(role(part) for part in re.split(r"[-_+]", local))
    return all(role(part) or part in ("it", "hr") for part in re.split(r"[-_.+]", local))  # "it.support"


def find_emails(text):
    for m in EMAIL.finditer(text):
        if not role_mailbox(m.group(1)):
            yield Match("E-MAIL", m.start(), m.end(), m.group(0))


def find_phones(text):
    """Phone numbers; national numbers need a separator or a phone word before them."""
    for m in PHONE.finditer(text):
        value, before = m.group(0), text[max(0, m.start() - 40):m.start()]
        digits = re.sub(r"\D", "", value.replace("(0)", ""))
        international = value[0] == "+" or value.startswith("00")
        if international:
            digits = digits[2:] if value.startswith("00") else digits
            if not 8 <= len(digits) <= 15 or digits.startswith("0"):
                continue
        else:
            if not 7 <= len(digits) <= 13 or (digits[1] == "1" and digits[:3] not in ("015", "016", "017", "018")):
                continue
            separated = re.search(r"[ /()-]", value)
            if not separated and not PHONE_WORDS.search(before):
                continue
        subscriber = re.sub(r"\D", "", m.group(2))
        if len(set(subscriber)) == 1:  # 000000: a placeholder, not a number
            continue
        if NOT_PHONE.search(before) and not PHONE_WORDS.search(before):
            continue
        yield Match("TELEFON", m.start(), m.end(), value)


def find_steuer_ids(text):
    for m in STEUER_ID.finditer(text):
        if steuer_id_ok(_compact(m.group(0))):
            yield Match("STEUER-ID", m.start(), m.end(), m.group(0))


def find_svnrs(text):
    for m in SVNR.finditer(text):
        if svnr_ok(_compact(m.group(0))):
            yield Match("SVNR", m.start(), m.end(), m.group(0))


def find_documents(text):
    """ID card (AUSWEIS) and passport (PASS) numbers with their check digit, after a context word."""
    for m in DOCUMENT.finditer(text):
        number, check = m.group(1), int(m.group(2))
        if icao_check(number) != check or not DOCUMENT_WORDS.search(text[max(0, m.start() - CONTEXT_CHARS):m.start()]):
            continue
        if number[0] == "C":
            yield Match("PASS", m.start(), m.end(), m.group(0))
        elif number[0] in "LMNPRTVWXY":
            yield Match("AUSWEIS", m.start(), m.end(), m.group(0))


def find_cards(text):
    for m in CARD.finditer(text):
        value = m.group(0)
        shorter = re.sub(r"[ -]\d{1,3}$", "", value) if len(_compact(value)) > 16 else value
        for candidate in dict.fromkeys((value, shorter)):  # "4111 1111 1111 1111 12" may be card + more
            if card_ok(_compact(candidate)):
                yield Match("KREDITKARTE", m.start(), m.start() + len(candidate), candidate)
                break


def find_birth_dates(text):
    for m in BIRTH.finditer(text):
        if m.group("iy"):
            day, month, year = int(m.group("id")), int(m.group("im")), int(m.group("iy"))
        else:
            day, year = int(m.group("d")), int(m.group("y"))
            month = int(m.group("m")) if m.group("m") else MONTHS.get(m.group("mname").lower())
        if month and date_ok(day, month, year if year > 99 else 2000 + year):
            yield Match("GEBURTSDATUM", m.start("date"), m.end("date"), m.group("date"))


def find_names(text):
    return names.find(text)


def find_addresses(text):
    return addresses.find(text)


FINDERS = (find_ibans, find_emails, find_svnrs, find_documents, find_cards, find_steuer_ids,
           find_birth_dates, find_phones, find_names, find_addresses)


def scan(text, kinds=None, keep=()):
    """(personal data, kept values) in `text`: ([Match], [Kept]), each sorted by position.

    kinds: the kinds to report (None: all, see parse_kinds); keep: parsed RAG_PII_KEEP entries.
    Overlaps go to the kind earlier in PRIORITY, whatever is switched off, so the same text gives
    the same spans. Example: scan("Hotline 0421 555 3090") -> ([], [Kept("TELEFON", "0421 555 3090", "Hotline")])
    """
    found = [m for finder in FINDERS for m in finder(text)]
    blocked = [(m.start(), m.start() + len(m.group(0))) for m in IBAN.finditer(text) if m.group(1) in IBAN_LENGTHS]
    resolved = []
    for m in sorted(found, key=lambda m: (PRIORITY.index(m.kind), m.start, -m.end)):
        spans = [(k.start, k.end) for k in resolved] + ([] if m.kind == "IBAN" else blocked)
        if all(m.end <= s or m.start >= e for s, e in spans):
            resolved.append(m)
    people = [m for m in resolved if m.kind == "NAME"]
    matches, kept = [], []
    for m in sorted(resolved, key=lambda m: (m.start, m.end)):
        if kinds is not None and m.kind not in kinds:
            continue
        reason = "RAG_PII_KEEP" if listed(m, keep) else business_contact(text, m, people)
        if reason:
            kept.append(Kept(m.kind, m.value, reason))
        else:
            matches.append(m)
    return matches, kept


def find(text, kinds=None, keep=()):
    """All personal data in `text`: [Match], sorted by position, never overlapping (see scan).

    Numbers inside something shaped like an IBAN (even one with a wrong check digit) are not
    reported as phone numbers or the like.
    Example: find("Mail an anna.beispiel@example.de") -> [Match("E-MAIL", 8, 32, "anna.beispiel@example.de")]
    """
    return scan(text, kinds, keep)[0]


def counts(text, kinds=None, keep=()):
    """How many values of each kind. Example: counts("Tel. 030 23125123") -> {"TELEFON": 1}"""
    return dict(sorted(Counter(m.kind for m in find(text, kinds, keep)).items(), key=lambda kv: KINDS.index(kv[0])))


def describe(kind_counts):
    """Example: describe({"IBAN": 2, "TELEFON": 1}) -> "2 IBAN, 1 TELEFON" ("" for none)"""
    return ", ".join(f"{n} {kind}" for kind, n in kind_counts.items())


# -- what stays readable ---------------------------------------------------------------------------
def business_contact(text, m, people):
    """Why a phone number or e-mail address is a company's, not a person's (None: it is a person's).

    The nearest cue before it decides, word by word (a word with both, "Bereitschaftshandy", is a
    function's); a number ending in "-0" is a switchboard. Examples: "unter der Hotline 0421 555 3090"
    -> "Hotline"; "Hotline, sonst Frau Weber: 030 …" -> None; "Hansa GmbH · Tel. 0421 555 3000" -> "Firmenkontakt"
    """
    if m.kind not in ("TELEFON", "E-MAIL"):
        return None
    paragraph_start = text.rfind("\n\n", 0, m.start) + 1  # (a PDF line break is no boundary)
    start = max(paragraph_start, m.start - CUE_CHARS)
    ends = [e.end() for e in SENTENCE_END.finditer(text, start, m.start)]
    start = ends[-1] if ends else start
    cues = [(p.end, "personal", "") for p in people if start <= p.start < m.start]
    window = re.sub(r"\S+@\S+|https?://\S+", lambda u: " " * len(u.group()), text[start:m.start])  # not "support@…"
    for w in re.finditer(r"[\w-]+\.?", window):
        business = BUSINESS.search(w.group())
        if business or PERSONAL.search(w.group()):
            cues.append((start + w.end(), "business" if business else "personal", business and business.group()))
    nearest = max(cues, default=(0, None, None))
    if nearest[1] == "business":
        return business_reason(nearest[2])
    personal = nearest[1] == "personal"
    if m.kind == "TELEFON" and re.search(r"[-–]\s?0$", m.value):
        return "Zentrale"  # 040 123456-0: the switchboard of the line, not an extension
    line_end = text.find("\n", m.end)
    after = re.match(r"\s*(?:[(–-]|ist|=)\s*(?:die|unsere|der|unser|zur|zum)?\s*[\w-]*?(" + BUSINESS.pattern[4:] + r")",
                     text[m.end:len(text) if line_end < 0 else line_end], re.I)  # "0800 123 (Hotline)", "… ist die Hotline"
    if after and not personal:
        return business_reason(after.group(1))
    paragraph_end = text.find("\n\n", m.end)
    paragraph_end = len(text) if paragraph_end < 0 else paragraph_end
    mobile = m.kind == "TELEFON" and normalise("TELEFON", m.value)[:5] in ("+4915", "+4916", "+4917")
    if (CONTACT_LABEL.search(text[start:m.start]) and not personal and not mobile
            and LEGAL_FORM.search(text, paragraph_start, paragraph_end)
            and not any(paragraph_start <= p.start < m.start for p in people)):
        return "Firmenkontakt"  # a company's block, not a person's signature (a name after it: Geschäftsführer …)
    return None


def business_reason(word):
    """Example: "IT-Helpdesk"'s "helpdesk" -> "Helpdesk" """
    low = word.lower().replace("-", "")
    return {"hotline": "Hotline", "zentrale": "Zentrale", "service": "Service", "support": "Support",
            "helpdesk": "Helpdesk", "kundendienst": "Kundendienst", "bereitschaft": "Bereitschaft", "notdienst": "Notdienst", "störung": "Störungsannahme", "vermittlung": "Vermittlung",
            "fax": "Fax"}.get(low, word)


def parse_keep(spec):
    """RAG_PII_KEEP / --pii-keep: comma-separated values or patterns (* ?), each optionally "KIND:".

    Example: parse_keep("0421 555*, NAME:Henrik Lorenzen") -> [(None, "0421 555*"), ("NAME", "Henrik Lorenzen")]
    """
    entries = []
    for item in (spec or "").split(","):
        item = item.strip()
        kind, _, rest = item.partition(":")
        if rest and kind.strip().upper() in KINDS:
            entries.append((kind.strip().upper(), rest.strip()))
        elif item:
            entries.append((None, item))
    return entries


def listed(m, keep):
    """Does the Match m fit an entry of parse_keep? Written values compare normalised ("030 1234567" = "+49301234567")."""
    for kind, pattern in keep:
        if kind and kind != m.kind:
            continue
        if any(c in pattern for c in "*?["):
            if any(fnmatch.fnmatchcase(v.casefold(), pattern.casefold()) for v in (m.value, normalise(m.kind, m.value))):
                return True
        elif normalise(m.kind, pattern) == normalise(m.kind, m.value):
            return True
    return False


def parse_kinds(spec):
    """RAG_PII_KINDS / --pii-kinds: which kinds are masked. Raises ValueError (German) for unknown kinds.

    Examples: parse_kinds("") -> all KINDS; parse_kinds("-ADRESSE,-PLZ-ORT") -> all but those two;
    parse_kinds("IBAN,TELEFON") -> only those two; parse_kinds("alle,-NAME") -> all but NAME
    """
    items = [item.strip().upper() for item in (spec or "").split(",") if item.strip()]
    chosen = {item.lstrip("+") for item in items if not item.startswith("-")}
    dropped = {item[1:].strip() for item in items if item.startswith("-")}
    unknown = sorted((chosen | dropped) - set(KINDS) - {"ALLE", "ALL"})
    if unknown:
        raise ValueError(f"unbekannte Art {unknown[0]} – bekannt sind {', '.join(KINDS)}")
    base = set(KINDS) if not chosen or chosen & {"ALLE", "ALL"} else chosen
    return frozenset(base - dropped)


def describe_kept(kept):
    """Example: Kept("TELEFON", "0421 555 3090", "Hotline") -> "Telefon behalten: 0421 555 3090 (Hotline)" """
    return f"{LABELS.get(kept.kind, kept.kind)} behalten: {kept.value} ({kept.reason})"


# -- masking ---------------------------------------------------------------------------------------
def normalise(kind, value):
    """One spelling per value, so it gets one placeholder.

    Example: normalise("TELEFON", "+49 (0)30 231 25-123") -> "+493023125123" (as "030 23125123")
    """
    if kind == "E-MAIL":
        return value.lower()
    if kind == "TELEFON":
        digits = re.sub(r"\D", "", value.replace("(0)", ""))
        if value.startswith("+"):
            return "+" + digits
        return "+" + digits[2:] if digits.startswith("00") else "+49" + digits[1:]
    if kind == "GEBURTSDATUM":
        m = BIRTH.search("geb. " + value)
        if m and m.group("iy"):
            return f"{m.group('iy')}-{m.group('im')}-{m.group('id')}"
        if m:
            month = int(m.group("m")) if m.group("m") else MONTHS.get(m.group("mname").lower(), 0)
            return f"{m.group('y')}-{month:02d}-{int(m.group('d')):02d}"
    if kind in ("ADRESSE", "PLZ-ORT", "HANDELSREGISTER", "STEUERNUMMER", "UST-ID"):
        return addresses.normalise(kind, value)
    if kind == "NAME":
        return " ".join(value.replace(",", " ").split()).upper()
    return _compact(value).upper()


class Masker:
    """Placeholders for one answer: the same value always gets the same "[KIND n]".

    Example: m = Masker(); m.mask("030 23125123 oder +49 30 23125123") -> "[TELEFON 1] oder [TELEFON 1]"
    m.mask("Frau Weber …"), then m.mask("… schrieb Weber") -> "… schrieb [NAME 1]" (known values come back).
    Masker(active=False).mask(text) returns text unchanged (modes flag and off). kinds and keep as
    in scan; kept collects the values left readable (Kept), each once, in the order met.
    """

    def __init__(self, active=True, kinds=None, keep=()):
        self.active, self.kinds, self.keep = active, kinds, keep
        self.numbers = {}  # (kind, normalised value) -> n
        self.words = {}  # a surname or first name of a masked NAME, upper case -> n
        self.known = {}  # value or name word as written -> placeholder (masked again wherever it comes back)
        self.kept = []

    def find(self, text):
        matches, kept = scan(text, self.kinds, self.keep)
        self.kept += [k for k in dict.fromkeys(kept) if k not in self.kept]
        return matches

    def readable(self):
        """The kept values that stayed readable everywhere: a value kept in one source (a signature under
        "Hotline") but masked in another (a table of persons) is masked in all, so it is not shown as kept."""
        return [k for k in self.kept if k.value not in self.known]

    def placeholder(self, kind, value):
        key = (kind, normalise(kind, value))
        if key not in self.numbers:
            parts = [w for w in key[1].split() if len(w) > 2 and not w.endswith(".") and w.lower() not in names.PARTICLES]
            linked = [self.words[w] for w in parts if kind == "NAME" and w in self.words]
            self.numbers[key] = linked[-1] if linked else len({n for (k, _), n in self.numbers.items() if k == kind}) + 1
            if kind == "NAME":
                for w in parts:
                    self.words.setdefault(w, self.numbers[key])
        placeholder = f"[{kind} {self.numbers[key]}]"
        self.known[value] = placeholder
        if kind == "NAME":
            for w in re.split(r"[\s,]+", value):
                if len(w) > 2 and not w.endswith(".") and w.lower() not in names.PARTICLES:
                    self.known.setdefault(w, placeholder)
        return placeholder

    def mask(self, text):
        if not self.active or not text:
            return text
        return mask(text, self)

    def mask_all(self, texts):
        """Mask several texts as one: every value found in any of them is masked in all ("Weber" alone in
        the first source, "Frau Weber" in the third). Example: ["Weber hat …", "Frau Weber"] -> ["[NAME 1] hat …", "Frau [NAME 1]"]"""
        if not self.active:
            return list(texts)
        found = [self.find(text) if text else [] for text in texts]
        for matches in found:
            for m in matches:
                self.placeholder(m.kind, m.value)
        out = []
        for text, matches in zip(texts, found):
            pieces, last = [], 0
            for m in matches:
                pieces += [text[last:m.start], self.placeholder(m.kind, m.value)]
                last = m.end
            out.append(self.mask_known("".join(pieces) + text[last:]) if text else text)
        return out

    def mask_known(self, text):
        """Mask values met before wherever they stand alone again (a name word not after an article)."""
        for value in sorted(self.known, key=len, reverse=True):
            pattern = r"(?<![\w@.+-])" + re.escape(value) + r"(?![\w@-])"
            text = re.sub(pattern, lambda m: m.group() if names.AFTER_ARTICLE.search(text[max(0, m.start() - 8):m.start()])
                          and " " not in value else self.known[value], text)
        return text


def mask(text, table=None):
    """`text` with every value replaced by its placeholder from `table` (a Masker; new one if None)."""
    table = Masker() if table is None else table
    out, last = [], 0
    for m in table.find(text):
        out += [text[last:m.start], table.placeholder(m.kind, m.value)]
        last = m.end
    return table.mask_known("".join(out) + text[last:])


# -- ask time --------------------------------------------------------------------------------------
def flags(text, table=None):
    """Source flags for flag mode. Example: flags("Tel. 030 23125123") -> [{"rule": "pii:telefon", "match": "1×"}]"""
    found = (table or Masker()).find(text)
    kinds = sorted(Counter(m.kind for m in found).items(), key=lambda kv: KINDS.index(kv[0]))
    return [{"rule": f"pii:{kind.lower()}", "match": f"{n}×"} for kind, n in kinds]


def protect(question, sources, mode, kinds=None, keep=()):
    """(question, sources, masker) as the prompt, the output and the audit log may show them.

    mask: copies of the sources with content, heading and flag texts masked, the question masked,
          all with one Masker (so "[IBAN 1]" means one value everywhere); mask the answer with it too.
    flag: the text as it is; sources with personal data get flags such as "pii:iban".
    off:  everything unchanged. The objects passed in are never changed.
    kinds, keep: see scan; masker.kept lists what stayed readable (mask and flag).
    """
    if mode == "off":
        return question, list(sources), Masker(active=False)
    masker = Masker(active=mode == "mask", kinds=kinds, keep=keep)
    if mode == "flag":
        return question, [dataclasses.replace(s, flags=s.flags + flags(s.heading + "\n" + s.content, masker))
                          for s in sources], masker
    texts = [question] + [t for s in sources for t in (s.content, s.heading, *(f["match"] for f in s.flags))]
    masked = iter(masker.mask_all(texts))  # the question's values get the low numbers
    question = next(masked)
    shown = []
    for s in sources:
        content, heading = next(masked), next(masked)
        shown.append(dataclasses.replace(s, content=content, heading=heading,
                                         flags=[{**f, "match": next(masked)} for f in s.flags]))
    return question, shown, masker
