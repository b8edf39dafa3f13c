"""Which section a how-to answer shows, without an answer model (evaluate.py --sections): for every
"howto" line of an answer set the core's retrieval for a how-to question, then the section the one
chooser puts first (rag/answer/choose.py choose: what the core prints verbatim, or hands to the
model to judge first), beside the choice it replaced ("bisher": best_section of issue 29, before()).

    python3 evaluate.py --sections --questions eval/answers_iobroker.jsonl --db iob.db
    -> | Wahl                  | richtig    | unter den Quellen (Decke) | mit „Siehe auch“ | alle Schlüsselschritte gedruckt |
       | bisher (best_section) | 20 (47 %)  | 35 (81 %)                 | 30 (70 %)        | 22 (51 %)                       |

Counted per question: the chosen source is the expected section (eval/measure/retrieval.py matches), the
expected section is among the top-k sources at all (the ceiling of any choice), and it is the chosen one
or one of its two runners-up (rag/check/see_also.py pick), and the chosen section printed verbatim
(rag/answer/prompt.py steps_answer) holds all the line's key steps (eval/measure/common.py has_facts). Several sets: --questions a,b --db a.db,b.db
(pairs in order); --tune fits choose.WEIGHTS by grid search over all of them together.

Does not handle: fact questions, out-of-corpus lines, questions whose follow-up history changes the search.
"""
import itertools
import json
from collections import namedtuple
from types import SimpleNamespace

from rag import core
from rag.answer import choose, prompt
from rag.check import see_also

from eval.measure import retrieval
from eval.measure.common import has_facts, read_jsonl

# hits: per source, does it match the expected? sections: its (path, heading); steps: per source,
# does it hold all key steps, printed verbatim?
Case = namedtuple("Case", "corpus question hits rows sections steps")
GRID = choose.Signals(  # weights tried by --tune (intro and pointer are penalties)
    rank=(0.0, 0.01, 0.02, 0.05, 0.1), cosine=(0.0, 1.0), heading=(0.0, 0.01, 0.02, 0.05, 0.1, 0.2),
    shape=(0.0, 0.01, 0.02), substance=(0.0, 0.01, 0.02), intro=(0.0, -0.01, -0.02), pointer=(0.0, -0.02, -0.05, -0.1),
    role=(0.0, 0.01, 0.02, 0.05))


def howto_items(path):
    """The "howto" lines of an answer set as retrieval items (with "expected")."""
    return [retrieval.from_answer_line(path, item) for item in read_jsonl(path, "Antwort-Datei", "JSON Lines")
            if item.get("kind") == "howto"]


def collect(questions, db, args):
    """[Case] of one answer set over one index: the same steps as core.found for a how-to question,
    with every question embedded in one call."""
    settings = core.Settings(db=db, model=args.model, embedding_bin=args.embedding_bin)
    items = howto_items(questions)
    try:
        conn, meta, mode = core.open_index(settings)
    except core.CoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    try:
        vectors = core.embed([i["question"] for i in items], settings, meta, mode, {}) if items else []
        cases = []
        for item, vector in zip(items, vectors):
            result = core.rank(conn, [item["question"]], [vector], None, settings, meta, mode, "howto", {})
            core.protect(item["question"], result, settings, conn)  # the sources masked, as the core shows them
            sources = result.sources
            cases.append(Case(questions, item["question"], [retrieval.matches(s, item["expected"]) for s in sources],
                              choose.choose(*choose.inputs(result)).rows,
                              [SimpleNamespace(path=s.path, heading=s.heading) for s in sources],
                              [has_facts(prompt.steps_answer(n, s.content) or "", item.get("facts") or [])
                               for n, s in enumerate(sources, start=1)]))
    except core.CoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    finally:
        conn.close()
    return cases


def first(case, weights):
    """The section the chooser puts first with these weights (source position), None without
    sources."""
    order = choose.finalists(case.sections, case.rows, 1, weights)
    return order[0] if order else None


def before(case):
    """What best_section() of issue 29 chose, the table's "bisher" row: the best score with
    choose.BEFORE, ties to the better rank, and no rule for a section that only points elsewhere
    (the chooser puts those last)."""
    scores = [round(choose.score(row, choose.BEFORE), 9) for row in case.rows]
    return max(range(len(scores)), key=lambda n: (scores[n], -n)) if scores else None


def counts(cases, pick):
    """(right, ceiling, with runners-up, questions, all key steps printed) of one way to pick: case
    -> position."""
    right = ceiling = shown = printed = 0
    for case in cases:
        chosen = pick(case)
        if chosen is None:
            continue
        near = [chosen] + [e["n"] - 1 for e in see_also.pick(case.sections, [chosen + 1])]
        right += case.hits[chosen]
        ceiling += any(case.hits)
        shown += any(case.hits[n] for n in near)
        printed += case.steps[chosen]
    return right, ceiling, shown, len(cases), printed


def fit(cases):
    """The GRID setting with the most right sections over all cases; ties: fewer non-zero weights, then the
    smaller weights, then grid order. Returns (weights, right)."""
    best = None
    for values in itertools.product(*GRID):
        weights = choose.Signals(*values)
        right = sum(c.hits[first(c, weights)] for c in cases if c.rows)
        key = (right, -sum(1 for w in values if w), -sum(abs(w) for w in values))
        if best is None or key > best[0]:
            best = (key, weights)
    return best[1], best[0][0]


def share(count, total):
    """Example: (20, 43) -> "20 (47 %)" """
    return f"{count} ({count / total:.0%})".replace("%)", " %)") if total else "0"


def print_table(name, rows):
    """One corpus: a row per chooser, {label: counts}."""
    total = next(iter(rows.values()))[3]
    print(f"\n{name}: {total} How-to-Fragen")
    print("| Wahl | richtig | unter den Quellen (Decke) | mit „Siehe auch“ | alle Schlüsselschritte gedruckt |")
    print("|---|---:|---:|---:|---:|")
    for label, (right, ceiling, shown, n, printed) in rows.items():
        print(f"| {label} | {share(right, n)} | {share(ceiling, n)} | {share(shown, n)} | {share(printed, n)} |")


def run_sections(args):
    """evaluate.py --sections [--tune] [--json]: the table per answer set, and the sum when there are several."""
    questions, dbs = args.questions.split(","), args.db.split(",")
    if len(questions) != len(dbs):
        raise SystemExit("Fehler: --sections braucht je Antwort-Datei einen Index: --questions a,b --db a.db,b.db")
    groups = {q: collect(q, db, args) for q, db in zip(questions, dbs)}
    weights = choose.WEIGHTS
    if args.tune:
        weights, right = fit([c for cases in groups.values() for c in cases])
        print(f"Beste Gewichte (Raster über alle Sätze, {right} richtig): {dict(weights._asdict())}")
    if len(groups) > 1:
        groups["alle"] = [c for cases in list(groups.values()) for c in cases]
    tables = {name: {"bisher (best_section)": counts(cases, before),
                     "neu (choose)": counts(cases, lambda case: first(case, weights))}
              for name, cases in groups.items()}
    if args.json:
        print(json.dumps({"weights": dict(weights._asdict()), "sets": tables}, ensure_ascii=False))
        return
    for name, rows in tables.items():
        print_table(name, rows)
    if args.tune and len(questions) > 1:
        print_held_out({q: groups[q] for q in questions})


def print_held_out(groups):
    """Per set: the chooser's weights fit on the other sets (fit), and this set's right sections
    with them."""
    print("\nJe Satz ausgelassen (Gewichte auf den anderen Sätzen gefittet): "
          "richtig / alle Schlüsselschritte")
    for name, cases in groups.items():
        weights, _ = fit([c for other, more in groups.items() if other != name for c in more])
        right, _, _, n, printed = counts(cases, lambda case: first(case, weights))
        print(f"  {name}: {share(right, n)} / {share(printed, n)}")
