"""The second stage (rag/search/finalists.py) measured per corpus, its weights fit with one corpus left out:
evaluate.py --finalists --questions a,b,c --db a.db,b.db,c.db [--tune] [--json].

    -> | Satz | Fragen | vorher unter 4 | Decke 10 | Decke 20 | eingebaut unter 4 | ausgelassen unter 4 | … |

For every how-to and fact line with a source, the question is ranked as the product ranks it, once without
the second stage (the first 4 after the per-file cap, as before) and with it. Counted per question: the
expected section (eval/measure/retrieval.py matches) is among the 4 sources; the ceiling: it is among the
first 10 / 20 sections of the fused list at all. "ausgelassen" (held out) is the figure that counts: the
weights are fit on every other set (GRID, the most right over them), then scored on this one. "eingebaut" is
the shipped WEIGHTS.

Does not handle: what the later steps make of the sources (whole sections, the chooser: --sections), the
questions' follow-up history.
"""
import itertools
import json

from rag import core
from rag.search import finalists
from rag.search import ranking as search

from eval.measure import retrieval
from eval.measure.common import paired, read_jsonl

TOP_K = 4
GRID = finalists.Signals(cosine=(0.0, 5.0, 10.0, 20.0, 40.0), lexical=(0.0, 0.25, 0.5, 1.0, 2.0),
                         heading=(0.0, 0.1, 0.2, 0.4), fused=(0.0, 0.1, 0.25, 0.5, 1.0))  # also tried, 0 in every fold: 1/vector rank,
#   the question's share in the body and in the page title (docs/suche.md)
USAGE = "--finalists braucht je Antwort-Datei einen Index: --questions a,b --db a.db,b.db"


class Case:
    """One question: its candidates' signals, which candidate is the expected section, the fused list."""

    def __init__(self, kind, ordered, candidates, rows, expected):
        self.kind, self.rows = kind, rows
        self.hits = [retrieval.matches(c, expected) for c in candidates]
        self.before = any(retrieval.matches(s, expected)
                          for s in search.cap_per_file(ordered, TOP_K, search.MAX_PER_FILE))
        self.candidates, self.tail = candidates, finalists.sections(ordered)[finalists.DEPTH:]
        self.expected = expected

    def among(self, weights, k=TOP_K):
        """Is the expected section among the first k sources with these weights?"""
        ranked = finalists.order(self.candidates, self.rows, weights) + self.tail
        return any(retrieval.matches(s, self.expected)
                   for s in search.cap_per_file(ranked, k, search.MAX_PER_FILE))

    def ceiling(self, depth):
        return any(self.hits[:depth])


def lines(path):
    """The how-to and fact lines with a source, as retrieval items (with "expected")."""
    return [retrieval.from_answer_line(path, item) for item in read_jsonl(path, "Antwort-Datei", "JSON Lines")
            if item.get("kind") in ("howto", "fact") and item.get("source")]


def collect(questions, db, args):
    """[Case] of one answer set over its index, every question embedded in one call."""
    settings = core.Settings(db=db, model=args.model, embedding_bin=args.embedding_bin)
    items = lines(questions)
    try:
        conn, meta, mode = core.open_index(settings)
    except core.CoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    try:
        vectors = core.embed([i["question"] for i in items], settings, meta, mode, {}) if items else []
        weight, floor, reject = search.index_settings(meta)
        return [case(conn, item, vector, mode, weight) for item, vector in zip(items, vectors)]
    finally:
        conn.close()


def case(conn, item, vector, mode, weight):
    """The Case of one question: the fused list uncapped, its first sections with their signals."""
    found = search.retrieve(conn, item["question"], vector, mode, vector_weight=weight, capped=False)
    qvec = search.normalise(vector) if vector is not None else None
    candidates = finalists.sections(found.sources)[:finalists.DEPTH]
    if qvec is not None:
        search.fill_cosines(conn, candidates, qvec)
    rows = finalists.signals(candidates, found.terms, found.weights, found.vocab)
    return Case(item["kind"], found.sources, candidates, rows, item["expected"])


def right(cases, weights):
    return sum(c.among(weights) for c in cases)


def fit(cases):
    """The GRID weights with the most right over `cases`; ties: fewer non-zero weights, then smaller ones."""
    best = None
    for values in itertools.product(*GRID):
        weights = finalists.Signals(*values)
        key = (right(cases, weights), -sum(1 for w in values if w), -sum(values))
        if best is None or key > best[0]:
            best = (key, weights)
    return best[1]


def table(groups):
    """{set: {kind: figures}}: before, ceilings, shipped, held out (fit on the other sets)."""
    out = {}
    for name, cases in groups.items():
        others = [c for other, more in groups.items() if other != name for c in more]
        held = fit(others) if others else finalists.WEIGHTS
        out[name] = {"held_out_weights": dict(held._asdict())}
        for kind in ("howto", "fact"):
            mine = [c for c in cases if c.kind == kind]
            out[name][kind] = {"questions": len(mine), "before": sum(c.before for c in mine),
                               "ceiling_10": sum(c.ceiling(10) for c in mine),
                               "ceiling_20": sum(c.ceiling(20) for c in mine),
                               "shipped": right(mine, finalists.WEIGHTS), "held_out": right(mine, held)}
    return out


def share(count, total):
    """Example: (20, 43) -> "20 (47 %)" """
    return f"{count} ({count / total:.0%})".replace("%)", " %)") if total else "–"


def print_table(figures):
    print("| Satz | Art | Fragen | vorher unter 4 | Decke 10 | Decke 20 | eingebaut unter 4 "
          "| ausgelassen unter 4 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, kinds in figures.items():
        for kind in ("howto", "fact"):
            f = kinds[kind]
            if not f["questions"]:
                continue
            n = f["questions"]
            print(f"| {name} | {kind} | {n} | {share(f['before'], n)} | {share(f['ceiling_10'], n)} "
                  f"| {share(f['ceiling_20'], n)} | {share(f['shipped'], n)} | {share(f['held_out'], n)} |")
    print("\nGewichte, je ohne den Satz gefittet:")
    for name, kinds in figures.items():
        print(f"  {name}: {kinds['held_out_weights']}")


def run_finalists(args):
    """evaluate.py --finalists [--tune] [--json]."""
    groups = {q: collect(q, db, args) for q, db in paired(args.questions, args.db, USAGE)}
    figures = table(groups)
    if args.tune:
        weights = fit([c for cases in groups.values() for c in cases])
        print(f"Beste Gewichte über alle Sätze: {dict(weights._asdict())}")
    if args.json:
        print(json.dumps(figures, ensure_ascii=False))
        return
    print_table(figures)
