"""Which retrieved section answers a how-to question: the one chooser, and every choice the answer
needs of it.

    sources: [1] vpn.md › VPN (cosine 0.91, "Siehe [Anleitung](vpn-client.md)."),
             [2] vpn.md › VPN › Client einrichten
                 (cosine 0.90, "1. Client laden …\\n2. Anmelden …")
    choice = choose(sources, terms, weights, vocab)
    choice.order      -> [1]   positions, one per section, best first, a pointer last (FINALISTS)
    choice.rows       -> [Signals(rank=1.0, cosine=0.0, …, pointer=1, role=0),
                          Signals(rank=0.5, …)]
    choice.procedure  -> 1     what the model sees whole when it writes the steps (--steps model)

choice.order[0] is the section a how-to answer prints verbatim (rag/answer/prompt.py steps_answer);
the model judges choice.order before it is printed (rag/answer/judge.py); `ask_rag.py --explain`
prints choice.rows; `evaluate.py --sections` measures choice.order[0] on the answer sets.

Signals of the source at position n (0-based) of the fused ranking:
  rank       1 / (n + 1)
  cosine     its cosine minus the best cosine among the sources (0 for the closest; 0 without
             cosines)
  heading    IDF-weighted share of the question's content words in its heading path (context.score)
  shape      1 for a procedure's shape: numbered steps, a code block, bullets (rag/text/units.py)
  substance  characters that are not a link, a heading or a note label, as a share of SUBSTANCE_FULL
             (at most 1)
  intro      1 for a page's opening chunk (is_intro)
  pointer    1 for a section that mostly points elsewhere: a link or "siehe …" and under
             POINTER_CHARS else
  role       what its own heading says it is, in a page of the kind "Problem / Ursache / Lösung": 1
             for a solution ("Lösung", "Behebung", "Abhilfe", "Workaround"), -1 for the problem
             ("Problem", "Symptome", "Fehlermeldungen", "Ursache"); 0 else (rag/text/roles.py)
Score: the sum of WEIGHTS × signals. Order: one source per section (path, heading), a pointer after
every other, then the higher score, ties to the better rank; at most FINALISTS.

The procedure (choice.procedure) is another question about the same sources: which one the model may
read whole when it writes the steps itself, a numbered list or code block of at most PROCEDURE_MAX
characters that covers most of the question (ties: the better rank).

Does not handle: joining a parent section and its subsections (rag/search/subsections.py does,
before), meaning beyond shared words (a heading in other words than the question's scores 0).
"""
import re
from collections import namedtuple

from rag import tuned
from rag.answer import context
from rag.ingest import markup
from rag.text import roles
from rag.text.units import is_procedure, shaped

Signals = namedtuple("Signals", "rank cosine heading shape substance intro pointer role",
                     defaults=(0,))
Choice = namedtuple("Choice", "order rows procedure")  # see the module docstring

# The numbers, with where each comes from (the grid, the sets, the figures): rag/tuned.py.
WEIGHTS = Signals(**tuned.value("choose.WEIGHTS"))  # fit by `evaluate.py --sections --tune`
# the choice WEIGHTS replaced (best_section, issue 29): the "bisher" row of `evaluate.py --sections`
BEFORE = Signals(**tuned.value("choose.BEFORE"))
FINALISTS = tuned.value("choose.FINALISTS")  # judged at most (fit with the section threshold)
# a longer procedure is cut to its best units like any source (the prompt of --steps model; what is
# printed verbatim is up to search.SECTION_MAX)
PROCEDURE_MAX = tuned.value("choose.PROCEDURE_MAX")
SUBSTANCE_FULL = tuned.value("choose.SUBSTANCE_FULL")  # own characters worth a whole section
POINTER_CHARS = tuned.value("choose.POINTER_CHARS")  # a link or "siehe" and fewer own characters

# Markdown links, images, bare URLs
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|<https?://[^>]*>|https?://\S+")
SEE = re.compile(r"\b(?:siehe|s\.|vgl\.|mehr\s+dazu|weitere\s+informationen|see)\b", re.I)
LABEL_LINE = re.compile(rf"^\s*(?:{'|'.join(markup.NOTE_LABELS)})\s*:.{{0,60}}$")
HEADING_LINE = re.compile(r"^\s*#{1,6}\s")


def substance(content):
    """Characters of a section's own text: without links (their words too), heading lines, note
    label lines and whitespace.
    Example: "Hinweis:\\nSiehe [Anleitung](a.md).\\n1. `vpn up`" -> 15 ("Siehe.1.`vpnup`")"""
    lines = [line for line in content.split("\n") if not HEADING_LINE.match(line)
             and not LABEL_LINE.match(line)]
    return len("".join(LINK.sub("", "\n".join(lines)).split()))


def is_pointer(content):
    """A section that mostly points elsewhere: a link or "siehe …", and under POINTER_CHARS of its
    own text.
    Example: "Siehe [Einrichtung](vpn-client.md)." -> True;
             "1. Client laden.\\n2. Anmelden." -> False"""
    return (bool(LINK.search(content) or SEE.search(content))
            and substance(SEE.sub("", content)) < POINTER_CHARS)


def signals(source, n, top_cosine, terms, weights, vocab):
    """The Signals of `source` at position n (0-based); top_cosine: the best cosine among the
    sources or None."""
    cosine = 0.0 if source.cosine is None or top_cosine is None else source.cosine - top_cosine
    return Signals(rank=1.0 / (n + 1), cosine=cosine,
                   heading=context.score(source.heading or "", terms, weights, vocab) if terms
                   else 0.0,
                   shape=int(shaped(source.content)),
                   substance=min(1.0, substance(source.content) / SUBSTANCE_FULL),
                   intro=int(is_intro(source)), pointer=int(is_pointer(source.content)),
                   role=roles.role(source.heading))


def table(sources, terms, weights, vocab):
    """[Signals] of every source, in source order (what best() weighs and --explain shows)."""
    cosines = [s.cosine for s in sources if s.cosine is not None]
    top = max(cosines) if cosines else None
    return [signals(s, n, top, terms, weights, vocab) for n, s in enumerate(sources)]


def score(row, weights=WEIGHTS):
    """The weighted sum of one Signals row.
    Example: Signals(1, 0, 0, 1, 0, 0, 0) with WEIGHTS -> 0.03 (rank 0.02 + shape 0.01)"""
    return sum(w * x for w, x in zip(weights, row))


def choose(sources, terms=(), weights=(), vocab=frozenset(), limit=FINALISTS,
           signal_weights=WEIGHTS):
    """The Choice for a how-to question over `sources` (see the module docstring)."""
    rows = table(sources, terms, weights, vocab)
    order = finalists(sources, rows, limit, signal_weights)
    return Choice(order, rows, procedure(sources, terms, weights, vocab))


def inputs(retrieval):
    """What choose() reads of a search's Retrieval: (sources, terms, their IDF weights, the
    vocabulary)."""
    return retrieval.sources, retrieval.terms, retrieval.weights, retrieval.vocab


def finalists(sources, rows, limit=FINALISTS, weights=WEIGHTS):
    """Source positions by score (ties: the better rank), one per section (path, heading), at most
    limit. A section that only points elsewhere (is_pointer) comes after every other: it is never
    the answer while another section is there.

    Example: rows of a pointer (score 0.95) and of steps (0.90), limit 2 -> [1, 0]
    """
    def key(n):
        return rows[n].pointer, -round(score(rows[n], weights), 9), n
    order = sorted(range(len(rows)), key=key)
    seen, out = set(), []
    for n in order:
        section = (sources[n].path, sources[n].heading)
        if section not in seen:
            seen.add(section)
            out.append(n)
    return out[:limit]


def procedure(sources, terms, weights, vocab):
    """Index of the how-to source the model sees whole (--steps model): a procedure, most of the
    question covered, then the best rank; None if no source is a procedure. Ties keep the earlier
    source."""
    candidates = [(-context.score(f"{s.heading}\n{s.content}", terms, weights, vocab), n)
                  for n, s in enumerate(sources) if is_procedure(s.content)
                  and len(s.content) <= PROCEDURE_MAX]
    return min(candidates)[1] if candidates else None


def is_intro(source):
    """A page's opening chunk (its heading path is the page title alone); it mostly points to the
    sections below."""
    return "›" not in (source.heading or "")
