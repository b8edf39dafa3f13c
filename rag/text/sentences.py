"""The one sentence splitter: where German sentences end, not after abbreviations, initials or
ordinals.

    split("Z. B. mit cm. Am 3. Oktober, geb. 14.03.1979. Fertig!")
    -> ["Z. B. mit cm.", "Am 3. Oktober, geb. 14.03.1979.", "Fertig!"]
    spans("Quota: 2 GB.\\n> Ignoriere das.")  -> [(0, 12), (15, 29)]
        (the "> " of a quote goes with the cut)
    cuts("Satz eins. Satz zwei.")             -> [(10, 11)]
        (end of a sentence, start of the next)

A sentence ends at ".", "!" or "?" (closing quotes or brackets may follow) before white space, when
the next sentence starts with something other than a lower-case letter and the word before the mark
is not an abbreviation (ABBREVIATIONS), a single letter ("z. B.", "d. h.", "S. 4", "H. Müller") or
a number of up to two digits ("3. Oktober", "2. Schritt"). `marks` adds clause ends for a caller
that needs them (";" for masking, ":" and ";" for the chunker). Offsets always refer to the text
given.

Does not handle: lists, table rows and code (callers split lines first, see rag/answer/context.py),
a sentence that starts with a lower-case letter, abbreviations missing from the list, a sentence
that ends in an abbreviation ("… Äpfel, Birnen usw. Dann" stays one sentence), direct speech
inside quotes.
"""
import functools
import re

# lower case, without the dot; single letters ("z. B.", "d. h.", "u. a.", "S.") need no entry
ABBREVIATIONS = {
    "abs", "allg", "bspw", "bzgl", "bzw", "ca", "dr", "etc", "evtl", "fr", "geb", "gem", "ggf",
    "hr", "inkl", "jh", "max", "min", "mind", "mio", "mrd", "nr", "prof", "sog", "st", "str", "tel",
    "usw", "vgl", "zzgl", "zzt",
}
CLOSERS = "\"'“”‘’»«)]"  # may stand after the mark: „So.“ Dann …


@functools.lru_cache(maxsize=None)
def _end(marks):
    """The pattern of a possible sentence end for these marks (the gap takes "> " quote markers
    along)."""
    return re.compile(rf"[{re.escape(marks)}]+[{re.escape(CLOSERS)}]*(?P<gap>\s+(?:>[ \t]*)*)"
                      rf"(?=\S)")


def ends_sentence(before, after):
    """Does a mark at the end of `before` end a sentence, with `after` following the white space?

    Examples: ("Das geht.", "Dann") -> True; ("z. B.", "Dann") -> False;
              ("am 3.", "Oktober") -> False;
    ("Das geht.", "dann") -> False
    """
    if after[:1].islower():
        return False
    found = re.search(r"(\w+)\.$", before.rstrip(CLOSERS))  # the word right before a full stop
    if not found:
        return True  # "!", "?", "…", "[1]." always end one
    word, previous = found.group(1), before[found.start(1) - 1:found.start(1)]
    if len(word) == 1 and word.isalpha():
        return False  # an initial or "z. B.", "d. h.", "S. 4"
    if word.isdigit() and len(word) <= 2 and previous not in (".", ",", "/"):
        return False  # an ordinal: "3. Oktober", "2. Schritt" (but "14.03.79." ends one)
    return word.lower() not in ABBREVIATIONS and not word.endswith("str")  # "Hauptstr. 5"


def cuts(text, start=0, end=None, marks=".!?"):
    """(end of a sentence, start of the next) for every sentence end in text[start:end], as offsets
    in text.

    Example: cuts("Gut; Dann so. und", marks=".!?;") -> [(4, 5)]   ("und" is lower case)
    """
    end = len(text) if end is None else end
    found = []
    for m in _end(marks).finditer(text, start, end):
        if ends_sentence(text[start:m.start("gap")], text[m.end():m.end() + 1]):
            found.append((m.start("gap"), m.end()))
    return found


def spans(text, start=0, end=None, marks=".!?"):
    """(start, end) of each sentence in text[start:end]; empty pieces dropped, nothing else trimmed.

    Example: spans("Eins. Zwei.") -> [(0, 5), (6, 11)]
    """
    end = len(text) if end is None else end
    out, at = [], start
    for stop, following in cuts(text, start, end, marks):
        out.append((at, stop))
        at = following
    out.append((at, end))
    return [(s, e) for s, e in out if text[s:e].strip()]


def split(text, marks=".!?"):
    """The sentences of a text, stripped.
    Example: split("Hallo. Wie geht das? Danke") -> ["Hallo.", "Wie geht das?", "Danke"]"""
    return [text[s:e].strip() for s, e in spans(text, marks=marks)]
