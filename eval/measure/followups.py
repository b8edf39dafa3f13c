"""Query expansion and follow-up questions, the answer model asked for each question: evaluate.py --expand
(the question set without and with what rag/search/expand.py adds) and --followups (a follow-up alone,
rewritten with the question before it, and written by hand as a standalone question).

    {"first": "Wie lege ich eine Mailbox an?", "followup": "Und wie groß ist sie?", …}
    -> | umgeschrieben (mit der Frage davor) | 1.000 | 1.000 | 1.000 | 0% |

Does not handle: answers (only what the search finds for the expanded or rewritten question).
"""
import contextlib
import json
import statistics
import sys
import tempfile

from rag.models import embed_binary as embedder
from rag.search import expand, fusion

from eval.measure.common import DEPTH, answer_server, read_jsonl
from eval.measure.retrieval import evaluate, first_hit, print_table

FOLLOWUPS = "eval/followups.jsonl"  # {"first", "followup", "standalone", "expected"}


def model_asker(url):
    """rag/search/expand.py's ask() for a measurement: each prompt asked once (the model answers it the same way
    every time: temperature 0, fixed seed). When the very first call fails, the run ends with its German
    line (no model to measure); a later failed call is one warning line on stderr and that question is
    searched as asked (rag/search/expand.py falls back), as ask_rag.py does, and the run goes on."""
    ask, answers = expand.asker(url), {}

    def ask_once(messages, schema, max_tokens):
        key = json.dumps([messages, schema, max_tokens], ensure_ascii=False, sort_keys=True)
        if key not in answers:
            try:
                answers[key] = ask(messages, schema, max_tokens)
            except expand.ModelError as exc:
                if all(isinstance(a, expand.ModelError) for a in answers.values()):  # no call has worked yet
                    raise SystemExit(f"Fehler: {exc}")
                answers[key] = exc
                print(f"Warnung: {exc} – diese Frage wird so gesucht, wie sie gestellt wurde", file=sys.stderr)
        if isinstance(answers[key], expand.ModelError):
            raise answers[key]
        return answers[key]
    return ask_once


def embed_all(texts, args, meta):
    """{text: vector} for every text, in one llama-embedding call (with the model's query prefix)."""
    texts = sorted(set(texts))
    try:
        prefix = embedder.stored_query_prefix(meta, args.model)  # e5: "query: "
        return dict(zip(texts, embedder.embed_texts([prefix + t for t in texts], args.embedding_bin, args.model)))
    except embedder.EmbeddingError as exc:
        raise SystemExit(f"Fehler: {exc}")


def prepare_all(questions, histories, method, ask):
    """rag/search/expand.py prepare() for each question; progress on stderr."""
    out = []
    for n, (question, history) in enumerate(zip(questions, histories), start=1):
        searched = expand.prepare(question, history, method, ask)
        out.append(searched)
        print(f"[{n}/{len(questions)}] {' · '.join([searched.question] + searched.expansions)[:160]}",
              file=sys.stderr, flush=True)
    return out


def searched_queries(searched, vectors, ask):
    """Per Searched: ([(text, vector)], weights, chooser or None, feedback or None), the question first
    (evaluate()'s `expanded`)."""
    return [([(t, vectors.get(t)) for t in expand.texts(s.question, s)], s.weights,
             expand.chooser(s, ask) if s.method in ("choose", "both") else None,
             expand.feedback(s) if s.method == "prf" else None) for s in searched]


def median_s(searched, key):
    """Median seconds of one model step over the questions that took it (None: none did)."""
    values = [s.timings[key] for s in searched if key in s.timings]
    return round(statistics.median(values), 2) if values else None


def run_expand(args, conn, meta, items, modes, floor, reject):
    """evaluate.py --expand: the question set without and with what rag/search/expand.py adds (--expand-method)."""
    model = args.expand_method != "prf"  # prf reads the first results only, no model
    with tempfile.TemporaryDirectory(prefix="rag-expand-") as tmp, \
            (answer_server(args, tmp) if model else contextlib.nullcontext()) as url:
        ask = model_asker(url) if model else None
        searched = prepare_all([i["question"] for i in items], [()] * len(items), args.expand_method, ask)
        vectors = embed_all([t for s in searched for t in expand.texts(s.question, s)], args, meta)
        plain = [vectors[i["question"]] for i in items]
        rows, _ = evaluate(conn, items, plain, modes, floor, args.vector_weight, args.max_per_file, args.comparable,
                           reject)
        expanded, misses = evaluate(conn, items, plain, modes, floor, args.vector_weight, args.max_per_file,
                                    args.comparable, reject, expanded=searched_queries(searched, vectors, ask))
    rows.update({f"{mode} + erweitert": row for mode, row in expanded.items()})
    cost = {key: median_s(searched, key) for key in ("expand_s", "choose_s", "feedback_s")}
    if args.json:
        print(json.dumps({"modes": rows, "method": args.expand_method, "median_s": cost,
                          "expansions": [s.as_json() for s in searched], "misses": misses if args.misses else None},
                         ensure_ascii=False))
        return
    n_out = sum(1 for i in items if not i["expected"])
    print_table(rows, meta, len(items) - n_out, n_out)
    print(f"(--expand-method {args.expand_method}; je Frage, Median unter der Last dieses Laufs: Suchbegriffe des "
          f"Modells {cost['expand_s']} s, Auswahl {cost['choose_s']} s, Rückkopplung {cost['feedback_s']} s; "
          f"was gesucht wurde mit --misses)")
    for s in searched if args.misses else []:
        print(f"  {s.original[:100]} → {' · '.join(s.expansions + s.chosen + s.feedback)}")


def load_followups(path):
    """The pairs of a follow-up file, each with "first", "followup", "standalone" and "expected" (else one German line)."""
    pairs = read_jsonl(path, "Folgefragen-Datei", 'JSON Lines mit "first", "followup", "standalone" und "expected"')
    for pair in pairs:
        if not all(isinstance(pair.get(k), str) for k in ("first", "followup", "standalone")) \
                or not isinstance(pair.get("expected"), list):
            raise SystemExit(f'Fehler: {path}: jede Zeile braucht "first", "followup", "standalone" und "expected" (Liste).')
    return pairs


def run_followups(args, conn, meta, modes, floor, reject):
    """evaluate.py --followups: each follow-up alone, rewritten with the first question as history, and
    the hand-written standalone version (the ceiling); --expand adds the rewritten one expanded."""
    pairs = load_followups(args.followups)
    items = [{"question": p["followup"], "expected": p["expected"]} for p in pairs]
    histories = [[{"role": "user", "content": p["first"]}] for p in pairs]
    with tempfile.TemporaryDirectory(prefix="rag-followups-") as tmp, answer_server(args, tmp) as url:
        ask = model_asker(url)
        rewritten = prepare_all([p["followup"] for p in pairs], histories, None, ask)
        variants = {"Folgefrage allein": [expand.Searched(p["followup"], p["followup"], weights=[1.0]) for p in pairs],
                    "mit der Frage davor (ohne Modell)": prepare_all([p["followup"] for p in pairs], histories, None,
                                                                     None),
                    "umgeschrieben (mit der Frage davor)": rewritten,
                    "nur umgeschrieben": [expand.Searched(s.original, s.question, weights=[1.0]) for s in rewritten],
                    "eigenständig (von Hand)": [expand.Searched(p["standalone"], p["standalone"], weights=[1.0])
                                                for p in pairs]}
        if args.expand:
            variants["umgeschrieben + erweitert"] = prepare_all([s.question for s in rewritten], [()] * len(pairs),
                                                                args.expand_method, ask)
        vectors = embed_all([t for v in variants.values() for s in v for t in expand.texts(s.question, s)], args, meta)
        rows, ranks = {}, {}
        for name, searched in variants.items():
            queries = searched_queries(searched, vectors, ask)
            for mode, row in evaluate(conn, items, [q[0][0][1] for q in queries], modes, floor, args.vector_weight,
                                      args.max_per_file, args.comparable, reject, expanded=queries)[0].items():
                rows[f"{name} ({mode})" if len(modes) > 1 else name] = row
            ranks[name] = [first_hit(fusion.retrieve_fused(conn, q, w, chooser=pick, mode=modes[0], top_k=DEPTH,
                                                           floor_cosine=floor, vector_weight=args.vector_weight,
                                                           max_per_file=args.max_per_file, comparable=args.comparable,
                                                           reject_cosine=reject).sources, i["expected"])
                           for (q, w, pick, _), i in zip(queries, items)]
    cost = median_s(rewritten, "rewrite_s")
    if args.json:
        print(json.dumps({"variants": rows, "rewrite_s_median": cost,
                          "rewritten": [{"first": p["first"], "followup": p["followup"], "rewritten": s.question,
                                         "rank_alone": r0, "rank": r}
                                        for p, s, r0, r in zip(pairs, rewritten, ranks["Folgefrage allein"],
                                                               ranks["umgeschrieben (mit der Frage davor)"])]},
                         ensure_ascii=False))
        return
    print(f"Folgefragen: {len(pairs)} Paare ({args.followups}); umgeschrieben mit der ersten Frage als Verlauf")
    print("| Variante | Recall@1 | Recall@5 | MRR@10 | fälschlich abgelehnt |")
    print("|---|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(f"| {name} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['mrr@10']:.3f} | {r['refused_in_wiki']:.0%} |")
    print(f"(Umschreiben: Median {cost} s je Folgefrage unter der Last dieses Laufs; Rang allein → umgeschrieben "
          f"mit der Frage davor)")
    for p, s, r0, r in zip(pairs, rewritten, ranks["Folgefrage allein"], ranks["umgeschrieben (mit der Frage davor)"]):
        print(f"  [{r0 or '-'} → {r or '-'}] {p['followup']}  → {s.question}")

