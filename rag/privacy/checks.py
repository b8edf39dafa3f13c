"""Check digits of German personal data and company identifiers, and the one Match record of
rag/privacy/.

    iban_ok("DE89370400440532013000") -> True        steuer_id_ok("86095742719") -> True
    card_ok("4111111111111111") -> True              svnr_ok("15070649C103") -> True
    compact("030 / 231-25") -> "03023125"            date_ok(31, 4, 1980) -> False

Each check takes the value without spaces (compact) and says only whether its digits fit; finding
the values in text is rag/privacy/detect.py's job, and Match is what every finder there returns.

Does not handle: IBANs outside SEPA, card schemes missing from CARD_RULES, ID card numbers from
before 2010, values without a check digit (phone numbers, BICs, Steuernummern).
"""
import re
from collections import Counter, namedtuple

Match = namedtuple("Match", "kind start end value")  # value: the text as written

# how far a context word ("Personalausweis", "Steuernummer", "BIC") may stand from its value
CONTEXT_CHARS = 60
IBAN_LENGTHS = {  # SEPA countries (EPC list, 2025) -> IBAN length
    "AD": 24, "AL": 28, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22,
    "DK": 18, "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GI": 23, "GR": 27, "HR": 21,
    "HU": 28, "IE": 22, "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27,
    "MD": 24, "ME": 22, "MK": 19, "MT": 31, "NL": 18, "NO": 15, "PL": 28, "PT": 25, "RO": 24,
    "RS": 22, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "VA": 22}
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
ICAO_ALPHABET = "0123456789CFGHJKLMNPRTVWXYZ"  # characters of German ID card and passport numbers


def compact(value):
    """The value without blanks, slashes, brackets and dashes. Example: compact("030 / 231-25")
    -> "03023125" """
    return re.sub(r"[\s/()-]", "", value)


def iban_ok(iban):
    """Country length and mod 97. Example: iban_ok("DE89370400440532013000") -> True"""
    if IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def iban_check(country, bban):
    """The two check digits an IBAN needs. Example: iban_check("DE", "370400440532013000")
    -> "89" """
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


def vat_ok(digits):
    """The check digit of a German USt-IdNr, the Steuer-ID's procedure. Example: vat_ok("136695976")
    -> True"""
    return steuer_id_check(digits[:8]) == int(digits[8])


def svnr_check(first11):
    """Check digit of a Rentenversicherungsnummer, letter included. Example:
    svnr_check("15070649C10") -> 3

    The letter becomes its place in the alphabet (C -> 03); weights 2 1 2 5 7 1 2 1 2 1 2 1; the
    digit sums of the products, added up, mod 10.
    """
    digits = first11[:8] + f"{ord(first11[8]) - 64:02d}" + first11[9:11]
    return sum(sum(divmod(int(d) * w, 10))
               for d, w in zip(digits, (2, 1, 2, 5, 7, 1, 2, 1, 2, 1, 2, 1))) % 10


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
    days = ([31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28]
            + [31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    return 1 <= month <= 12 and 1 <= day <= days[month - 1]
