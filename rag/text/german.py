"""German-aware search text: one function for the index and for the query, so both meet.

    fold("Kündigungsfrist GRÖSSE Straße")   -> "kuendigungsfrist groesse strasse"
    search_tokens("Kündigungsfrist", vocab)  -> ["kuendigungsfrist", "kundigungsfrist",
                                                 "kuendigung", "frist", ...]

Steps: NFC, lowercase, ä/ö/ü → ae/oe/ue and ß → ss (SQLite's remove_diacritics would make ä
→ a, so folding happens here); for words that had an umlaut, the plain-vowel spelling
("kundigung") is added too; compounds are split against a vocabulary (words of the wiki itself plus
a small built-in list) with German linking elements, the whole word kept; a coarse suffix stem is
added for every word and part ("ersatzteilen", "ersatzteile" → "ersatzteil"), and for a word with
an umlaut the stem of its plain spelling too, so an umlaut that inflects meets its base form
("Größe" → "gross" as "groß", "Verträge" → "vertrag"). Stopwords are dropped from queries
only.

Does not handle: real morphology (no lemmatiser), English stemming, split verbs ("legt … an").
"""
import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

# Changes to this file change the search text: the index notices and rebuilds its FTS rows.
SEARCH_VERSION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]

FOLD = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "ẞ": "ss"})
PLAIN = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss", "ẞ": "ss"})
WORD = re.compile(r"[^\W_]+")  # letters and digits; "§", "-", "/" and "_" separate words
MONTH_NAMES = ["januar jan jänner", "februar feb", "märz mär mrz marz", "april apr", "mai",
               "juni jun", "juli jul", "august aug", "september sep sept", "oktober okt",
               "november nov", "dezember dez"]
# as written ("märz") and folded ("maerz") -> 3
MONTHS = {spelling: number for number, names in enumerate(MONTH_NAMES, 1) for name in names.split()
          for spelling in (name, name.translate(FOLD))}

MIN_PART = 4  # shortest compound part ("frist", "mail", "netz" …)
MIN_COMPOUND = 8  # words shorter than this are never split
LINKING = ("", "s", "es", "n", "en", "er", "e")  # Fugenelemente, tried in this order
# separable verbs: "anlegen" -> also "legen"
PREFIXES = ("zurueck", "weiter", "heraus", "herunter", "hinzu", "nach", "frei", "fest", "auf",
            "aus", "ein", "vor", "mit", "weg", "ab", "an", "zu", "um")
SUFFIXES = ("ungen", "innen", "heiten", "keiten", "ern", "en", "er", "es", "em", "e", "n", "s")

# Words that a small wiki may never use on their own but that appear inside compounds.
BASE_WORDS = """
frist fristen kuendigung zahlung bedingung bedingungen vertrag vertraege daten schutz
beauftragter passwort kennwort richtlinie drucker warteschlange ersatz teil teile
urlaub vertretung speicher platz begrenzung netz laufwerk konto zugang zugriff recht rechte
benutzer nutzer name adresse postfach mail ordner server dienst leistung umfang rechnung
sicherheit update system sperre sperrung schluessel zertifikat gruppe liste antrag
arbeit platz zeit stelle geraet geraete nummer plan wartung fehler meldung ticket
""".split()

STOPWORDS = set("""
aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes
auch auf aus bei bin bis bist da damit dann das dass dein deine dem den der des dessen dich die
dies diese diesem diesen dieser dieses dir doch dort du durch ein eine einem einen einer eines
er es etwas euch euer eure für fuer gibt hab habe haben hat hatte ich ihr ihre im in ist ja jede
jedem jeden jeder jedes kann kein keine kannst koennen können man mein meine mich mir mit muss
muß musst nach nicht nichts noch nun nur ob oder ohne sehr sein seine sich sie sind so soll
sollte sonst um und uns unser unsere unter viel vom von vor war waren warum was weil welche
welchem welchen welcher welches wenn wer werde werden wie wieder will wir wird wo wohin womit
worauf zu zum zur über ueber the a an of to is how what
bitte eigentlich denn mal gerne gern kriege krieg kriegt bekomme bekommt mache macht hab
komme kommt kommen meinen meinem meiner unsere unserem unseren gibt geht gehen muss müssen muessen
darf dürfen duerfen brauche braucht soll sollen wann wieso weshalb wozu lang lange viele wieviel
jemand jemandem jemanden etwa schon immer überhaupt ueberhaupt einfach genau
""".split())


def fold(text):
    """NFC, lowercase and ASCII-fold the German letters.

    Example: fold("SCHNÖSEL Straße") -> "schnoesel strasse"
    """
    return unicodedata.normalize("NFC", text).lower().translate(FOLD)


def words(text):
    """The folded words of a text, in order (keeps duplicates).

    Example: words("§ 4 Zahlungs-Bedingungen") -> ["4", "zahlungs", "bedingungen"]
    """
    return WORD.findall(fold(text))


def stem(word):
    """Coarse suffix stem; keeps at least MIN_PART letters.

    Example: stem("ersatzteilen") -> "ersatzteil"; stem("bedingungen") -> "bedingung"
    """
    if len(word) <= MIN_PART or word.isdigit():
        return word
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_PART:
            if suffix == "ungen":
                return word[:-len(suffix)] + "ung"
            return word[:-len(suffix)]
    return word


def known(word, vocab):
    return word in vocab or stem(word) in vocab


def split_compound(word, vocab, depth=0):
    """Split a folded word into known parts, trying linking elements; [] if it does not split.

    Prefers the split with the fewest parts, then the longest first part (deterministic).
    Example: split_compound("kuendigungsfrist", {"kuendigung", "frist"}) -> ["kuendigung", "frist"]
    """
    if len(word) < MIN_COMPOUND or depth > 3:
        return []
    best = None
    for i in range(len(word) - MIN_PART, MIN_PART - 1, -1):
        head, tail = word[:i], word[i:]
        for link in LINKING:
            if not head.endswith(link) or len(head) - len(link) < MIN_PART:
                continue
            first = head[:len(head) - len(link)] if link else head
            if not known(first, vocab):
                continue
            # "kuendigungs" is known through its stem: use the vocabulary form
            if first not in vocab:
                first = stem(first)
            if known(tail, vocab):
                parts = [first, tail]
            else:
                rest = split_compound(tail, vocab, depth + 1)
                if not rest:
                    continue
                parts = [first] + rest
            if best is None or len(parts) < len(best):
                best = parts
    return best or []


def expand(word, vocab):
    """All search tokens for one folded word: itself, its stem, its compound parts and their stems.

    Example: expand("kuendigungsfrist", {"kuendigung", "frist"})
             -> ["kuendigungsfrist", "kuendigung", "frist"]
    """
    tokens = [word, stem(word)]
    for part in split_compound(word, vocab):
        tokens += [part, stem(part)]
    verb = strip_prefix(word)
    if verb:
        tokens += [verb, stem(verb)]
    return list(dict.fromkeys(tokens))  # unique, order kept


def strip_prefix(word):
    """The verb without its separable prefix, so "lege … an" meets "anlegen"; None if none.

    Only for infinitive-like words ending in -en. Example: strip_prefix("anlegen") -> "legen"
    """
    if not word.endswith("en"):
        return None
    for prefix in PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 5:
            return word[len(prefix):]
    return None


def plain_variant(raw_word):
    """The spelling without umlaut dots ("Kündigung" -> "kundigung"), or None if it has none."""
    lowered = unicodedata.normalize("NFC", raw_word).lower()
    if lowered.translate(FOLD) == lowered:
        return None
    return lowered.translate(PLAIN)


def index_words(text):
    """The words index_text expands, as (raw, folded).

    Example: index_words("Größe 4") -> [("Größe", "groesse"), ("4", "4")]
    """
    return [(raw, fold(raw)) for raw in WORD.findall(unicodedata.normalize("NFC", text))]


def index_text(text, vocab):
    """The search text stored in the FTS index for a chunk (or a heading path).

    Example: index_text("Kündigungsfrist", {"kuendigung", "frist"})
             -> "kuendigungsfrist kuendigung frist kundigungsfrist"
    """
    out = []
    for raw, folded in index_words(text):
        tokens = expand(folded, vocab)
        plain = plain_variant(raw)
        if plain:
            tokens.append(plain)
            # the umlaut-free stem: "Verträge" -> "vertrag" meets "Vertrag"
            if stem(plain) not in tokens:
                tokens.append(stem(plain))
        out += tokens
    return " ".join(out)


def changed_words(folded_words, old, new):
    """The folded words whose search tokens differ between two vocabularies: only these change a
    search text.

    Example: changed_words({"kuendigungsfrist", "drucker"}, {"kuendigung", "frist"}, {"kuendigung"})
             -> {"kuendigungsfrist"}   ("frist" left the vocabulary, so the compound no longer
                splits)
    """
    return {w for w in folded_words if expand(w, old) != expand(w, new)}


TRUNCATE = 6  # loose matching: words of 7+ letters also match any word with the same first 6


@dataclass(frozen=True)
class Term:
    """One content word of a question and what may stand for it in a chunk."""
    word: str
    exact: tuple  # the word and its stem
    loose: tuple  # + compound parts, their stems, the separable-verb stem
    prefix: str = None  # first TRUNCATE letters ("aufbewahrt" ~ "aufbewahrung"), or None

    def found_in(self, tokens):
        """Does a chunk with these search tokens contain this term (in the loose sense)?"""
        if not tokens.isdisjoint(self.loose):
            return True
        return self.prefix is not None and any(t.startswith(self.prefix) for t in tokens)


def query_terms(question, vocab):
    """The content words of a question, stopwords dropped, in order, unique.

    Example: query_terms("Wie lang ist die Kuendigungsfrist?", {"kuendigung", "frist"})
             -> [Term("kuendigungsfrist", ("kuendigungsfrist",),
                      ("kuendigungsfrist", "kuendigung", "frist"), prefix="kuendi")]
    """
    terms, seen = [], set()
    for raw, word in index_words(question):
        if word in STOPWORDS or word in seen:
            continue
        seen.add(word)
        plain = plain_variant(raw)
        # "Größe" -> "gross", as "groß"
        umlaut_free = [stem(plain)] if plain and stem(plain) != plain else []
        exact = tuple(dict.fromkeys([word, stem(word)] + umlaut_free))
        loose = tuple(expand(word, vocab))
        prefix = word[:TRUNCATE] if len(word) > TRUNCATE and word.isalpha() else None
        terms.append(Term(word, exact, tuple(dict.fromkeys(exact + loose)), prefix))
    return terms


def learn_vocabulary(texts):
    """Words worth splitting compounds against: the folded words of the wiki plus BASE_WORDS.

    Only words of at least MIN_PART letters, no digits.
    """
    vocab = set(BASE_WORDS)
    for text in texts:
        for word in words(text):
            if len(word) >= MIN_PART and word.isalpha() and word not in STOPWORDS:
                vocab.add(word)
                vocab.add(stem(word))
    return vocab
