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

Masker gives the same value the same placeholder within one answer ("[IBAN 1]" everywhere), after
normalising it (IBAN without spaces, +49 30 … = 030 …, e-mail in lower case).

Does not handle: names, postal addresses, ages, health data, IP and MAC addresses, licence plates,
ID card numbers written without their check digit or from before 2010, phone numbers with dots or in
words, values split over two lines, IBANs in lower case, personal data in file paths.
"""
import dataclasses
import re
from collections import Counter, namedtuple

MODES = ("mask", "flag", "off")  # --pii / RAG_PII: replace values, only flag the sources, do nothing
KINDS = ("IBAN", "E-MAIL", "SVNR", "AUSWEIS", "PASS", "KREDITKARTE", "STEUER-ID", "GEBURTSDATUM",
         "TELEFON")  # also the priority when two matches overlap (earlier wins)
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
    "tickets", "verwaltung", "vertrieb", "webmaster", "zentrale", "zoll"}
TEMPLATE_PARTS = {"vorname", "nachname", "name", "benutzer", "benutzername", "user", "username", "kuerzel",
                  "kürzel", "initialen"}  # "vorname.nachname@firma.de" explains a scheme, names nobody
ICAO_ALPHABET = "0123456789CFGHJKLMNPRTVWXYZ"  # characters of German ID card and passport numbers
MONTHS = {"januar": 1, "jan": 1, "jänner": 1, "februar": 2, "feb": 2, "märz": 3, "maerz": 3, "mär": 3,
          "april": 4, "apr": 4, "mai": 5, "juni": 6, "jun": 6, "juli": 7, "jul": 7, "august": 8, "aug": 8,
          "september": 9, "sep": 9, "sept": 9, "oktober": 10, "okt": 10, "november": 11, "nov": 11,
          "dezember": 12, "dez": 12}

Match = namedtuple("Match", "kind start end value")  # value: the text as written

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
BIRTH = re.compile(r"(?i)(?:\bgeb\.-datum|\bgeburtsdatum|\bgeburtstag|\bgeboren(?:\s+am)?|\bgeb\.)\s*:?\s*(?:am\s+)?"
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
    return "." not in local and any(part in ROLE_MAILBOXES for part in re.split(r"[-_+]", local))


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


FINDERS = (find_ibans, find_emails, find_svnrs, find_documents, find_cards, find_steuer_ids,
           find_birth_dates, find_phones)


def find(text):
    """All personal data in `text`: [Match], sorted by position, never overlapping.

    Overlaps go to the kind earlier in KINDS. Numbers inside something shaped like an IBAN (even
    one with a wrong check digit) are not reported as phone numbers or the like.
    Example: find("Mail an anna.beispiel@example.de") -> [Match("E-MAIL", 8, 32, "anna.beispiel@example.de")]
    """
    found = [m for finder in FINDERS for m in finder(text)]
    blocked = [(m.start(), m.start() + len(m.group(0))) for m in IBAN.finditer(text) if m.group(1) in IBAN_LENGTHS]
    kept = []
    for m in sorted(found, key=lambda m: (KINDS.index(m.kind), m.start, -m.end)):
        spans = [(k.start, k.end) for k in kept] + ([] if m.kind == "IBAN" else blocked)
        if all(m.end <= s or m.start >= e for s, e in spans):
            kept.append(m)
    return sorted(kept, key=lambda m: (m.start, m.end))


def counts(text):
    """How many values of each kind. Example: counts("Tel. 030 23125123") -> {"TELEFON": 1}"""
    return dict(sorted(Counter(m.kind for m in find(text)).items(), key=lambda kv: KINDS.index(kv[0])))


def describe(kind_counts):
    """Example: describe({"IBAN": 2, "TELEFON": 1}) -> "2 IBAN, 1 TELEFON" ("" for none)"""
    return ", ".join(f"{n} {kind}" for kind, n in kind_counts.items())


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
    return _compact(value).upper()


class Masker:
    """Placeholders for one answer: the same value always gets the same "[KIND n]".

    Example: m = Masker(); m.mask("030 23125123 oder +49 30 23125123") -> "[TELEFON 1] oder [TELEFON 1]"
    Masker(active=False).mask(text) returns text unchanged (modes flag and off).
    """

    def __init__(self, active=True):
        self.active, self.numbers = active, {}  # (kind, normalised value) -> n

    def placeholder(self, kind, value):
        key = (kind, normalise(kind, value))
        if key not in self.numbers:
            self.numbers[key] = sum(1 for k, _ in self.numbers if k == kind) + 1
        return f"[{kind} {self.numbers[key]}]"

    def mask(self, text):
        if not self.active or not text:
            return text
        return mask(text, self)


def mask(text, table=None):
    """`text` with every value replaced by its placeholder from `table` (a Masker; new one if None)."""
    table = Masker() if table is None else table
    out, last = [], 0
    for m in find(text):
        out += [text[last:m.start], table.placeholder(m.kind, m.value)]
        last = m.end
    return "".join(out) + text[last:]


# -- ask time --------------------------------------------------------------------------------------
def flags(text):
    """Source flags for flag mode. Example: flags("Tel. 030 23125123") -> [{"rule": "pii:telefon", "match": "1×"}]"""
    return [{"rule": f"pii:{kind.lower()}", "match": f"{n}×"} for kind, n in counts(text).items()]


def protect(question, sources, mode):
    """(question, sources, masker) as the prompt, the output and the audit log may show them.

    mask: copies of the sources with content, heading and flag texts masked, the question masked,
          all with one Masker (so "[IBAN 1]" means one value everywhere); mask the answer with it too.
    flag: the text as it is; sources with personal data get flags such as "pii:iban".
    off:  everything unchanged. The objects passed in are never changed.
    """
    if mode == "off":
        return question, list(sources), Masker(active=False)
    if mode == "flag":
        return question, [dataclasses.replace(s, flags=s.flags + flags(s.heading + "\n" + s.content))
                          for s in sources], Masker(active=False)
    masker = Masker()
    question = masker.mask(question)  # first: the question's values get the low numbers
    shown = [dataclasses.replace(s, content=masker.mask(s.content), heading=masker.mask(s.heading),
                                 flags=[{**f, "match": masker.mask(f["match"])} for f in s.flags])
             for s in sources]
    return question, shown, masker
