"""German numbers, number words, units and dates read into the keys a fact is found under.

    number_value("1.000") -> "1000"; word_value("fuenfundzwanzig") -> 25
    quantity_keys("2", unit_of("Wochen")) -> ["dur:1209600"];
    date_key(2025, 3, 1) -> "date:2025-3-1"

rag/check/claims.py finds an answer's facts with these; rag/check/factcheck.py reads a source's
facts with them too. Does not handle: number words above 99 ("zweihundert"), units not in UNITS.
"""
import re
from decimal import Decimal, InvalidOperation

from rag.text.german import fold

# -- what counts as a number and a unit ------------------------------------------------------------
NUMBER_WORDS = {  # folded German number words -> value; "ein/eine…" only before a unit (ARTICLES)
    "null": 0, "eins": 1, "zwei": 2, "zwo": 2, "drei": 3, "vier": 4, "fuenf": 5, "sechs": 6,
    "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11, "zwoelf": 12, "dreizehn": 13,
    "vierzehn": 14, "fuenfzehn": 15, "sechzehn": 16, "siebzehn": 17, "achtzehn": 18, "neunzehn": 19,
    "zwanzig": 20, "dreissig": 30, "vierzig": 40, "fuenfzig": 50, "sechzig": 60, "siebzig": 70,
    "achtzig": 80, "neunzig": 90, "hundert": 100, "einhundert": 100, "tausend": 1000,
    "eintausend": 1000,
}
ONES = {"ein": 1, "zwei": 2, "drei": 3, "vier": 4, "fuenf": 5, "sechs": 6, "sieben": 7, "acht": 8,
        "neun": 9}
TENS = {"zwanzig": 20, "dreissig": 30, "vierzig": 40, "fuenfzig": 50, "sechzig": 60, "siebzig": 70,
        "achtzig": 80, "neunzig": 90}
ARTICLES = {"ein", "eine", "einen", "einem", "einer", "eines"}  # "einem Monat" = 1 Monat
HALVES = {"halb", "halbe", "halben", "halber", "halbes"}  # "eine halbe Stunde" = 0.5 Stunden
ONE_AND_A_HALF = {"anderthalb", "eineinhalb"}


def inflect(stems, endings):
    """Every stem with every ending. Example: inflect(["tag"], ["", "e"]) -> ["tag", "tage"]"""
    return [stem + ending for stem in stems for ending in endings]


NOUN = ["", "e", "en", "es", "s", "n"]
ADJECTIVE = ["", "e", "en", "er", "es", "em"]
# Unit words (folded) -> (kind, factor). Kinds "dur" (seconds), "mon" (months) and "wd" (working
# days) convert within themselves, so "zwei Wochen" meets "14 Tage" and "1 Jahr" meets "12 Monate";
# any other kind is its own unit, compared without conversion.
UNITS = {
    **dict.fromkeys(["s", "sek", "sekunde", "sekunden"], ("dur", 1)),
    **dict.fromkeys(["min", "minute", "minuten", *inflect(["minuetig"], ADJECTIVE)], ("dur", 60)),
    **dict.fromkeys(["h", "std", "stunde", "stunden", *inflect(["stuendig"], ADJECTIVE)],
                    ("dur", 3600)),
    **dict.fromkeys([*inflect(["tag", "kalendertag"], NOUN), *inflect(["taegig"], ADJECTIVE)],
                    ("dur", 86400)),
    **dict.fromkeys([*inflect(["woche"], ["", "n"]), *inflect(["woechig"], ADJECTIVE)],
                    ("dur", 604800)),
    **dict.fromkeys(inflect(["arbeitstag", "werktag"], NOUN), ("wd", 1)),
    **dict.fromkeys([*inflect(["monat"], NOUN), *inflect(["monatig"], ADJECTIVE)], ("mon", 1)),
    **dict.fromkeys([*inflect(["quartal"], NOUN), *inflect(["vierteljahr"], NOUN)], ("mon", 3)),
    **dict.fromkeys([*inflect(["jahr"], NOUN), *inflect(["jaehrig"], ADJECTIVE)], ("mon", 12)),
    **dict.fromkeys(["%", "prozent"], ("%", 1)),
    **dict.fromkeys(["€", "eur", "euro"], ("eur", 1)),
    **dict.fromkeys(["cent", "ct"], ("cent", 1)),
    **dict.fromkeys(["kb", "kilobyte"], ("kb", 1)), **dict.fromkeys(["mb", "megabyte"], ("mb", 1)),
    **dict.fromkeys(["gb", "gigabyte"], ("gb", 1)), **dict.fromkeys(["tb", "terabyte"], ("tb", 1)),
    **dict.fromkeys(["kib"], ("kib", 1)), **dict.fromkeys(["mib"], ("mib", 1)),
    **dict.fromkeys(["gib"], ("gib", 1)), **dict.fromkeys(["mbit", "mbit/s"], ("mbit/s", 1)),
    **dict.fromkeys(["gbit", "gbit/s"], ("gbit/s", 1)), **dict.fromkeys(["w", "watt"], ("w", 1)),
    **dict.fromkeys(["m", "meter", "metern"], ("m", 1)),
    **dict.fromkeys(["km", "kilometer", "kilometern"], ("km", 1)),
    **dict.fromkeys(["°c", "grad"], ("°c", 1)), **dict.fromkeys(["zoll"], ("zoll", 1)),
    **dict.fromkeys(inflect(["stellig"], ADJECTIVE), ("stellig", 1)),
}
CONVERTIBLE = {"dur", "mon", "wd"}  # kinds keyed by converted value; the others by unit and value
MULTIPLIERS = {"tsd": 1000, "tausend": 1000, "mio": 10**6, "million": 10**6, "millionen": 10**6,
               "mrd": 10**9, "milliarde": 10**9, "milliarden": 10**9}


# -- reading numbers -------------------------------------------------------------------------------
def number_value(raw):
    """A German or plain number as a normalised string; None if it is none.

    Example: number_value("1.000") -> "1000"; number_value("1,5") -> "1.5";
             number_value("1.5") -> "1.5"
    """
    text = raw.replace("\u00a0", "").replace("\u202f", "")
    if re.fullmatch(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?", text):  # 1.000 or 4.850,00: German thousands
        text = text.replace(".", "").replace(",", ".")
    else:
        text = text.replace(",", ".")
    try:
        return norm(Decimal(text))
    except InvalidOperation:
        return None


def norm(value):
    """A number as its shortest plain string.
    Example: norm(Decimal("2.50")) -> "2.5"; norm(2048000) -> "2048000" """
    return format(Decimal(value).normalize(), "f")


def word_value(word):
    """Value of a folded German number word (0–99, hundert, tausend), else None.

    Example: word_value("drei") -> 3; word_value("fuenfundzwanzig") -> 25;
             word_value("haus") -> None
    """
    if word in NUMBER_WORDS:
        return NUMBER_WORDS[word]
    match = re.fullmatch(r"(ein|zwei|drei|vier|fuenf|sechs|sieben|acht|neun)und(\w+)", word)
    if match and match.group(2) in TENS:
        return ONES[match.group(1)] + TENS[match.group(2)]
    return None


def unit_of(word):
    """(kind, factor) of a unit word or symbol, else None.
    Example: unit_of("Tagen") -> ("dur", 86400)"""
    return UNITS.get(fold(re.sub(r"\s", "", word)).rstrip("."))


def quantity_keys(value, unit):
    """The key of an amount. Example: quantity_keys("2", ("dur", 604800)) -> ["dur:1209600"]

    Working days are also plain days in a source ("2 Arbeitstage" supports "2 Tage"), see
    source_keys.
    """
    kind, factor = unit
    if kind in CONVERTIBLE:
        return [f"{kind}:{norm(Decimal(value) * factor)}"]
    return [f"u:{kind}:{value}"]


def date_key(year, month, day):
    """Example: date_key(2025, 3, 1) -> "date:2025-3-1"; date_key(None, 10, 28) -> "date:-10-28" """
    return f"date:{year or ''}-{month or ''}-{day or ''}"


def full_year(raw):
    """"25" -> 2025, "2025" -> 2025."""
    return int(raw) + 2000 if len(raw) == 2 else int(raw)


def valid_date(month, day):
    return 1 <= month <= 12 and (day is None or 1 <= day <= 31)
