#!/usr/bin/env python3
"""Write rag/data/vornamen.txt: the German, Austrian and Swiss first names of Faker (MIT licence).

    python3 -m pip install faker==40.54.0 && python3 scripts/make_name_list.py

Faker (https://pypi.org/project/Faker/, MIT licence, Copyright (c) 2012 Daniele Faraglia) ships
first-name lists for de_DE, de_AT and de_CH; the MIT licence allows copying them with its notice,
which heads the data file. Names that are also common German words ("August", "Roman", "Rose",
"Mark", "Kai") are left out, because rag/names.py takes a listed first name followed by a
capitalised word for a person; so are abbreviations ("H.-Dieter") and names with a space.

Does not handle: first names Faker does not list (the list is a signal, the contexts in
rag/names.py do the rest).
"""
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "rag" / "data" / "vornamen.txt"
VERSION = "40.54.0"  # the Faker release the list comes from
COMMON_WORDS = {  # first names that are also German nouns or words a wiki uses ("Roman", "Marine", "Solange")
    "Ada", "Alba", "Alexa", "Angel", "Ariane", "August", "Baptist", "Delphine", "Eliza", "Ernst", "Flora", "Gloria",
    "Grace", "Gretchen", "Hagen", "Heide", "Holm", "Jack", "Jesus", "Jordan", "Joy", "Kai", "Laure", "Lore", "Luke",
    "Marine", "Mark", "Maxime", "Medina", "Mentor", "Mercedes", "Merlin", "Milan", "Paris", "Roman", "Romane",
    "Rose", "Ruby", "Silvester", "Solange", "Tara", "Traute", "Trudel", "Van", "Viola"}
HEADER = f"""\
# Vornamen (first names), one per line, for rag/names.py.
# Source: Faker {VERSION} (https://pypi.org/project/Faker/), faker/providers/person/de_DE, de_AT and
# de_CH: first_names_female + first_names_male, without names that are common German words.
# Regenerate: python3 -m pip install faker=={VERSION} && python3 scripts/make_name_list.py
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
    try:
        import faker
        from faker.providers.person import de_AT, de_CH, de_DE
    except ImportError:
        raise SystemExit(f"Fehler: Faker fehlt – installieren mit: python3 -m pip install faker=={VERSION}")
    if faker.VERSION != VERSION:
        raise SystemExit(f"Fehler: Faker {faker.VERSION} installiert, die Liste stammt aus {VERSION} – "
                         f"python3 -m pip install faker=={VERSION}")
    names = set()
    for module in (de_DE, de_AT, de_CH):
        names |= set(module.Provider.first_names_female) | set(module.Provider.first_names_male)
    kept = sorted(n for n in names if re.fullmatch(r"[^\W\d_]+(?:-[^\W\d_]+)?", n) and n not in COMMON_WORDS)
    OUT.write_text(HEADER + "\n".join(kept) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(OUT.parent.parent.parent)}: {len(kept)} Vornamen", file=sys.stderr)


if __name__ == "__main__":
    main()
