"""Which parts of the retrieved chunks the model sees: whole sentences, list items, table rows and
code blocks that bear on the question, and whether the question asks how to do something.

    kind("Wie lege ich in Cyrus IMAP eine neue Mailbox an?")  -> "howto"
    kind("Wie lange ist die Kündigungsfrist?")                -> "fact"
    select(question, sources, terms, weights, vocab, "howto", procedure=1)
    -> ([the shortened text of each source, in order], 2)
       (2: the procedure, kept whole, is source [2])

Why: four chunks of 1,200 characters each are ~950 prompt tokens, 6.6 s before the first token on
2 cores, and a 1.5B model copies the wrong one. What a source keeps:
  - for a how-to question, the procedure the chooser picked (a chunk with a numbered list or a
    code block, rag/answer/choose.py procedure) stays whole, as the wiki gives it, but a numbered
    list shows only its steps, each cut to its first sentence (steps());
  - otherwise a source that fits its share of BUDGET is shown whole; a longer one keeps its units
    that cover the question best, at least its best one, in their order in the chunk, until its
    share is used. (Whole when it fits: a table row that names none of the question's words was
    dropped although there was room, and "Wie viel Speicherplatz hat eine normale Mailbox?" lost the
    row "Mitarbeitende (Standard) | 2 GB".)
(By default the model does not write a how-to answer at all: the section rag/answer/choose.py picks
is shown verbatim; the procedure it picks, kept whole here, serves --steps model and the check's
prompt.)
Units (rag/text/units.py) are never cut or rewritten: what the model sees is verbatim wiki text (so
is the evidence, rag/check/support.py). A unit's score is the IDF-weighted share of the question's
content words in it, with the German matching of the search (compounds, stems, umlauts;
rag/text/german.py).

Does not handle: meaning beyond shared words (a unit that answers in other words scores 0 and is
kept only as its source's best unit), lists nested in tables, headings inside a chunk.
"""
import re

from rag import tuned
from rag.text import german, pointers, sentences
from rag.text.units import NUMBERED, units

BUDGET = tuned.value("context.BUDGET")  # characters of source text in the prompt, all sources
FIRST_SHARE = tuned.value("context.FIRST_SHARE")  # the first source's share of BUDGET
KEEP_RATIO = tuned.value("context.KEEP_RATIO")  # kept while a unit scores this share of the best

# "wie lange …?" asks for a fact
QUANTITY = (r"(?:lang\w*|viel\w*|hoch|gro(?:ß|ss)|oft|alt|weit|schnell|teuer|spät|spaet|früh|"
            r"frueh|schwer|breit|heißt|heisst|hei(?:ß|ss)en|lautet|war|ist|sind)\b")
# a question that asks for a procedure ("Wie lege ich … an?", "Was muss ich tun, wenn …")
HOWTO = re.compile(
    rf"\bwie\s+(?!{QUANTITY})\w+|"
    r"\bwas\s+(?:muss|müssen|muessen|soll|sollte|kann|mache|tue|prüfe|pruefe)\s+(?:ich|man|wir)"
    r"\b|\bwas\s+(?:tun|hilft)\b|\bwas\s+ist\s+(?:\w+\s+)?zu\s+beachten\b|\breihenfolge\b|"
    r"\bwelche\s+schritte\b|\bschritt\s+für\s+schritt|\banleitung\b|^\s*wo\s+(?:richte|stelle|"
    r"lege|trage)\b", re.I)
HOWTO_WORDS = re.compile(  # verbs of a procedure anywhere in the question
    r"\b(?:einrichten|anlegen|installieren|zurücksetzen|zuruecksetzen|wiederherstellen|beantragen|"
    r"konfigurieren|aktivieren|deaktivieren|verbinden|bestellen|einbinden|freigeben|sperren|"
    r"entsperren|melden|tauschen|austauschen|umziehen|löschen|loeschen|hinzufügen|hinzufuegen|"
    r"starten|neu\s+starten|aktualisieren|updaten|einstellen|ändern|aendern|vorgehen)\b", re.I)


def kind(question, sources=()):
    """"howto" when the question asks for a procedure, else "fact".

    A question is a how-to question by its words ("Wie lege ich …", "Was muss ich tun, wenn …",
    "… einrichten?"); a "wie" question that asks for a quantity or a name ("Wie lange …", "Wie
    heißt …") is a fact question. `sources` is unused: the shape of a source did not help
    (measured, docs/messwerte.md).
    """
    if HOWTO.search(question):
        return "howto"
    if (re.match(r"^\s*(?:kann|muss|darf|soll)\s+(?:ich|man)\b", question, re.I)
            and HOWTO_WORDS.search(question)):
        return "fact"  # "Kann ich … löschen?" asks yes or no
    if (HOWTO_WORDS.search(question)
            and re.search(rf"\b(?:wie(?!\s+{QUANTITY})|was)\b", question, re.I)):
        return "howto"
    return "fact"


def score(text, terms, weights, vocab):
    """IDF-weighted share of the question's content words in a text (0…1).

    Example: terms "quota" (2.0) and "mailbox" (1.0), text "Die Quota setzen" -> 2/3
    """
    tokens = set(german.index_text(text, vocab).split())
    total = sum(weights) or 1.0
    return sum(w for term, w in zip(terms, weights) if term.found_in(tokens)) / total


def steps(content):
    """The procedure as the model sees it: its numbered steps, each cut to its first sentence (plus
    the first later sentence with a `command` when the first has none); the other units only when
    there are no numbered steps (then code blocks and sentences stay whole). Every piece is
    verbatim.

    Example: "Intro.\n1. Mit `sq` setzen. Der Wert in KB.\n2. Prüfen. Dann `lm` aufrufen." ->
             "1. Mit `sq` setzen.\n2. Prüfen. Dann `lm` aufrufen."
    """
    parts = units(content)
    numbered = [u for u in parts if u.kind == "item" and NUMBERED.match(u.text)]
    if len(numbered) < 2:
        return content
    out = []
    for item in numbered:
        marker = NUMBERED.match(item.text).group(0)
        said = sentences.split(" ".join(line.strip()
                                        for line in item.text[len(marker):].split("\n")))
        keep = said[:1]
        if said and "`" not in said[0]:
            keep += [s for s in said[1:] if "`" in s][:1]
        out.append(marker.strip() + " " + " ".join(keep))
    return "\n".join(out)


def shorten(source, terms, weights, vocab, budget):
    """The whole source when it fits `budget` characters, else its best units in chunk order, at
    least one, within `budget` (whole units)."""
    parts = units(source.content)
    if not parts or len(source.content) <= budget and not any(pointers.is_pointer(u.text)
                                                              for u in parts):
        return source.content  # whole, unless a pointer would be shown for its words (unit_score)
    scored = [(unit_score(u.text, terms, weights, vocab), i) for i, u in enumerate(parts)]
    top = max(s for s, _ in scored)
    ranked = sorted(scored, key=lambda t: (-t[0], t[1]))  # best first, ties by position
    keep, used = set(), 0
    for s, i in ranked:
        size = len(parts[i].text) + 1
        if keep and (s < KEEP_RATIO * top or s == 0 or used + size > budget):
            continue
        keep.add(i)
        used += size
    return "\n".join(parts[i].text for i in sorted(keep))


def unit_score(text, terms, weights, vocab):
    """score() of one unit; a pointer says where, not what: its words do not make it a source's best
    unit (0)."""
    return 0.0 if pointers.is_pointer(text) else score(text, terms, weights, vocab)


def best_unit(source, terms, weights, vocab):
    """The share of the question its best unit covers (0…1), as shorten() ranks units."""
    return max((unit_score(u.text, terms, weights, vocab) for u in units(source.content)),
               default=0.0)


def fact_reads(sources, terms, weights, vocab, k):
    """Indices (in rank order) of the k sources a fact answer's model reads: the best-ranked source,
    then the k-1 others whose best unit covers most of the question (ties: the better rank). Reading
    two sources instead of four halves the prompt; taking the second by its best unit keeps the one
    that holds the answer's words.

    Example: best units 0.75, 0.25, 0.75, 0.25, k=2 -> [0, 2]
    """
    if len(sources) <= k:
        return list(range(len(sources)))
    rest = sorted(range(1, len(sources)),
                  key=lambda n: (-best_unit(sources[n], terms, weights, vocab), n))
    return sorted([0, *rest[:k - 1]]) if k > 0 else []


def select(question, sources, terms, weights, vocab, question_kind=None, whole_chunks=False,
           read=None, procedure=None):
    """(the text each source shows the model, in source order; the 1-based number of the procedure
    kept whole, or None) — see the module docstring. whole_chunks: every source as it is (as in
    the post). read: a fact answer's model reads only this many sources (fact_reads()); the
    others' text is None. procedure: a how-to question's procedure, the position the chooser
    picked (rag/answer/choose.py)."""
    question_kind = question_kind or kind(question, sources)
    if question_kind == "fact" and read is not None and not whole_chunks and len(sources) > read:
        reads = fact_reads(sources, terms, weights, vocab, read)
        texts, _ = select(question, [sources[n] for n in reads], terms, weights, vocab, "fact")
        shown = dict(zip(reads, texts))
        return [shown.get(n) for n in range(len(sources))], None
    whole = procedure if question_kind == "howto" else None
    if whole_chunks:
        return [s.content for s in sources], None if whole is None else whole + 1
    left = BUDGET - (len(sources[whole].content) if whole is not None else 0)
    others = len(sources) - (whole is not None)
    out = []
    for n, source in enumerate(sources):
        if n == whole:
            out.append(steps(source.content))
            left += len(source.content) - len(out[-1])
            continue
        share = (int(BUDGET * FIRST_SHARE) if n == 0 and whole is None
                 else max(left, 0) // max(others, 1))
        text = shorten(source, terms, weights, vocab, share)
        out.append(text)
        left, others = left - len(text), others - 1
    return out, None if whole is None else whole + 1
