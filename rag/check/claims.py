"""An answer's facts (numbers, dates, amounts, times, §, names with digits, commands) with their
keys.

    claims("Die Frist beträgt 14 Tage [1], ab dem 1. März 2025.")
    -> [Claim(start=18, text="14 Tage", kind="quantity", needs=(("dur:1209600",),)),
        Claim(start=38, text="1. März 2025", kind="date", needs=(("date:2025-3-1",),))]

The numbers, units and dates are read into keys by rag/check/quantities.py;
rag/check/factcheck.py looks the keys up in the sources. Does not handle: number words above 99
("zweihundert"), facts without a digit, number word, § or backticks (names, hosts without digits).
"""
import re
from dataclasses import dataclass
from decimal import Decimal

from rag.check.citations import CITATION
from rag.check.quantities import (ARTICLES, CONVERTIBLE, HALVES, MULTIPLIERS, ONE_AND_A_HALF,
                                  date_key, full_year, norm, number_value, quantity_keys, unit_of,
                                  valid_date, word_value)
from rag.text.german import MONTHS, fold

# -- what an answer counts without stating a fact --------------------------------------------------
# "zwei Wege": how an answer counts its own parts
GENERIC = {"ding", "dinge", "weg", "wege", "moeglichkeit", "moeglichkeiten", "schritt", "schritte",
           "schritten", "punkt", "punkte", "variante", "varianten", "option", "optionen", "fall",
           "faelle", "faellen", "art", "arten", "grund", "gruende", "seite", "seiten"}

# -- patterns, in the order the answer is read ----------------------------------------------------
SP = r"[^\S\n]"  # a space that does not end the line
CODE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)|`([^`\n]+)`", re.S)
SOURCE_REF = re.compile(r"\b(?:laut\s+)?Quellen?\s*:?\s*(?:Nr\.\s*)?\d+(?:\s*(?:,|und|"
                        r"sowie)\s*\d+)*", re.I)
LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)]\s+", re.M)
IP = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?(?![\w.]\d)")
ISO_DATE = re.compile(r"(?<![\w.])(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
DOT_DATE = re.compile(r"(?<![\w.,])(\d{1,2})\.(\d{1,2})\.(\d{4}|\d{2}(?!\d))?(?![\d])")
WORD_DATE = re.compile(rf"(?<![\w.,])((?:\d{{1,2}}\.{SP}*(?:,|und|oder|bis|–|-){SP}*)*)"
                       rf"(\d{{1,2}})\.{SP}*([^\W\d_]+)\.?(?:{SP}+(\d{{4}})(?!\d))?")
MONTH_YEAR = re.compile(rf"(?<![\w.])([^\W\d_]+)\.?{SP}+(\d{{4}})(?!\d)")
CLOCK = re.compile(rf"(?<![\w.:,])(\d{{1,2}}):(\d{{2}})(?!\d)(?:{SP}*Uhr\b)?")
HOUR = re.compile(rf"(?<![\w.:,])(\d{{1,2}})(?:\.(\d{{2}}))?{SP}*Uhr\b")
PARAGRAPH = re.compile(rf"(§§|\bParagr(?:aph|af)en\b){SP}*(\d+[a-z]?)((?:{SP}*(?:,|und|bis|–|"
                       rf"-){SP}*\d+[a-z]?)+)()|(§|\bParagr(?:aph|af)\b|\bArt\.|\bArtikel\b){SP}*"
                       rf"(\d+[a-z]?)()(?:{SP}*(?:Abs\.|Absatz){SP}*(\d+))?")
TOKEN = re.compile(r"\w+(?:[-./@]\w+)*")
NUMBER = re.compile(r"(?<![\w.,/])(?:(€|EUR)" + SP + r"?)?"
                    r"(\d{1,3}(?:\.\d{3})+(?:,\d+)?(?![\d.])|\d{1,3}(?:[\u00a0\u202f]\d{3})+"
                    r"(?:,\d+)?|\d+(?:[.,]\d+)?)(?![\d]|[.,]\d)")
MULTIPLIER = re.compile(rf"{SP}*-?{SP}*(Tsd|Tausend|Mio|Millionen|Million|Mrd|Milliarden|"
                        rf"Milliarde)\b\.?")
UNIT = re.compile(rf"{SP}*-?{SP}*(%|€|°{SP}?C\b|[^\W\d_]+(?:/s\b)?)")
WORD = re.compile(r"[^\W\d_]+")
NOUN_AFTER = re.compile(rf"{SP}+[A-ZÄÖÜ][^\W\d_]*(?:-[^\W\d_]+)*")
JOINED = re.compile(r"(.+?)(taegig|woechig|monatig|jaehrig|stuendig|minuetig|stellig)(e|en|er|es|"
                    r"em)?")


@dataclass(frozen=True)
class Claim:
    """One checkable statement of the answer: its text and the keys it may be found under.

    needs: alternatives, each a tuple of keys that must all be in one source; "code" and "id"
    claims are found by their text instead (see found()).
    """
    start: int
    text: str
    kind: str  # number, quantity, date, time, paragraph, id, code
    needs: tuple = ()
    literal: str = ""  # code and id claims: the folded text to look for


# -- finding claims --------------------------------------------------------------------------------
def find_code(text):
    """Inline `code` and the lines of fenced code blocks -> [(start, end, claim)]."""
    found = []
    for match in CODE.finditer(text):
        if match.group(1) is not None:
            offset = match.start(1)
            for line in match.group(1).split("\n"):
                command = line.strip()
                if command and not command.startswith("#"):
                    found.append((offset, offset + len(line), code_claim(offset, command)))
                offset += len(line) + 1
            found.append((match.start(), match.end(), None))  # the fences themselves: blank only
        else:
            found.append((match.start(), match.end(),
                          code_claim(match.start(), match.group(2).strip())))
    return found


def code_claim(start, command):
    """A command; a shell prompt in front ("localhost> cm …") is not part of it."""
    bare = re.sub(r"^[\w.-]*>\s*", "", command)
    return Claim(start, f"`{command}`", "code", literal=squeeze(bare))


def squeeze(text):
    """Folded, casefolded, whitespace collapsed. Example: squeeze(" Cm  user/X ") -> "cm user/x" """
    return " ".join(fold(text).split())


def find_addresses(text):
    """IP addresses and networks ("10.20.10.0/24"), read before dates so "10.10.10.1" is no date."""
    return [(m.start(), m.end(), Claim(m.start(), m.group(), "id", literal=fold(m.group())))
            for m in IP.finditer(text)]


def find_dates(text):
    """"01.03.2025", "1. März 2025", "2025-03-01", "28.10.", "24. und 31. Dezember", "Oktober
    2024"."""
    found = []
    for match in ISO_DATE.finditer(text):
        year, month, day = map(int, match.groups())
        if valid_date(month, day):
            found.append((match.start(), match.end(), date_claim(match, year, month, [day])))
    for match in DOT_DATE.finditer(text):
        day, month = int(match.group(1)), int(match.group(2))
        year = full_year(match.group(3)) if match.group(3) else None
        if valid_date(month, day):
            claim = date_claim(match, year, month, [day])
            if year is None:  # "22.04." may be "Ubuntu 22.04" at the end of a sentence
                decimal = number_value(f"{match.group(1)}.{match.group(2)}")
                claim = Claim(claim.start, claim.text, "date", claim.needs + ((f"n:{decimal}",),))
            found.append((match.start(), match.end(), claim))
    for match in WORD_DATE.finditer(text):
        month = MONTHS.get(fold(match.group(3)))
        days = [int(d) for d in re.findall(r"\d+", match.group(1))] + [int(match.group(2))]
        if month and all(valid_date(month, d) for d in days):
            year = int(match.group(4)) if match.group(4) else None
            found.append((match.start(), match.end(), date_claim(match, year, month, days)))
    for match in MONTH_YEAR.finditer(text):
        month = MONTHS.get(fold(match.group(1)))
        if month:
            found.append((match.start(), match.end(),
                          date_claim(match, int(match.group(2)), month, [None])))
    return found


def date_claim(match, year, month, days):
    """All days of one date expression must be in the source ("24. und 31. Dezember")."""
    return Claim(match.start(), match.group().strip(), "date",
                 (tuple(date_key(year, month, d) for d in days),))


def find_times(text):
    """"17:00 Uhr", "7:30", "9 Uhr", "19.00 Uhr" -> key time:17:00 …"""
    found = []
    for pattern in (CLOCK, HOUR):
        for match in pattern.finditer(text):
            hour, minute = int(match.group(1)), int(match.group(2) or 0)
            if hour <= 24 and minute < 60:
                key = f"time:{hour}:{minute:02d}"
                found.append((match.start(), match.end(),
                              Claim(match.start(), match.group(), "time", ((key,),))))
    return found


def find_paragraphs(text):
    """"§ 7", "§ 7 Abs. 2", "§§ 4 und 5", "Paragraph 7", "Art. 33"
    -> keys par:7, par:7:2, art:33."""
    found = []
    for match in PARAGRAPH.finditer(text):
        sign, first, more, paragraph = (match.group(1, 2, 3, 4) if match.group(1)
                                        else match.group(5, 6, 7, 8))
        kind = "art" if sign.lower().startswith("art") else "par"
        numbers = [first] + re.findall(r"\d+[a-z]?", more)
        keys = tuple(f"{kind}:{n}" + (f":{paragraph}" if paragraph and len(numbers) == 1 else "")
                     for n in numbers)
        found.append((match.start(), match.end(),
                      Claim(match.start(), match.group().strip(), "paragraph", (keys,))))
    return found


def find_ids(text):
    """Names with digits and letters ("T14", "NL-DRUCK-1OG-01", "mail01"), not "14-tägig" or
    "65W"."""
    found = []
    for match in TOKEN.finditer(text):
        token = match.group()
        if not re.search(r"\d", token) or not re.search(r"[^\W\d_]", token):
            continue
        lead = re.match(r"\d+(?:[.,]\d+)?-?([^\W\d_]+)", token)
        if lead and (unit_of(lead.group(1)) or JOINED.fullmatch(fold(lead.group(1)))
                     or lead.group(1) == "x"):
            continue  # a number with its unit ("24h", "14-tägig") or "2x": find_numbers reads it
        found.append((match.start(), match.end(),
                      Claim(match.start(), token, "id", literal=fold(token))))
    return found


def unit_after(text, pos):
    """The multiplier and unit right after a number at `pos`: (end, multiplier, unit) or (pos, 1,
    None)."""
    multiplier, end = 1, pos
    match = MULTIPLIER.match(text, pos)
    if match:
        multiplier, end = MULTIPLIERS[fold(match.group(1))], match.end()
    match = UNIT.match(text, end)
    if match and unit_of(match.group(1)):
        return match.end(), multiplier, unit_of(match.group(1))
    return (end, multiplier, None) if multiplier != 1 else (pos, 1, None)


def find_numbers(text):
    """Numbers in digits, with their unit if one follows ("14 Tage", "4.850 €", "30 %", "1,5 Mio.
    Euro")."""
    found, last_end = [], 0
    for match in NUMBER.finditer(text):
        value = number_value(match.group(2))
        if value is None:
            continue
        start, currency = match.start(), match.group(1)
        # "4.850 € 95 €": that € belongs to the number before
        if currency and start < last_end:
            start, currency = match.start(2), None
        if (text[match.end():match.end() + 1] == "."
                and not text[match.end() + 1:match.end() + 2].isdigit()):
            # "2. OG", "am 3. Tag": an ordinal, no amount
            end, multiplier, unit = match.end(), 1, None
        else:
            end, multiplier, unit = unit_after(text, match.end())
        if currency:  # "€ 95", "EUR 4.850"
            unit = unit_of(currency)
        value = norm(Decimal(value) * multiplier)
        surface, last_end = text[start:end].strip(), end
        if unit:
            needs = [(key,) for key in quantity_keys(value, unit)]
            if unit[0] not in CONVERTIBLE:  # "2048000 KB" over a table "Quota in KB | 2048000"
                needs.append((f"n:{value}", f"unit:{unit[0]}"))
            found.append((start, end, Claim(start, surface, "quantity", tuple(needs))))
        else:
            dot = "." if text[end:end + 1] == "." else ""  # an ordinal: "2. OG"
            # shown as "3 Fehlversuchen", not just "3"
            noun = NOUN_AFTER.match(text, end + len(dot))
            shown = surface + dot + noun.group() if noun else surface
            found.append((start, end, Claim(start, shown, "number", ((f"n:{value}",),))))
    return found


def find_number_words(text, counts=True):
    """Number words before a unit ("drei Monate", "einem Monat", "eine halbe Stunde"), joined ones
    ("zehnjährige", "sechsstellige") and, with `counts`, before a noun ("zehn Notfallcodes")."""
    found = []
    words = list(WORD.finditer(text))
    for i, match in enumerate(words):
        word = fold(match.group())
        joined = JOINED.fullmatch(word)
        if joined and word_value(joined.group(1)) is not None:
            unit = unit_of(joined.group(2) + (joined.group(3) or ""))
            claim_needs = tuple((k,) for k in quantity_keys(str(word_value(joined.group(1))), unit))
            found.append((match.start(), match.end(),
                          Claim(match.start(), match.group(), "quantity", claim_needs)))
            continue
        value = word_value(word)
        if word in ONE_AND_A_HALF:
            value = Decimal("1.5")
        elif word in ARTICLES:
            value = 1
        if value is None:
            continue
        nxt = i + 1
        if (word in ARTICLES and nxt < len(words) and fold(words[nxt].group()) in HALVES
                and close(text, match, words[nxt])):
            value, nxt = Decimal("0.5"), nxt + 1  # "eine halbe Stunde"
        if nxt >= len(words) or not close(text, words[nxt - 1], words[nxt]):
            continue
        unit = unit_of(words[nxt].group())
        end = words[nxt].end()
        if unit:
            claim_needs = tuple((k,) for k in quantity_keys(norm(value), unit))
            found.append((match.start(), end,
                          Claim(match.start(), text[match.start():end], "quantity", claim_needs)))
        elif (counts and word not in ARTICLES and word not in ONE_AND_A_HALF and value >= 2
              and words[nxt].group()[0].isupper() and fold(words[nxt].group()) not in GENERIC):
            end = re.compile(r"(?:-[^\W\d_]+)*").match(text, end).end()  # "acht Vor-Ort-Einsätze"
            found.append((match.start(), end, Claim(match.start(), text[match.start():end],
                                                    "number", ((f"n:{norm(value)}",),))))
    return found


def close(text, left, right):
    """Only spaces or a hyphen between two word matches ("drei Monate", "24-Stunden")."""
    return re.fullmatch(rf"{SP}+|{SP}*-{SP}*", text[left.end():right.start()]) is not None


FINDERS = (find_addresses, find_dates, find_times, find_paragraphs, find_ids, find_numbers,
           find_number_words)


def blank(text, start, end):
    """Replace a span by spaces, so later patterns skip it and positions stay."""
    return text[:start] + " " * (end - start) + text[end:]


def claims(answer):
    """The checkable claims of an answer, in order of appearance (citations [n] are none).

    Example: claims("Frist: 3 Monate [1], § 7.")
             -> [Claim(text="3 Monate", …), Claim(text="§ 7", …)]
    """
    text, found = answer, []
    for start, end, claim in find_code(text):
        if claim:
            found.append(claim)
        text = blank(text, start, end)
    for pattern in (CITATION, SOURCE_REF, LIST_MARKER):
        for match in pattern.finditer(text):
            following = WORD.match(text, match.end())
            if pattern is LIST_MARKER and following and fold(following.group()) in MONTHS:
                continue  # "31. Dezember" at the start of a line is a date
            text = blank(text, match.start(), match.end())
    for finder in FINDERS:
        for start, end, claim in finder(text):
            if text[start:end].strip():  # not inside a span an earlier finder took
                found.append(claim)
                text = blank(text, start, end)
    return sorted(found, key=lambda c: c.start)
