"""The answerability check alone: the answer model's P("ja, die Quellen beantworten die Frage") per
question, its AUC and the refusals per threshold: evaluate.py --answerable [--tune [--store]].

    auc([0.9, 0.8], [0.1, 0.85]) -> 0.75

Several sets at once, each with its index (--answer-questions a.jsonl,b.jsonl --db a.db,b.db): one table per
set and one over all; --tune fits the threshold on all of them together. Only the questions this threshold
decides count for --tune and the tables: those asked as fact questions (rag/answer/context.py kind); a how-to
question is judged on its section (rag/answer/judge.py, evaluate.py --judge) when that threshold is measured.

Does not handle: the answers themselves (evaluate.py --answers measures those).
"""
import json
import sys
import tempfile

from eval.measure.answers import ANSWER_OUT, load_answer_items
from eval.measure.common import fresh_index, llm_info, paired, start_answer_server
from eval.measure.judge import MAX_WRONG


def auc(inside, outside):
    """Probability that an in-wiki question scores above an out-of-wiki one (ties count half).

    Example: auc([0.9, 0.8], [0.1, 0.85]) -> 0.75
    """
    pairs = [(a > b) + 0.5 * (a == b) for a in inside for b in outside]
    return sum(pairs) / len(pairs) if pairs else None


def refusals(rows, limit):
    """(out-of-wiki refused, in-wiki refused, out-of-wiki questions, in-wiki questions), counted, with the floor and
    the check at `limit`."""
    def refused(r):
        return r["floor"] or (r["p_yes"] is not None and limit is not None and r["p_yes"] < limit)
    inside = [r for r in rows if r["in_wiki"]]
    outside = [r for r in rows if not r["in_wiki"]]
    return sum(map(refused, outside)), sum(map(refused, inside)), len(outside), len(inside)


def refusal_rates(rows, limit):
    """(share of out-of-wiki refused, share of in-wiki refused) with the floor and the check at `limit`."""
    out, wrong, n_out, n_in = refusals(rows, limit)
    return out / (n_out or 1), wrong / (n_in or 1)


def tune_threshold(rows):
    """The threshold with the most right decisions (out-of-wiki refused + in-wiki answered), refusing at most
    MAX_WRONG of the in-wiki ones (floor included), the lowest on a tie; None when no threshold beats the floor
    alone. The same rule as the section check's (eval/measure/judge.py fit): a threshold that answers more in-wiki
    questions only by letting as many out-of-wiki ones through gains nothing."""
    def right(limit):
        out, wrong, _, n_in = refusals(rows, limit)
        return out + n_in - wrong, wrong <= MAX_WRONG * n_in

    best = (right(None)[0], 0, None)
    for limit in sorted({round(r["p_yes"], 4) for r in rows if r["p_yes"] is not None}):
        limit = round(limit + 1e-4, 4)  # refuse below: a question at exactly this p stays answered
        score, allowed = right(limit)
        if allowed and (score, -limit) > best[:2]:
            best = (score, -limit, limit)
    return best[2]


def sets_and_indexes(args, db_given):
    """[(answer set, index or None)]: one set, or comma lists with one index each (None: build one from --wiki)."""
    if "," not in args.answer_questions:
        return [(args.answer_questions, args.db if db_given else None)]
    return paired(args.answer_questions, args.db if db_given else "",
                  "mehrere Antwort-Dateien brauchen je einen Index: --answer-questions a.jsonl,b.jsonl --db a.db,b.db")


def decided(rows, section_judged):
    """The rows this threshold decides: all, or without the how-to questions when their section is judged.

    Example: decided([{"asked": "howto"}, {"asked": "fact"}], True) -> [{"asked": "fact"}]
    """
    return [r for r in rows if not (section_judged and r["asked"] == "howto")]


def collect(path, db, url, args):
    """One row per question of one set: floor, P(ja) over the prompt's sources, how it is asked."""
    from rag import core
    from rag.answer import answerable, context, prompt
    settings = core.Settings(db=db, model=args.model, embedding_bin=args.embedding_bin, server=url, audit="")
    items, rows = load_answer_items(path), []
    for n, item in enumerate(items, start=1):
        kind = context.kind(item["question"])
        done = core.found(item["question"], settings)
        retrieval, question = done.retrieval, done.question
        p = None
        if retrieval.sources:  # also where the floor refuses: --tune weighs the floor against the check
            prefix, _, _ = prompt.for_question(question, retrieval, True, kind,
                                               settings.whole_chunks, settings.fact_sources)
            p = answerable.p_yes(url, prefix)
        rows.append({"set": path, "question": item["question"], "in_wiki": bool(item["facts"]),
                     "kind": item.get("kind"), "asked": kind, "floor": retrieval.weak or not retrieval.sources,
                     "p_yes": p, "best_cosine": retrieval.best_cosine, "coverage": retrieval.coverage})
        print(f"[{n}/{len(items)}] {'Schwelle, ' if rows[-1]['floor'] else ''}P(ja) "
              f"{'–' if p is None else f'{p:.3f}'}  "
              f"{'im Wiki' if item['facts'] else 'nicht im Wiki'}: {item['question']}", file=sys.stderr, flush=True)
    return rows


def print_table(rows, limit):
    print("| Schwelle P(ja) | ohne Antwort abgelehnt | mit Antwort fälschlich abgelehnt |")
    print("|---:|---:|---:|")
    for shown in sorted({None, 0.1, 0.2, 0.3, 0.5, 0.7, limit} - {None}) + [None]:
        out, wrong = refusal_rates(rows, shown)
        print(f"| {'nur Relevanzschwelle' if shown is None else shown} | {out:.0%} | {wrong:.0%} |"
              + ("  ← gewählt" if shown == limit and shown is not None else ""))


def held_out(rows):
    """{set: (threshold fit by tune_threshold on the other sets, refusals(this set) with it)}."""
    out = {}
    for name in sorted({r["set"] for r in rows}):
        limit = tune_threshold([r for r in rows if r["set"] != name])
        out[name] = (limit, refusals([r for r in rows if r["set"] == name], limit))
    return out


def print_held_out(rows):
    """Per set: the threshold fit on the other sets, and this set's refusals with it."""
    if len({r["set"] for r in rows}) < 2:
        return
    print("\nJe Satz ausgelassen (Schwelle auf den anderen Sätzen gefittet):")
    print("| Satz | Schwelle | ohne Antwort abgelehnt | mit Antwort fälschlich abgelehnt |")
    print("|---|---:|---:|---:|")
    for name, (limit, (out, wrong, n_out, n_in)) in held_out(rows).items():
        shown = limit if limit is not None else "keine"
        print(f"| {name} | {shown} | {out}/{n_out} | {wrong}/{n_in} |")


def run_answerable(args, db_given):
    """evaluate.py --answerable: the answerability check alone (no answers), per question, and its threshold."""
    from rag.answer import answerable
    pairs = sets_and_indexes(args, db_given)
    with tempfile.TemporaryDirectory(prefix="rag-answerable-") as tmp:
        server = None if args.server else start_answer_server(args, tmp)
        url = args.server or server.url
        try:
            model = (args.llm_model_name or llm_info(url)["model"])
            every = [r for path, db in pairs for r in collect(path, db or fresh_index(tmp, args), url, args)]
        finally:
            if server:
                server.stop()
    section_judged = answerable.section_threshold(model) is not None
    rows = decided(every, section_judged)
    checked = [r for r in rows if r["p_yes"] is not None]
    area = auc([r["p_yes"] for r in checked if r["in_wiki"]], [r["p_yes"] for r in checked if not r["in_wiki"]])
    limit = tune_threshold(rows) if args.tune else (answerable.threshold(model) if args.answer_threshold is None
                                                   else args.answer_threshold)
    print(f"Antwortmodell {model}; {sum(r['in_wiki'] for r in rows)} Fragen mit Antwort, "
          f"{sum(not r['in_wiki'] for r in rows)} ohne ({args.answer_questions})"
          + (f"; nur die als Faktenfrage gestellten, {len(every) - len(rows)} How-to-Fragen prüft "
             f"rag/answer/judge.py am Abschnitt" if section_judged else ""))
    print(f"AUC von P(ja) (alle Fragen mit Quellen): {area:.3f}" if area is not None else "AUC: –")
    if len(pairs) > 1:
        for path, _ in pairs:
            print(f"\n{path}:")
            print_table([r for r in rows if r["set"] == path], limit)
        print("\nalle zusammen:")
    print_table(rows, limit)
    print_held_out(rows)
    if args.tune and args.store and limit is not None:
        out, wrong = refusal_rates(rows, limit)
        entry = {**answerable.measured().get(model, {}),  # the model's other measurements (section_threshold) stay
                 "threshold": limit, "set": ", ".join(p for p, _ in pairs), "auc": round(area, 3),
                 "refused_out": round(out, 3), "refused_in": round(wrong, 3),
                 "command": "python3 evaluate.py --answerable --tune --store"}
        stored = answerable.store(model, entry)
        print(f"Gespeichert in {stored}: {model} → Schwelle {limit}")
    out_path = "answerable-run.jsonl" if args.out == ANSWER_OUT else args.out
    with open(out_path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in every)
    print(f"(jede Frage in {out_path})")

