"""German personal data in text: find it, count it, and say which values stay readable.

    find("Überweisung an DE89 3704 0044 0532 0130 00, Rückfragen unter 030 23125123")
    -> [Match("IBAN", 15, 42, "DE89 3704 0044 0532 0130 00"), Match("TELEFON", 61, 73,
    "030 23125123")]
    counts("Tel. 030 23125123, Fax 030 23125124") -> {"TELEFON": 2}
    normalise("TELEFON", "+49 30 23125123") -> "+493023125123"   (the same as "030 23125123")

What makes a match more than a pattern (check digits where the format has one):
  IBAN          a SEPA country with its IBAN length, the mod-97 check; spaces in groups of 4 or none
  E-MAIL        name@domain.tld; function addresses (info@, it-helpdesk@ …) and templates
                (vorname.nachname@) are no personal data
  TELEFON       +49 …/0049 …/+43 …, or national 0xxx with a separator (0xxx/…, 0xxx-…,
                (0xxx) …, spaces); 01… only for mobile 015x/016x/017x and 0180; digits run
                together only after "Tel."/"Mobil"…; never right after "Bestellnr.", "Rechnung",
                "Ticket" … (NOT_PHONE)
  STEUER-ID     11 digits, first not 0, one digit twice or three times in the first ten, ISO 7064
                MOD 11,10
  SVNR          Rentenversicherungsnummer BBTTMMJJ A SS P: a real day and month, the letter, the
                check digit
  AUSWEIS, PASS ID card (authority letter + 8) or passport (C + 8) from the ICAO alphabet, 7-3-1
  check digit,
                and a word such as "Personalausweis" or "Reisepass" up to CONTEXT_CHARS before it
  KREDITKARTE   13–19 digits (spaces/dashes in groups), a known IIN prefix with its length, Luhn
  GEBURTSDATUM  a valid date right after "geb.", "geboren am", "Geburtsdatum", "Geb.-Datum" (only
                that date)
  NAME          by context: salutations, titles, role words, signatures, Name: fields, name columns,
                a listed first name (rag/privacy/names.py)
  ADRESSE, PLZ-ORT, HANDELSREGISTER, UST-ID, STEUERNUMMER, BIC   (rag/privacy/addresses.py)

Business contacts stay readable: a phone number or e-mail address whose nearest cue before it is
"Hotline", "Zentrale", "Service", "Support", "Helpdesk", "Bereitschaft", "Fax" (not a person:
"Herr", "Frau", a name, "mich", "mobil", "privat", "Durchwahl"), a switchboard number ("…-0"), or
one labelled "Tel."/"E-Mail" in a paragraph with a legal form (GmbH …) and no person's name before
it (a signature), is kept, and so is every value matching RAG_PII_KEEP (mask.parse_keep). The kept
values and why are the Kept records that scan returns (ask_rag.py --explain: "Telefon behalten: 0421
555 3090 (Hotline)"). rag/privacy/mask.py replaces what is found with numbered placeholders.

Does not handle: names without a context (see rag/privacy/names.py), ages, health data, IP and MAC
addresses, licence plates, ID card numbers written without their check digit or from before 2010,
phone numbers with dots or in words, values split over two lines, IBANs in lower case, personal
data in file paths; a business contact that is only a person's direct line ("Hotline: Frau Weber,
0171 …" is kept when the word "Hotline" stands nearer than the name).
"""
import fnmatch
import re
from collections import Counter, namedtuple

from rag.privacy import addresses, names
from rag.privacy.checks import (CONTEXT_CHARS, IBAN_LENGTHS, Match, card_ok, compact, date_ok,
                                iban_ok, icao_check, steuer_id_ok, svnr_ok)
from rag.text import german, sentences

# in tables and counts
KINDS = ("IBAN", "E-MAIL", "SVNR", "AUSWEIS", "PASS", "KREDITKARTE", "STEUER-ID", "GEBURTSDATUM",
         "TELEFON", "NAME", "ADRESSE", "PLZ-ORT", "HANDELSREGISTER", "UST-ID", "STEUERNUMMER",
         "BIC")
# overlaps: earlier wins
PRIORITY = ("IBAN", "E-MAIL", "UST-ID", "BIC", "HANDELSREGISTER", "SVNR", "AUSWEIS", "PASS",
            "KREDITKARTE", "STEUER-ID", "STEUERNUMMER", "GEBURTSDATUM", "TELEFON", "ADRESSE",
            "PLZ-ORT", "NAME")
# how far before a phone number or e-mail address its cue (Hotline, Herr …) may stand
CUE_CHARS = 60
# words for a function's number, not a person's
BUSINESS = re.compile(r"(?i)hotline|zentrale|service|support|help-?desk|kundendienst|bereitschaft|"
                      r"notdienst|störung|vermittlung|fax")
PERSONAL = re.compile(r"(?i)\b(?:herrn?|frau|hr\.|fr\.|mich|mir|meine[mnrs]?)(?!\w)|mobil|handy|"
                      r"privat|persönlich|direkt|durchwahl")  # … for a person's
CONTACT_LABEL = re.compile(r"(?i)(?:\btel\.?|telefon|\bfon|\bfax|\bt|e-?mail|\bmail)\s*[:.]?\s*$")
ROLE_MAILBOXES = {  # local parts of function addresses: not a person, so not masked
    "abuse", "admin", "bewerbung", "buchhaltung", "datenschutz", "disposition", "einkauf",
    "empfang", "helpdesk", "hostmaster", "hr", "info", "it", "karriere", "kontakt", "mail",
    "marketing", "monitoring", "newsletter", "noreply", "no-reply", "office", "personal",
    "phishing", "post", "postmaster", "presse", "raum", "rechnungen", "root", "sales", "security",
    "sekretariat", "service", "support", "team", "tickets", "verwaltung", "vertrieb", "webmaster",
    "zentrale", "zoll", "rechnung", "eingang", "bestellung", "auftrag", "anfrage", "reklamation",
    "lieferung", "versand", "lager", "logistik", "dispo", "jobs", "career", "billing", "invoice",
    "accounting", "finance", "finanz", "lohn", "gehalt", "hotline", "servicedesk", "notfall",
    # (also as the start of a longer part: "rechnungseingang", "supportteam")
    "bereitschaft", "poststelle"}
# "vorname.nachname@firma.de" explains a scheme, names nobody
TEMPLATE_PARTS = {"vorname", "nachname", "name", "benutzer", "benutzername", "user", "username",
                  "kuerzel", "kürzel", "initialen"}

# a value left readable, and why ("Hotline", "RAG_PII_KEEP")
Kept = namedtuple("Kept", "kind value reason")

_B = r"(?<![\w+/.,-])"  # no longer token to the left
_E = r"(?![\w-]|[.,/]\d)"  # … nor to the right (a sentence's full stop is fine)
IBAN = re.compile(_B + r"([A-Z]{2}) ?(\d{2})((?: ?[A-Z0-9]){11,30})" + _E)
EMAIL = re.compile(r"(?<![\w.+-])([A-Za-z0-9][A-Za-z0-9._%+-]*)@((?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,})"
                   r"(?![\w-])")
PHONE = re.compile(_B + r"""(
      (?:\+|00)[1-9]\d{0,2}[ -]?(?:\(0\)[ -]?)?\(?\d{1,5}\)?   # +49 30, 0049 (0)30, +49 (30)
    | \(0[1-9]\d{1,4}\)                                       # (030)
    | 0[1-9]\d{1,4}                                           # 030, 0171
  )((?:(?:\ ?[/-]\ ?|\ )?\d{2,}){1,4}(?:-\d{1,5})?)""" + _E, re.X)
PHONE_WORDS = re.compile(r"(?i)(?:tel\b|telefon|fon\b|phone|mobil|handy|fax|ruf|durchwahl|anrufen|"
                         r"erreichbar)[^\n]{0,25}$")
# words right before a number that make it no phone number
NOT_PHONE = re.compile(r"(?i)(?:bestell|rechnung|auftrag|ticket|vorgang|serien|artikel|kunden|"
                       r"vertrag|akten|lieferschein|sendung|inventar|charge|version|kostenstelle|"
                       r"projekt|konto|lager|raum|zimmer|position|referenz|kennung|postleitzahl|"
                       r"\b(?:nr|no|id|az|pin|plz|blz|isbn)\b|#)\S*[.:#\s]*$")
STEUER_ID = re.compile(r"(?<![\w+/.,-])(?<!\d )[1-9](?: ?\d){10}(?![\w-]|[.,/]\d| \d)")
SVNR = re.compile(_B + r"(\d{2}) ?(\d{2})(\d{2})(\d{2}) ?([A-Z]) ?(\d{2}) ?(\d)" + _E)
DOCUMENT = re.compile(_B + r"([CFGHJKLMNPRTVWXYZ][0-9CFGHJKLMNPRTVWXYZ]{8})(\d)" + _E)
DOCUMENT_WORDS = re.compile(r"(?i)ausweis|reisepass|\bpass(?:nummer|-?nr\b|port)?\b|"
                            r"dokumentennummer")
CARD = re.compile(_B
                  + r"(\d{4}(?:[ -]\d{4}){3}(?:[ -]?\d{1,3})?|\d{4}[ -]\d{6}[ -]\d{4,5}|\d{13,19})"
                  + _E)
BIRTH = re.compile(r"(?i)(?:\bgeb\.-datum|\bgeburtsdatum|\bgeburtstag|\bgeboren(?:\s+am)?|\bgeb\.)"
                   r"\s*:?\s*(?:am\b\s*:?\s*)?(?P<date>(?P<d>\d{1,2})"
                   r"\.\s?(?:(?P<m>\d{1,2})\.\s?|(?P<mname>[a-zä]{3,9})\.?\s+)(?P<y>\d{4}|\d{2})|"
                   r"(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2}))" + _E)


# -- finding ---------------------------------------------------------------------------------------
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
        if (taken == need and (end == len(text) or not text[end].isalnum())
                and iban_ok(compact(text[m.start():end]))):
            yield Match("IBAN", m.start(), end, text[m.start():end])


def role_mailbox(local):
    """A function address or a template, no person?

    Examples: "helpdesk", "it-monitoring", "vorname.nachname" -> True; "anna.beispiel" -> False
    """
    local = local.lower()
    if all(part in TEMPLATE_PARTS for part in re.split(r"[-_.]", local)):
        return True
    def role(part):
        return (part in ROLE_MAILBOXES
                or any(part.startswith(r) for r in ROLE_MAILBOXES if len(r) >= 4))
    if "." not in local:
        return any(role(part) for part in re.split(r"[-_+]", local))
    # "it.support"
    return all(role(part) or part in ("it", "hr") for part in re.split(r"[-_.+]", local))


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
            if (not 7 <= len(digits) <= 13
                    or (digits[1] == "1" and digits[:3] not in ("015", "016", "017", "018"))):
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
        if steuer_id_ok(compact(m.group(0))):
            yield Match("STEUER-ID", m.start(), m.end(), m.group(0))


def find_svnrs(text):
    for m in SVNR.finditer(text):
        if svnr_ok(compact(m.group(0))):
            yield Match("SVNR", m.start(), m.end(), m.group(0))


def find_documents(text):
    """ID card (AUSWEIS) and passport (PASS) numbers with their check digit, after a context
    word."""
    for m in DOCUMENT.finditer(text):
        number, check = m.group(1), int(m.group(2))
        if (icao_check(number) != check
                or not DOCUMENT_WORDS.search(text[max(0, m.start() - CONTEXT_CHARS):m.start()])):
            continue
        if number[0] == "C":
            yield Match("PASS", m.start(), m.end(), m.group(0))
        elif number[0] in "LMNPRTVWXY":
            yield Match("AUSWEIS", m.start(), m.end(), m.group(0))


def find_cards(text):
    for m in CARD.finditer(text):
        value = m.group(0)
        shorter = re.sub(r"[ -]\d{1,3}$", "", value) if len(compact(value)) > 16 else value
        # "4111 1111 1111 1111 12" may be card + more
        for candidate in dict.fromkeys((value, shorter)):
            if card_ok(compact(candidate)):
                yield Match("KREDITKARTE", m.start(), m.start() + len(candidate), candidate)
                break


def find_birth_dates(text):
    for m in BIRTH.finditer(text):
        if m.group("iy"):
            day, month, year = int(m.group("id")), int(m.group("im")), int(m.group("iy"))
        else:
            day, year = int(m.group("d")), int(m.group("y"))
            month = (int(m.group("m")) if m.group("m")
                     else german.MONTHS.get(m.group("mname").lower()))
        if month and date_ok(day, month, year if year > 99 else 2000 + year):
            yield Match("GEBURTSDATUM", m.start("date"), m.end("date"), m.group("date"))


FINDERS = (find_ibans, find_emails, find_svnrs, find_documents, find_cards, find_steuer_ids,
           find_birth_dates, find_phones, names.find, addresses.find)


def scan(text, kinds=None, keep=()):
    """(personal data, kept values) in `text`: ([Match], [Kept]), each sorted by position.

    kinds: the kinds to report (None: all; rag/privacy/mask.py parse_kinds); keep: parsed
    RAG_PII_KEEP entries. Overlaps go to the kind earlier in PRIORITY, whatever is switched off, so
    the same text gives
    the same spans. Example: scan("Hotline 0421 555 3090") -> ([], [Kept("TELEFON", "0421 555 3090",
    "Hotline")])
    """
    found = [m for finder in FINDERS for m in finder(text)]
    blocked = [(m.start(), m.start() + len(m.group(0))) for m in IBAN.finditer(text)
               if m.group(1) in IBAN_LENGTHS]
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
    Example: find("Mail an anna.beispiel@example.de") -> [Match("E-MAIL", 8, 32,
             "anna.beispiel@example.de")]
    """
    return scan(text, kinds, keep)[0]


def counts(text, kinds=None, keep=()):
    """How many values of each kind. Example: counts("Tel. 030 23125123") -> {"TELEFON": 1}"""
    return dict(sorted(Counter(m.kind for m in find(text, kinds, keep)).items(),
                       key=lambda kv: KINDS.index(kv[0])))


def describe(kind_counts):
    """Example: describe({"IBAN": 2, "TELEFON": 1}) -> "2 IBAN, 1 TELEFON" ("" for none)"""
    return ", ".join(f"{n} {kind}" for kind, n in kind_counts.items())


# -- what stays readable ---------------------------------------------------------------------------
def business_contact(text, m, people):
    """Why a phone number or e-mail address is a company's, not a person's (None: it is a person's).

    The nearest cue before it decides, word by word (a word with both, "Bereitschaftshandy", is a
    function's); a number ending in "-0" is a switchboard. Examples:
    "unter der Hotline 0421 555 3090"
    -> "Hotline"; "Hotline, sonst Frau Weber: 030 …" -> None; "Hansa GmbH · Tel. 0421 555 3000"
    -> "Firmenkontakt"
    """
    if m.kind not in ("TELEFON", "E-MAIL"):
        return None
    paragraph_start = text.rfind("\n\n", 0, m.start) + 1  # (a PDF line break is no boundary)
    start = max(paragraph_start, m.start - CUE_CHARS)
    ends = [following for _, following in sentences.cuts(text, start, m.start, marks=".!?;")]
    start = ends[-1] if ends else start
    cues = [(p.end, "personal", "") for p in people if start <= p.start < m.start]
    # not "support@…"
    window = re.sub(r"\S+@\S+|https?://\S+", lambda u: " " * len(u.group()), text[start:m.start])
    for w in re.finditer(r"[\w-]+\.?", window):
        business = BUSINESS.search(w.group())
        if business or PERSONAL.search(w.group()):
            cues.append((start + w.end(), "business" if business else "personal", business
                         and business.group()))
    nearest = max(cues, default=(0, None, None))
    if nearest[1] == "business":
        return business_reason(nearest[2])
    personal = nearest[1] == "personal"
    if m.kind == "TELEFON" and re.search(r"[-–]\s?0$", m.value):
        return "Zentrale"  # 040 123456-0: the switchboard of the line, not an extension
    line_end = text.find("\n", m.end)
    # "0800 123 (Hotline)", "… ist die Hotline"
    after = re.match(r"\s*(?:[(–-]|ist|=)\s*(?:die|unsere|der|unser|zur|zum)?\s*[\w-]*?("
                     + BUSINESS.pattern[4:] + r")",
                     text[m.end:len(text) if line_end < 0 else line_end], re.I)
    if after and not personal:
        return business_reason(after.group(1))
    paragraph_end = text.find("\n\n", m.end)
    paragraph_end = len(text) if paragraph_end < 0 else paragraph_end
    mobile = (m.kind == "TELEFON" and normalise("TELEFON",
                                                m.value)[:5] in ("+4915", "+4916", "+4917"))
    if (CONTACT_LABEL.search(text[start:m.start]) and not personal and not mobile
            and addresses.LEGAL_FORM.search(text, paragraph_start, paragraph_end)
            and not any(paragraph_start <= p.start < m.start for p in people)):
        # a company's block, not a person's signature (a name after it: Geschäftsführer …)
        return "Firmenkontakt"
    return None


def business_reason(word):
    """Example: "IT-Helpdesk"'s "helpdesk" -> "Helpdesk" """
    low = word.lower().replace("-", "")
    return {"hotline": "Hotline", "zentrale": "Zentrale", "service": "Service",
            "support": "Support", "helpdesk": "Helpdesk", "kundendienst": "Kundendienst",
            "bereitschaft": "Bereitschaft", "notdienst": "Notdienst",
            "störung": "Störungsannahme", "vermittlung": "Vermittlung",
            "fax": "Fax"}.get(low, word)


def listed(m, keep):
    """Does the Match m fit an entry of parse_keep? Written values compare normalised ("030 1234567"
    = "+49301234567")."""
    for kind, pattern in keep:
        if kind and kind != m.kind:
            continue
        if any(c in pattern for c in "*?["):
            if any(fnmatch.fnmatchcase(v.casefold(), pattern.casefold())
                   for v in (m.value, normalise(m.kind, m.value))):
                return True
        elif normalise(m.kind, pattern) == normalise(m.kind, m.value):
            return True
    return False


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
            month = (int(m.group("m")) if m.group("m")
                     else german.MONTHS.get(m.group("mname").lower(), 0))
            return f"{m.group('y')}-{month:02d}-{int(m.group('d')):02d}"
    if kind in ("ADRESSE", "PLZ-ORT", "HANDELSREGISTER", "STEUERNUMMER", "UST-ID"):
        return addresses.normalise(kind, value)
    if kind == "NAME":
        return " ".join(value.replace(",", " ").split()).upper()
    return compact(value).upper()
