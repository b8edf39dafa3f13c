"""The model judging a how-to answer's finalists (rag/answer/judge.py), measured on several answer sets at once:
evaluate.py --judge --questions a,b,c --db a.db,b.db,c.db [--tune] [--out rows.jsonl] [--rescore rows.jsonl].

    -> | Satz | Finalisten | Schwelle | richtig gedruckt | fälschlich abgelehnt | ohne Antwort abgelehnt | Tokens |

Every line the core treats as a how-to question (rag/answer/context.py kind) is retrieved as the core does,
the chooser's first JUDGED finalists are each judged once by the answer model, and the strategies are then
simulated from those numbers: 1, 2 or 3 finalists, each threshold. Answerable lines count as right when
the printed section is the expected one (eval/measure/retrieval.py matches), out-of-corpus lines when refused
(by the relevance floor or the judge). Tokens: the median prompt tokens the judge calls read (llama-server's
prompt_n, without what its cache served). --tune picks the threshold and number of finalists over all sets
together: the most right answers plus refusals, with at most MAX_WRONG of the answerable lines refused.

Does not handle: fact questions (their check is rag/answer/answerable.py over the answer's context).
"""
import json
import statistics
import sys
import tempfile

from rag import core
from rag.answer import answerable, choose, context, judge

from eval.measure import retrieval
from eval.measure.common import answer_server, paired, read_jsonl

JUDGED = 3  # finalists judged per question in the measurement (the strategies use the first 1, 2 or 3)
MAX_WRONG = 0.10  # --tune: at most this share of answerable how-to lines refused, over all sets together
THRESHOLDS = [round(0.05 * k, 2) for k in range(1, 20)]


def collect(questions, db, url, args):
    """One row per how-to line of an answer set: floor, per finalist its hit and P(ja) and tokens read."""
    settings = core.Settings(db=db, model=args.model, embedding_bin=args.embedding_bin, server=url, audit="")
    items = [retrieval.from_answer_line(questions, i) for i in read_jsonl(questions, "Antwort-Datei", "JSON Lines")
             if i.get("kind") in ("howto", "out") and context.kind(i.get("question", "")) == "howto"]
    rows = []
    for n, (item, (result, question)) in enumerate(zip(items, retrieved(items, settings)), start=1):
        sources = result.sources
        judged = []
        for k in choose.choose(*choose.inputs(result), limit=JUDGED).order:
            read = []
            p = answerable.p_yes(url, judge.section_prefix(question, sources[k]), read=read)
            judged.append({"hit": bool(item["expected"]) and retrieval.matches(sources[k], item["expected"]),
                           "p_yes": p, "read": read[0].get("prompt_n") if read else None})
        rows.append({"set": questions, "question": item["question"], "in_wiki": item["kind"] == "howto",
                     "floor": result.weak or not sources, "judged": judged})
        print(f"[{n}/{len(items)}] " + " ".join(f"{j['p_yes'] or 0:.2f}{'*' if j['hit'] else ''}" for j in judged)
              + f"  {item['question']}", file=sys.stderr, flush=True)
    return rows


def retrieved(items, settings):
    """[(Retrieval, masked question)] per item, as core.found gives them for a how-to question, with
    every question embedded in one call (eval/measure/sections.py does the same)."""
    try:
        conn, meta, mode = core.open_index(settings)
        try:
            vectors = core.embed([i["question"] for i in items], settings, meta, mode, {}) if items else []
            out = []
            for item, vector in zip(items, vectors):
                result = core.rank(conn, [item["question"]], [vector], None, settings, meta, mode, "howto", {})
                question, *_ = core.protect(item["question"], result, settings, conn)
                out.append((result, question))
            return out
        finally:
            conn.close()
    except core.CoreError as exc:
        raise SystemExit(f"Fehler: {exc}")


def outcome(row, finalists, threshold):
    """("right" | "wrong" | "refused", tokens read) of one row under a strategy."""
    if row["floor"] or not row["judged"]:
        return "refused", 0
    tokens = 0
    for j in row["judged"][:finalists]:
        tokens += j["read"] or 0
        if threshold is None or j["p_yes"] is None or j["p_yes"] >= threshold:
            return ("right" if j["hit"] else "wrong"), tokens
    return "refused", tokens


def score(rows, finalists, threshold):
    """{"right", "wrong_refused", "out_refused", "tokens", "n_in", "n_out"} of a strategy over rows."""
    inside = [outcome(r, finalists, threshold) for r in rows if r["in_wiki"]]
    outside = [outcome(r, finalists, threshold) for r in rows if not r["in_wiki"]]
    tokens = [t for _, t in inside + outside]
    return {"right": sum(o == "right" for o, _ in inside), "wrong_refused": sum(o == "refused" for o, _ in inside),
            "out_refused": sum(o == "refused" for o, _ in outside), "n_in": len(inside), "n_out": len(outside),
            "tokens": statistics.median(tokens) if tokens else 0}


def fit(rows):
    """(finalists, threshold) with the most right answers plus refusals over all rows, at most MAX_WRONG of the
    answerable refused; ties: fewer finalists, then the lower threshold."""
    best = None
    for finalists in (1, 2, 3):
        for threshold in THRESHOLDS:
            s = score(rows, finalists, threshold)
            if s["wrong_refused"] > MAX_WRONG * max(s["n_in"], 1):
                continue
            key = (s["right"] + s["out_refused"], -finalists, -threshold)
            if best is None or key > best[0]:
                best = (key, finalists, threshold)
    return (best[1], best[2]) if best else (1, None)


def line(name, finalists, threshold, s):
    def share(k, n):
        return f"{k}/{n} ({k / n:.0%})" if n else "–"
    return (f"| {name} | {finalists} | {threshold if threshold is not None else 'keine'} | {share(s['right'], s['n_in'])} | "
            f"{share(s['wrong_refused'], s['n_in'])} | {share(s['out_refused'], s['n_out'])} | {s['tokens']:.0f} |")


def run_judge(args):
    """evaluate.py --judge: collect (or --rescore a saved run), then the table per set and strategy."""
    if args.rescore:
        rows = [json.loads(x) for x in open(args.rescore, encoding="utf-8") if x.strip()]
    else:
        pairs = paired(args.questions, args.db, "--judge braucht je Antwort-Datei einen Index: --questions a,b --db a.db,b.db")
        with tempfile.TemporaryDirectory(prefix="rag-judge-") as tmp, answer_server(args, tmp, "judge") as url:
            rows = [r for q, db in pairs for r in collect(q, db, url, args)]
        out = args.out or "judge-run.jsonl"
        with open(out, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        print(f"(jede Frage in {out})")
    chosen = fit(rows) if args.tune else (choose.FINALISTS, answerable.section_threshold(None))
    sets = sorted({r["set"] for r in rows}) + ["alle"]
    print(f"Gewählt: {chosen[0]} Finalisten, Schwelle {chosen[1]}" + (" (--tune, alle Sätze zusammen)" if args.tune else ""))
    print("| Satz | Finalisten | Schwelle | richtig gedruckt | fälschlich abgelehnt | ohne Antwort abgelehnt | Tokens (Median) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in sets:
        part = [r for r in rows if name == "alle" or r["set"] == name]
        print(line(name, 1, None, score(part, 1, None)))  # the chooser alone, no judge
        print(line(name, chosen[0], chosen[1], score(part, *chosen)))
    print_held_out(rows)


def held_out(rows):
    """{set: ((finalists, threshold) fit on the other sets, score of this set with them)}: the
    figure that counts, since a threshold fit on a set's own rows says little about the next wiki."""
    out = {}
    for name in sorted({r["set"] for r in rows}):
        chosen = fit([r for r in rows if r["set"] != name])
        out[name] = (chosen, score([r for r in rows if r["set"] == name], *chosen))
    return out


def print_held_out(rows):
    if len({r["set"] for r in rows}) < 2:
        return
    print("\nJe Satz ausgelassen (Finalisten und Schwelle auf den anderen Sätzen gefittet):")
    print("| Satz | Finalisten | Schwelle | richtig gedruckt | fälschlich abgelehnt "
          "| ohne Antwort abgelehnt | Tokens (Median) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, ((finalists, threshold), s) in held_out(rows).items():
        print(line(name, finalists, threshold, s))
