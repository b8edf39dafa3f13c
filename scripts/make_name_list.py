#!/usr/bin/env python3
"""Write rag/data/vornamen.txt: first names from Faker (MIT licence), German and those of other languages
common in German-speaking workplaces.

    python3 -m pip install faker==40.54.0 && apt-get install wngerman && python3 scripts/make_name_list.py

Faker (https://pypi.org/project/Faker/, MIT licence, Copyright (c) 2012 Daniele Faraglia) ships
first-name lists per locale; the MIT licence allows copying them with its notice, which heads the
data file. All names of de_DE, de_AT and de_CH are taken except COMMON_WORDS ("August", "Roman",
"Rose", "Mark", "Kai": German words), because rag/names.py takes a listed first name followed by a
capitalised word for a person. From OTHER_LOCALES (Turkish, Polish, Italian, …) only names that
are no word of Debian's German word list (wngerman, /usr/share/dict/ngerman; "Anders", "Amber" …
are dropped) – the word list only filters, nothing of it is copied. Abbreviations ("H.-Dieter"),
names with a space and names in other scripts are left out.

Does not handle: first names Faker does not list (the list is a signal, the contexts in
rag/names.py do the rest).
"""
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "rag" / "data" / "vornamen.txt"
VERSION = "40.54.0"  # the Faker release the list comes from
OTHER_LOCALES = ("tr_TR", "pl_PL", "it_IT", "hr_HR", "cs_CZ", "es_ES", "pt_PT", "fr_FR", "nl_NL", "da_DK", "sv_SE",
                 "no_NO", "en_GB", "vi_VN")  # names of colleagues in German-speaking firms
WORDS = Path("/usr/share/dict/ngerman")  # Debian's wngerman: German words, to filter the other locales' names
COMMON_WORDS = {  # first names that are also German nouns or words a wiki uses ("Roman", "Marine", "Solange")
    "Ada", "Alba", "Alexa", "Angel", "Ariane", "August", "Baptist", "Delphine", "Eliza", "Ernst", "Flora", "Gloria",
    "Grace", "Gretchen", "Hagen", "Heide", "Holm", "Jack", "Jesus", "Jordan", "Joy", "Kai", "Laure", "Lore", "Luke",
    "Marine", "Mark", "Maxime", "Medina", "Mentor", "Mercedes", "Merlin", "Milan", "Paris", "Roman", "Romane",
    "Rose", "Ruby", "Silvester", "Solange", "Tara", "Traute", "Trudel", "Van", "Viola",
    "Siri", "Mate", "Maxi", "Love", "May", "June", "Vega", "Dawn", "Gun", "Odd", "Toy"}  # (and English words)
HEADER = f"""\
# Vornamen (first names), one per line, for rag/names.py.
# Source: Faker {VERSION} (https://pypi.org/project/Faker/), faker/providers/person/<locale>: the first
# names of de_DE, de_AT and de_CH without common German words, and of {", ".join(OTHER_LOCALES)}
# without words of the German word list. Regenerate (see the script's docstring):
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

    def first_names(locale):
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        found = set()
        for attr in ("first_names_female", "first_names_male", "first_names"):
            found |= set(getattr(provider, attr, ()))
        return {n for n in found if re.fullmatch(r"[^\W\d_]+(?:-[^\W\d_]+)?", n) and all(ord(c) < 0x370 for c in n)}

    names = set().union(*(first_names(locale) for locale in ("de_DE", "de_AT", "de_CH"))) - COMMON_WORDS
    for locale in OTHER_LOCALES:
        names |= {n for n in first_names(locale) - names
                  if len(n) > 2 and n.lower() not in words and n not in COMMON_WORDS}
    kept = sorted(names)
    OUT.write_text(HEADER + "\n".join(kept) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(OUT.parent.parent.parent)}: {len(kept)} Vornamen", file=sys.stderr)


if __name__ == "__main__":
    main()
