"""Which retrieved section a how-to answer shows verbatim: every source is a candidate, scored by a
weighted sum of signals a reader can check (`ask_rag.py --explain` prints them).

    sources: [1] vpn.md › VPN (cosine 0.91, "Siehe [Anleitung](vpn-client.md)."),
             [2] vpn.md › VPN › Client einrichten (cosine 0.90, "1. Client laden …\\n2. Anmelden …")
    signals(sources[1], 1, 0.91, terms, weights, vocab)
    -> Signals(rank=0.5, cosine=-0.01, heading=0.5, shape=1, substance=0.4, intro=0, pointer=0, role=0)
    best(sources, terms, weights, vocab)  -> 1   (the steps, not the page's pointer to them)

Signals of the source at position n (0-based) of the fused ranking:
  rank       1 / (n + 1)
  cosine     its cosine minus the best cosine among the sources (0 for the closest; 0 without cosines)
  heading    IDF-weighted share of the question's content words in its heading path (context.score)
  shape      1 for a procedure's shape: numbered steps, a code block, bullets (rag/text/units.py)
  substance  characters that are not a link, a heading or a note label, as a share of SUBSTANCE_FULL (at most 1)
  intro      1 for a page's opening chunk (context.is_intro)
  pointer    1 for a section that mostly points elsewhere: a link or "siehe …" and under POINTER_CHARS else
  role       what its own heading says it is, in a page of the kind "Problem / Ursache / Lösung": 1 for a
             solution ("Lösung", "Behebung", "Abhilfe", "Workaround"), -1 for the problem ("Problem",
             "Symptome", "Fehlermeldungen", "Ursache"); 0 else (rag/text/roles.py)
Score: the sum of WEIGHTS × signals; ties keep the better rank.

Does not handle: joining a parent section and its subsections (rag/search/subsections.py does, before),
meaning beyond shared words (a heading in other words than the question's scores 0).
"""
import re
from collections import namedtuple

from rag.answer import context
from rag.ingest import markup
from rag.text import roles
from rag.text.units import shaped

Signals = namedtuple("Signals", "rank cosine heading shape substance intro pointer role", defaults=(0,))

# Fit by grid search (eval/measure/sections.py GRID, `python3 evaluate.py --sections --tune`) over the 164 how-to
# lines of eval/answers.jsonl, eval/answers_iobroker.jsonl and eval/answers_idoit.jsonl together (the most right
# sections summed, ties to fewer non-zero weights, then the smaller ones): right 94 -> 107 (wiki 44 -> 45, ioBroker
# 26 -> 28, i-doit 24 -> 34). pointer: no gain at any weight (3 of the 19 sources it flags are the right ones).
# role (with rag/search/solutions.py): 105 -> 110, all on i-doit (32 -> 37; wiki and ioBroker unchanged); fit
# without i-doit it gets 0 (the other two sets have almost no "Problem / Lösung" pages), i-doit then 29.
# The old best_section() is rank=0, cosine=1, shape=0.01, intro=-0.01, the rest 0.
WEIGHTS = Signals(rank=0.02, cosine=1.0, heading=0.05, shape=0.01, substance=0.02, intro=-0.02, pointer=0.0,
                  role=0.02)
SUBSTANCE_FULL = 400  # characters of own text that count as a whole section's worth
POINTER_CHARS = 120  # a section with a link or "siehe" and fewer own characters than this only points elsewhere

LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|<https?://[^>]*>|https?://\S+")  # Markdown links, images, bare URLs
SEE = re.compile(r"\b(?:siehe|s\.|vgl\.|mehr\s+dazu|weitere\s+informationen|see)\b", re.I)
LABEL_LINE = re.compile(rf"^\s*(?:{'|'.join(sorted(set(markup.LABELS.values())))})\s*:.{{0,60}}$")
HEADING_LINE = re.compile(r"^\s*#{1,6}\s")


def substance(content):
    """Characters of a section's own text: without links (their words too), heading lines, note label lines
    and whitespace. Example: "Hinweis:\\nSiehe [Anleitung](a.md).\\n1. `vpn up`" -> 15 ("Siehe.1.`vpnup`")"""
    lines = [line for line in content.split("\n") if not HEADING_LINE.match(line) and not LABEL_LINE.match(line)]
    return len("".join(LINK.sub("", "\n".join(lines)).split()))


def is_pointer(content):
    """A section that mostly points elsewhere: a link or "siehe …", and under POINTER_CHARS of its own text.
    Example: "Siehe [Einrichtung](vpn-client.md)." -> True; "1. Client laden.\\n2. Anmelden." -> False"""
    return bool(LINK.search(content) or SEE.search(content)) and substance(SEE.sub("", content)) < POINTER_CHARS


def signals(source, n, top_cosine, terms, weights, vocab):
    """The Signals of `source` at position n (0-based); top_cosine: the best cosine among the sources or None."""
    cosine = 0.0 if source.cosine is None or top_cosine is None else source.cosine - top_cosine
    return Signals(rank=1.0 / (n + 1), cosine=cosine,
                   heading=context.score(source.heading or "", terms, weights, vocab) if terms else 0.0,
                   shape=int(shaped(source.content)),
                   substance=min(1.0, substance(source.content) / SUBSTANCE_FULL),
                   intro=int(context.is_intro(source)), pointer=int(is_pointer(source.content)),
                   role=roles.role(source.heading))


def table(sources, terms, weights, vocab):
    """[Signals] of every source, in source order (what best() weighs and --explain shows)."""
    cosines = [s.cosine for s in sources if s.cosine is not None]
    top = max(cosines) if cosines else None
    return [signals(s, n, top, terms, weights, vocab) for n, s in enumerate(sources)]


def score(row, weights=WEIGHTS):
    """The weighted sum of one Signals row. Example: Signals(1, 0, 0, 1, 0, 0, 0) with WEIGHTS -> 0.03 (rank 0.02 + shape 0.01)"""
    return sum(w * x for w, x in zip(weights, row))


def pick(rows, weights=WEIGHTS):
    """Index of the best-scored row; ties keep the earlier (better-ranked) one; None without rows."""
    return max(range(len(rows)), key=lambda n: (round(score(rows[n], weights), 9), -n)) if rows else None


def best(sources, terms=(), weights=(), vocab=frozenset()):
    """Index of the source a how-to answer shows verbatim (see the module docstring); None without sources."""
    return pick(table(sources, terms, weights, vocab))
