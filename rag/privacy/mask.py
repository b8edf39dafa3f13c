"""Mask German personal data with numbered placeholders, or flag the sources that hold it.

    mask("IBAN DE89 3704 0044 0532 0130 00 = DE89370400440532013000", Masker())
    -> "IBAN [IBAN 1] = [IBAN 1]"
    parse_kinds("-ADRESSE,-PLZ-ORT") -> every kind but those two
    flags("Tel. 030 23125123") -> [{"rule": "pii:telefon", "match": "1×"}]

rag/privacy/detect.py finds the values and decides which stay readable (business contacts,
RAG_PII_KEEP); here they are replaced. Each kind can be switched off (parse_kinds: RAG_PII_KINDS /
--pii-kinds "-ADRESSE,-PLZ-ORT"), values listed in RAG_PII_KEEP stay (parse_keep), and what stayed
is Masker.kept (ask_rag.py --explain: "Telefon behalten: 0421 555 3090 (Hotline)", describe_kept).

Masker gives the same value the same placeholder within one answer ("[IBAN 1]" everywhere), after
normalising it (IBAN without spaces, +49 30 … = 030 …, e-mail in lower case), and a surname or
first name alone the placeholder of the full name it belongs to; a value it has masked once is
masked again where it comes back without its context (an answer that writes only "Weber").

Does not handle: values the finders miss (see rag/privacy/detect.py), two persons with the same
surname (a bare "Weber" then takes the first one's placeholder), a masked value that comes back in
another spelling without its context (mask_known compares values as written).
"""
import dataclasses
import re
from collections import Counter

from rag.privacy import detect
from rag.privacy.name_words import AFTER_ARTICLE, PARTICLES

# --pii / RAG_PII: replace values, only flag the sources, do nothing
MODES = ("mask", "flag", "off")
# for "Telefon behalten: …"
LABELS = {"E-MAIL": "E-Mail", "TELEFON": "Telefon", "NAME": "Name", "ADRESSE": "Adresse",
          "PLZ-ORT": "PLZ und Ort", "STEUERNUMMER": "Steuernummer", "GEBURTSDATUM": "Geburtsdatum"}


# -- what is masked, what stays --------------------------------------------------------------------
def parse_keep(spec):
    """RAG_PII_KEEP / --pii-keep: comma-separated values or patterns (* ?), each optionally "KIND:".

    Example: parse_keep("0421 555*, NAME:Henrik Lorenzen")
             -> [(None, "0421 555*"), ("NAME", "Henrik Lorenzen")]
    """
    entries = []
    for item in (spec or "").split(","):
        item = item.strip()
        kind, _, rest = item.partition(":")
        if rest and kind.strip().upper() in detect.KINDS:
            entries.append((kind.strip().upper(), rest.strip()))
        elif item:
            entries.append((None, item))
    return entries


def parse_kinds(spec):
    """RAG_PII_KINDS / --pii-kinds: which kinds are masked. Raises ValueError (German) for unknown
    kinds.

    Examples: parse_kinds("") -> all detect.KINDS; parse_kinds("-ADRESSE,-PLZ-ORT")
              -> all but those two;
    parse_kinds("IBAN,TELEFON") -> only those two; parse_kinds("alle,-NAME") -> all but NAME
    """
    items = [item.strip().upper() for item in (spec or "").split(",") if item.strip()]
    chosen = {item.lstrip("+") for item in items if not item.startswith("-")}
    dropped = {item[1:].strip() for item in items if item.startswith("-")}
    unknown = sorted((chosen | dropped) - set(detect.KINDS) - {"ALLE", "ALL"})
    if unknown:
        raise ValueError(f"unbekannte Art {unknown[0]} – bekannt sind {', '.join(detect.KINDS)}")
    base = set(detect.KINDS) if not chosen or chosen & {"ALLE", "ALL"} else chosen
    return frozenset(base - dropped)


def describe_kept(kept):
    """Example: Kept("TELEFON", "0421 555 3090", "Hotline")
             -> "Telefon behalten: 0421 555 3090 (Hotline)" """
    return f"{LABELS.get(kept.kind, kept.kind)} behalten: {kept.value} ({kept.reason})"


# -- masking ---------------------------------------------------------------------------------------
def name_parts(name):
    """The words of a name that stand for it alone. Example: "Dr. Ursula von der Leyen"
    -> ["Ursula", "Leyen"]"""
    return [w for w in re.split(r"[\s,]+", name) if len(w) > 2 and not w.endswith(".")
            and w.lower() not in PARTICLES]


class Masker:
    """Placeholders for one answer: the same value always gets the same "[KIND n]".

    Example: m = Masker(); m.mask("030 23125123 oder +49 30 23125123")
             -> "[TELEFON 1] oder [TELEFON 1]"
    m.mask("Frau Weber …"), then m.mask("… schrieb Weber") -> "… schrieb [NAME 1]" (known
    values come back).
    Masker(active=False).mask(text) returns text unchanged (modes flag and off). kinds and keep as
    in detect.scan; kept collects the values left readable (Kept), each once, in the order met.
    """

    def __init__(self, active=True, kinds=None, keep=()):
        self.active, self.kinds, self.keep = active, kinds, keep
        self.numbers = {}  # (kind, normalised value) -> n
        self.words = {}  # a surname or first name of a masked NAME, upper case -> n
        # value or name word as written -> placeholder (masked again wherever it comes back)
        self.known = {}
        self.kept = []

    def find(self, text):
        matches, kept = detect.scan(text, self.kinds, self.keep)
        self.kept += [k for k in dict.fromkeys(kept) if k not in self.kept]
        return matches

    def readable(self):
        """The kept values that stayed readable everywhere: a value kept in one source (a signature
        under "Hotline") but masked in another (a table of persons) is masked in all, so it is not
        shown as kept."""
        return [k for k in self.kept if k.value not in self.known]

    def placeholder(self, kind, value):
        key = (kind, detect.normalise(kind, value))
        if key not in self.numbers:
            parts = name_parts(key[1]) if kind == "NAME" else []
            linked = [self.words[w] for w in parts if w in self.words]
            self.numbers[key] = (linked[-1] if linked
                                 else len({n for (k, _), n in self.numbers.items()
                                           if k == kind}) + 1)
            for w in parts:
                self.words.setdefault(w, self.numbers[key])
        placeholder = f"[{kind} {self.numbers[key]}]"
        self.known[value] = placeholder
        for w in name_parts(value) if kind == "NAME" else []:
            self.known.setdefault(w, placeholder)
        return placeholder

    def mask(self, text):
        if not self.active or not text:
            return text
        return mask(text, self)

    def mask_all(self, texts):
        """Mask several texts as one: every value found in any of them is masked in all ("Weber"
        alone in the first source, "Frau Weber" in the third).
        Example: ["Weber hat …", "Frau Weber"] -> ["[NAME 1] hat …", "Frau [NAME 1]"]"""
        if not self.active:
            return list(texts)
        found = [self.find(text) if text else [] for text in texts]
        for matches in found:
            for m in matches:
                self.placeholder(m.kind, m.value)
        out = []
        for text, matches in zip(texts, found):
            pieces, last = [], 0
            for m in matches:
                pieces += [text[last:m.start], self.placeholder(m.kind, m.value)]
                last = m.end
            out.append(self.mask_known("".join(pieces) + text[last:]) if text else text)
        return out

    def mask_known(self, text):
        """Mask values met before wherever they stand alone again (a name word not after an
        article)."""
        for value in sorted(self.known, key=len, reverse=True):
            pattern = r"(?<![\w@.+-])" + re.escape(value) + r"(?![\w@-])"
            text = re.sub(pattern, lambda m: m.group()
                          if AFTER_ARTICLE.search(text[max(0, m.start() - 8):m.start()])
                          and " " not in value else self.known[value], text)
        return text


def mask(text, table=None):
    """`text` with every value replaced by its placeholder from `table` (a Masker; new one if
    None)."""
    table = Masker() if table is None else table
    out, last = [], 0
    for m in table.find(text):
        out += [text[last:m.start], table.placeholder(m.kind, m.value)]
        last = m.end
    return table.mask_known("".join(out) + text[last:])


# -- ask time --------------------------------------------------------------------------------------
def flags(text, table=None):
    """Source flags for flag mode. Example: flags("Tel. 030 23125123")
    -> [{"rule": "pii:telefon", "match": "1×"}]"""
    found = (table or Masker()).find(text)
    kinds = sorted(Counter(m.kind for m in found).items(), key=lambda kv: detect.KINDS.index(kv[0]))
    return [{"rule": f"pii:{kind.lower()}", "match": f"{n}×"} for kind, n in kinds]


def protect(question, sources, mode, kinds=None, keep=()):
    """(question, sources, masker) as the prompt, the output and the audit log may show them.

    mask: copies of the sources with content, heading and flag texts masked, the question masked,
          all with one Masker (so "[IBAN 1]" means one value everywhere); mask the answer with it
          too.
    flag: the text as it is; sources with personal data get flags such as "pii:iban".
    off:  everything unchanged. The objects passed in are never changed.
    kinds, keep: see detect.scan; masker.kept lists what stayed readable (mask and flag).
    """
    if mode == "off":
        return question, list(sources), Masker(active=False)
    masker = Masker(active=mode == "mask", kinds=kinds, keep=keep)
    if mode == "flag":
        return question, [dataclasses.replace(s, flags=s.flags
                                              + flags(s.heading + "\n" + s.content, masker))
                          for s in sources], masker
    texts = [question] + [t for s in sources
                          for t in (s.content, s.heading, *(f["match"] for f in s.flags))]
    masked = iter(masker.mask_all(texts))  # the question's values get the low numbers
    question = next(masked)
    shown = []
    for s in sources:
        content, heading = next(masked), next(masked)
        shown.append(dataclasses.replace(s, content=content, heading=heading,
                                         flags=[{**f, "match": next(masked)} for f in s.flags]))
    return question, shown, masker
