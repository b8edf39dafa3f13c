"""The proof that a page is forgotten: its distinctive strings, taken before deletion, searched byte
for byte.

    needles(["Kunde Quarkbrot-Zentrale, Kundennummer 4711-080815"], ["Mailbox anlegen …"],
            ["kunden/x.md"])
    -> ["4711-080815", "Kundennummer", "Quarkbrot", "Zentrale", "kundennummer", "quarkbrot",
        "zentrale"]
    scan(["knowledge.db", "knowledge.db-wal", "knowledge.audit.jsonl"], ["Quarkbrot", …])
    -> {}      (or {"knowledge.db-wal": 3}: the file that still holds them, and how often)

A needle is one of the page's longest words (NEEDLE_MIN letters or more, no digits) or its numbers
written with separators (NUMBER_MIN digits or more, "4711-0815") that no other page contains, not
even inside a longer word, and that is not part of the page's path (the receipt keeps the path) or
of rag/text/german.py's BASE_WORDS (every index keeps those). Each is searched as written and as
the search index stores it (lowercase, umlauts folded: rag/text/german.py), as UTF-8 bytes.

Does not handle: text that a file keeps compressed or split (PostgreSQL's TOAST compresses long
rows: the check there runs through SQL too, rag/store/postgres_erase.py leftovers), words shorter
than NEEDLE_MIN.
"""
import mmap
import os
import re
import unicodedata

from rag.text import german

NEEDLES = 12  # distinctive words and numbers per page, longest first
# letters of a word that may be a needle (shorter ones occur by chance inside other bytes)
NEEDLE_MIN = 6
NUMBER_MIN = 6  # digits of a number that may be a needle ("2" or "2024" occur everywhere)
# numbers with separators only: bare digits occur in every vector's JSON text (docs.embedding),
# "4711-0815" or "0221 4711 0815" in none of them
NUMBER = re.compile(r"\d+(?:[-./: ]\d+)+")


def candidates(text):
    """The page's words and numbers that are long enough, longest first, then alphabetical.

    Example: "Quarkbrot, Tel. 0221 4711-0815, 24 Äpfel" -> ["0221 4711-0815", "Quarkbrot"]
    """
    text = unicodedata.normalize("NFC", text)
    found = {w for w in german.WORD.findall(text)
             if len(w) >= NEEDLE_MIN and not any(c.isdigit() for c in w)}
    found |= {n for n in NUMBER.findall(text) if sum(c.isdigit() for c in n) >= NUMBER_MIN}
    return sorted(found, key=lambda w: (-len(w), w))


def needles(texts, others, paths=(), limit=NEEDLES):
    """Byte strings to search for: the page's `limit` longest distinctive words and numbers, each as
    written and folded; `others`: every other text of the index (a needle must occur in none of
    them)."""
    # the base words are in every index's vocabulary
    elsewhere = "\n".join([*others, *sorted(german.BASE_WORDS)])
    elsewhere += ("\n" + german.fold(elsewhere) + "\n" + "\n".join(paths) + "\n"
                  + german.fold("\n".join(paths)))
    chosen = []
    for word in candidates("\n".join(texts)):
        forms = {word, german.fold(word)}
        if any(form in elsewhere for form in forms):
            continue
        chosen.append(word)
        if len(chosen) == limit:
            break
    return sorted({form for word in chosen for form in (word, german.fold(word))})


def count_in(path, needles):
    """How often the needles' UTF-8 bytes occur in one file (0 for an empty or unreadable one)."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return 0
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return sum(occurrences(data, needle.encode("utf-8")) for needle in needles)
    except (FileNotFoundError, PermissionError):
        return 0


def occurrences(data, needle):
    """Example: occurrences(b"abcabc", b"bc") -> 2"""
    hits, at = 0, data.find(needle)
    while at != -1:
        hits, at = hits + 1, data.find(needle, at + 1)
    return hits


def scan(files, needles):
    """{file: hits} of the files that still hold a needle; {} is the proof. Files are searched in
    the order given."""
    found = {}
    for path in files:
        hits = count_in(path, needles)
        if hits:
            found[path] = hits
    return found
