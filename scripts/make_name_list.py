#!/usr/bin/env python3
"""Write rag/privacy/data/vornamen.txt: first names from Faker (MIT licence), German and those of other languages
common in German-speaking workplaces.

    python3 -m pip install faker==40.54.0 && apt-get install wngerman wamerican && python3 scripts/make_name_list.py

Faker (https://pypi.org/project/Faker/, MIT licence, Copyright (c) 2012 Daniele Faraglia) ships
first-name lists per locale; the MIT licence allows copying them with its notice, which heads the
data file. All names of de_DE, de_AT and de_CH are taken except COMMON_WORDS ("August", "Roman",
"Rose", "Mark", "Kai": German words), because rag/privacy/names.py takes a listed first name followed by a
capitalised word for a person. From OTHER_LOCALES (Turkish, Polish, Italian, …) only names that
are no word of Debian's German word list (wngerman, /usr/share/dict/ngerman; "Anders", "Amber" …
are dropped); from MORE_LOCALES neither a lower-case word of Debian's English word list
(wamerican: "Hope", "Comfort") – the word lists only filter, nothing of it is copied. Abbreviations ("H.-Dieter"),
names with a space are left out. Names in Cyrillic (uk_UA, ru_RU, bg_BG) and Greek (el_GR) are
written in Latin letters as colleagues' names appear in German documents: Cyrillic in an English
(ICAO-like) and a German (Duden-like) form ("Sergey", "Sergej"; Ukrainian after KMU 2010:
"Oleksandr", "Kateryna"), Greek after ELOT 743 without accents ("Giorgos"); ja_JP gives its
romanised names ("Hiroshi").

Does not handle: first names Faker does not list (the list is a signal, the contexts in
rag/privacy/names.py do the rest).
"""
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "rag" / "privacy" / "data" / "vornamen.txt"
VERSION = "40.54.0"  # the Faker release the list comes from
OTHER_LOCALES = ("tr_TR", "pl_PL", "it_IT", "hr_HR", "cs_CZ", "es_ES", "pt_PT", "fr_FR", "nl_NL", "da_DK", "sv_SE",
                 "no_NO", "en_GB", "vi_VN")  # names of colleagues in German-speaking firms
MORE_LOCALES = ("ro_RO", "hu_HU", "sk_SK", "sl_SI", "fi_FI", "en_IN", "en_PK", "en_KE", "yo_NG", "ig_NG", "ha_NG",
                "tw_GH", "ja_JP")  # more of them; filtered by the English word list as well ("Comfort", "Hope")
TRANSLITERATED = ("uk_UA", "ru_RU", "bg_BG", "el_GR")  # Cyrillic and Greek, written in Latin letters (see latin())
CYRILLIC = {  # one letter -> (English/ICAO-like, German/Duden-like); "Олександр" -> "Oleksandr", "Сергей" -> "Sergey"/"Sergej"
    "а": ("a", "a"), "б": ("b", "b"), "в": ("v", "w"), "г": ("g", "g"), "ґ": ("g", "g"), "д": ("d", "d"),
    "е": ("e", "e"), "ё": ("e", "jo"), "є": ("ie", "je"), "ж": ("zh", "sch"), "з": ("z", "s"), "и": ("i", "i"),
    "і": ("i", "i"), "ї": ("i", "ji"), "й": ("y", "j"), "к": ("k", "k"), "л": ("l", "l"), "м": ("m", "m"),
    "н": ("n", "n"), "о": ("o", "o"), "п": ("p", "p"), "р": ("r", "r"), "с": ("s", "s"), "т": ("t", "t"),
    "у": ("u", "u"), "ф": ("f", "f"), "х": ("kh", "ch"), "ц": ("ts", "z"), "ч": ("ch", "tsch"), "ш": ("sh", "sch"),
    "щ": ("shch", "schtsch"), "ъ": ("", ""), "ы": ("y", "y"), "ь": ("", ""), "э": ("e", "e"), "ю": ("yu", "ju"),
    "я": ("ya", "ja"), "'": ("", ""), "’": ("", "")}
UKRAINIAN = {"г": ("h", "h"), "и": ("y", "y"), "й": ("i", "j"), "ї": ("i", "ji"), "є": ("ie", "je"), "ю": ("iu", "ju"),
             "я": ("ia", "ja")}  # Ukrainian's own values (KMU 2010): "Катерина" -> "Kateryna", "Олексій" -> "Oleksii"
UKRAINIAN_FIRST = {"й": ("y", "j"), "ї": ("yi", "ji"), "є": ("ye", "je"), "ю": ("yu", "ju"), "я": ("ya", "ja")}  # at the start
GREEK = {  # ELOT 743, simplified: "Γιώργος" -> "Giorgos", "Δημήτριος" -> "Dimitrios"
    "ου": "ou", "αι": "ai", "ει": "ei", "οι": "oi", "μπ": "b", "ντ": "nt", "γγ": "ng", "γκ": "gk", "αυ": "av",
    "ευ": "ev", "θ": "th", "χ": "ch", "ψ": "ps", "ξ": "x", "α": "a", "β": "v", "γ": "g", "δ": "d", "ε": "e",
    "ζ": "z", "η": "i", "ι": "i", "κ": "k", "λ": "l", "μ": "m", "ν": "n", "ο": "o", "π": "p", "ρ": "r",
    "σ": "s", "ς": "s", "τ": "t", "υ": "y", "φ": "f", "ω": "o"}
WORDS = Path("/usr/share/dict/ngerman")  # Debian's wngerman: German words, to filter the other locales' names
ENGLISH = Path("/usr/share/dict/american-english")  # Debian's wamerican: its lower-case words ("hope", "comfort") filter too
COMMON_WORDS = {  # first names that are also German nouns or words a wiki uses ("Roman", "Marine", "Solange")
    "Ada", "Alba", "Alexa", "Angel", "Ariane", "August", "Baptist", "Delphine", "Eliza", "Ernst", "Flora", "Gloria",
    "Grace", "Gretchen", "Hagen", "Heide", "Holm", "Jack", "Jesus", "Jordan", "Joy", "Kai", "Laure", "Lore", "Luke",
    "Marine", "Mark", "Maxime", "Medina", "Mentor", "Mercedes", "Merlin", "Milan", "Paris", "Roman", "Romane",
    "Rose", "Ruby", "Silvester", "Solange", "Tara", "Traute", "Trudel", "Van", "Viola",
    "Siri", "Mate", "Maxi", "Love", "May", "June", "Vega", "Dawn", "Gun", "Odd", "Toy",  # (and English words)
    "Claude", "Cyrus", "Gemma", "Nano"}  # (and software: "Cyrus IMAP", the editor "nano", the language models)
HEADER = f"""\
# Vornamen (first names), one per line, for rag/privacy/names.py.
# Source: Faker {VERSION} (https://pypi.org/project/Faker/), faker/providers/person/<locale>: the first
# names of de_DE, de_AT and de_CH without common German words, of {", ".join(OTHER_LOCALES)}
# without words of the German word list, of {", ".join(MORE_LOCALES)}
# without words of the German and the English word list, and of {", ".join(TRANSLITERATED)} in Latin letters. Regenerate (see the script's docstring):
# python3 -m pip install faker=={VERSION} && python3 scripts/make_name_list.py
#
# Copyright (c) 2012 Daniele Faraglia
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in
# all copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
# THE SOFTWARE.
"""


def main():
    import importlib
    try:
        import faker
    except ImportError:
        raise SystemExit(f"Fehler: Faker fehlt – installieren mit: python3 -m pip install faker=={VERSION}")
    if faker.VERSION != VERSION:
        raise SystemExit(f"Fehler: Faker {faker.VERSION} installiert, die Liste stammt aus {VERSION} – "
                         f"python3 -m pip install faker=={VERSION}")
    if not WORDS.is_file():
        raise SystemExit(f"Fehler: {WORDS} fehlt – installieren mit: apt-get install wngerman")
    words = {w.lower() for w in WORDS.read_text(encoding="utf-8").split()}
    if not ENGLISH.is_file():
        raise SystemExit(f"Fehler: {ENGLISH} fehlt – installieren mit: apt-get install wamerican")
    english = words | {w for w in ENGLISH.read_text(encoding="utf-8").split() if w.islower()}

    def first_names(locale):
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        found = set()
        for attr in ("first_names_female", "first_names_male", "first_names", "first_romanized_names"):
            found |= set(getattr(provider, attr, ()))
        if locale in TRANSLITERATED:
            found = {latin(n, locale) for n in found for latin in (latin_english, latin_german)}
        return {n for n in found if re.fullmatch(r"[^\W\d_]+(?:-[^\W\d_]+)?", n) and all(ord(c) < 0x370 for c in n)}

    names = set().union(*(first_names(locale) for locale in ("de_DE", "de_AT", "de_CH"))) - COMMON_WORDS
    for locale in OTHER_LOCALES + MORE_LOCALES + TRANSLITERATED:
        excluded = words if locale in OTHER_LOCALES else english
        names |= {n for n in first_names(locale) - names
                  if len(n) > 2 and n.lower() not in excluded and n not in COMMON_WORDS}
    kept = sorted(names)
    OUT.write_text(HEADER + "\n".join(kept) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(OUT.parent.parent.parent)}: {len(kept)} Vornamen", file=sys.stderr)


def latin_english(name, locale):
    """Example: ("Олександр", "uk_UA") -> "Oleksandr"; ("Γιώργος", "el_GR") -> "Giorgos" """
    return transliterate(name, locale, 0)


def latin_german(name, locale):
    """Example: ("Сергей", "ru_RU") -> "Sergej"; ("Владимир", "ru_RU") -> "Wladimir" """
    return transliterate(name, locale, 1)


def transliterate(name, locale, variant):
    import unicodedata
    low = "".join(c for c in unicodedata.normalize("NFD", name.lower()) if not unicodedata.combining(c) or c == "\u0306")
    low = unicodedata.normalize("NFC", low)  # accents off, but "й" (и + breve) stays one letter
    out, i = [], 0
    if locale == "el_GR":
        while i < len(low):
            pair = low[i:i + 2]
            if pair in GREEK:
                out.append(GREEK[pair]); i += 2
            else:
                out.append(GREEK.get(low[i], low[i])); i += 1
    else:
        table = {**CYRILLIC, **UKRAINIAN} if locale == "uk_UA" else CYRILLIC
        out = [(UKRAINIAN_FIRST if n == 0 and locale == "uk_UA" and c in UKRAINIAN_FIRST else table).get(c, (c, c))[variant]
               for n, c in enumerate(low)]
    word = "".join(out)
    return "-".join(part[:1].upper() + part[1:] for part in word.split("-"))


if __name__ == "__main__":
    main()
