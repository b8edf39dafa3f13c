"""Retrieval quality on a question set (evaluate.py without a measurement flag): Recall@1, Recall@5,
MRR@10 and honest refusals per mode, and --tune for the vector weight and the cosine thresholds.

    {"question": "Wie groß ist die Quota?", "expected": [{"file": "mail/a.md", "heading": "Quota"}]}
    -> | hybrid  | 1.000 | 1.000 | 1.000 | – | 0% | 3.1 |

Does not handle: judging answers (only retrieval is measured here).
"""
import json
import statistics
import sys
import time

from rag.models import embed_binary as embedder
from rag.search import fusion
from rag.search import ranking as search
from rag import store

from eval.measure.common import DEPTH, MAX_WRONG_REFUSALS, load_jsonl, read_jsonl


def load_questions(path):
    """The question set: lines with "question" and "expected" (a list; empty = not in the wiki).

    Answer-set lines (eval/answers_*.jsonl) are read too, see from_answer_line.
    """
    items = read_jsonl(path, "Fragen-Datei", "JSON Lines")
    if items and all("expected" not in i and "kind" in i for i in items):
        return [from_answer_line(path, item) for item in items]
    return load_jsonl(path, "expected", "Liste")


def from_answer_line(path, item):
    """An answer-set line as a retrieval question: howto/fact -> one expected {file, heading}; out -> none.

    Example: {"question": "Q", "kind": "howto", "source": "install__linux.md › Linux"}
             -> {"question": "Q", "expected": [{"file": "install__linux.md", "heading": "Linux"}]}
    """
    if "question" not in item or item.get("kind") not in ("howto", "fact", "out"):
        raise SystemExit(f"Fehler: {path}: jede Antwort-Zeile braucht \"question\" und \"kind\" "
                         f"(howto, fact oder out).")
    if item["kind"] == "out":
        return {**item, "expected": []}
    file, _, heading = item.get("source", "").partition(" › ")
    if not file:
        raise SystemExit(f"Fehler: {path}: howto-/fact-Zeile ohne \"source\" (\"datei › Überschrift\"): "
                         f"{item['question']}")
    return {**item, "expected": [{"file": file.strip(), "heading": heading.strip()}]}


def matches(source, expected):
    """Does a retrieved source answer one of the expected (file, heading) entries?

    Example: path "mail/a.md", heading "Mail › Quota" matches {"file": "mail/a.md", "heading": "Quota"}
    """
    parts = source.heading.split(" › ")
    return any(source.path == e["file"] and (not e.get("heading") or e["heading"] in parts
                                             or (" › " in e["heading"] and e["heading"] in source.heading))
               for e in expected)


def first_hit(sources, expected):
    """1-based rank of the first matching source, or None."""
    return next((rank for rank, s in enumerate(sources, start=1) if matches(s, expected)), None)


def evaluate(conn, items, vectors, modes, floor, vector_weight, max_per_file=search.MAX_PER_FILE,
             comparable=search.COMPARABLE, reject=None, expanded=None):
    """Recall and refusals per mode. expanded: per item ([(text, vector)], weights, chooser or None,
    feedback or None), the question first, then what rag/search/expand.py added; their rankings are fused
    (fusion.retrieve_fused)."""
    rows, misses = {}, []
    for mode in modes:
        hits, times, refused_out, refused_in = [], [], 0, 0
        for n, (item, qvec) in enumerate(zip(items, vectors)):
            queries, weights, pick, more = expanded[n] if expanded else ([(item["question"], qvec)], [1.0], None, None)
            started = time.perf_counter()
            result = fusion.retrieve_fused(conn, queries, weights, chooser=pick, feedback=more, mode=mode, top_k=DEPTH,
                                           floor_cosine=floor, vector_weight=vector_weight,
                                           max_per_file=max_per_file, comparable=comparable, reject_cosine=reject)
            times.append(time.perf_counter() - started)
            if not item["expected"]:
                refused_out += result.weak
                continue
            refused_in += result.weak
            rank = first_hit(result.sources, item["expected"])
            hits.append(rank)
            if rank != 1:
                misses.append({"mode": mode, "question": item["question"], "rank": rank,
                               "expected": item["expected"][0]["file"],
                               "got": f"{result.sources[0].path} › {result.sources[0].heading}" if result.sources else None})
        n_in, n_out = len(hits), len(items) - len(hits)
        rows[mode] = {
            "recall@1": sum(r == 1 for r in hits) / n_in if n_in else 0.0,
            "recall@5": sum(r is not None and r <= 5 for r in hits) / n_in if n_in else 0.0,
            "mrr@10": sum(1 / r for r in hits if r) / n_in if n_in else 0.0,
            "refused_out_of_wiki": refused_out / n_out if n_out else None,
            "refused_in_wiki": refused_in / n_in if n_in else 0.0,
            "median_ms": statistics.median(times) * 1000,
            "questions": len(items),
        }
    return rows, misses


WEIGHTS = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)  # vector weights tried by --tune


def tune(conn, items, vectors):
    """Measure hybrid for several vector weights, then the two cosine thresholds; return the best.

    Best weight: highest MRR@10, then Recall@5, then the larger weight (so the vectors still break
    ties and fill the list when the full-text search finds little). Best thresholds (reject below,
    accept weak full-text evidence from): the pair that refuses the most out-of-wiki questions while
    refusing at most MAX_WRONG_REFUSALS of the in-wiki ones, then the fewest in-wiki refusals, then
    the lowest thresholds; (None, None) when no pair beats the full-text rule alone.
    """
    print("| Vektor-Gewicht | Recall@1 | Recall@5 | MRR@10 |")
    print("|---:|---:|---:|---:|")
    scored = []
    for weight in WEIGHTS:
        row = evaluate(conn, items, vectors, ["hybrid"], None, weight)[0]["hybrid"]
        print(f"| {weight} | {row['recall@1']:.3f} | {row['recall@5']:.3f} | {row['mrr@10']:.3f} |")
        scored.append((round(row["mrr@10"], 6), round(row["recall@5"], 6), weight))
    best_weight = max(scored)[2]
    results = [(bool(i["expected"]), search.retrieve(conn, i["question"], v, top_k=DEPTH, vector_weight=best_weight))
               for i, v in zip(items, vectors)]
    n_in = sum(1 for inside, _ in results if inside) or 1
    n_out = sum(1 for inside, _ in results if not inside) or 1

    def refusals(floor, reject):
        """(share of out-of-wiki refused, share of in-wiki refused)"""
        weak = [(inside, search.floor(_fresh(r), floor, reject).weak) for inside, r in results]
        return (sum(w for inside, w in weak if not inside) / n_out, sum(w for inside, w in weak if inside) / n_in)

    cosines = sorted({round(r.best_cosine, 3) for _, r in results if r.best_cosine is not None})
    candidates = [(None, None)] + [(floor, reject) for reject in [None] + cosines
                                   for floor in [None] + cosines if floor is None or reject is None or floor > reject]
    best = None
    for floor, reject in candidates:
        out, wrong = refusals(floor, reject)
        key = (wrong <= MAX_WRONG_REFUSALS, out, -wrong, -(floor or 0), -(reject or 0))
        if best is None or key > best[0]:
            best = (key, floor, reject, out, wrong)
    _, best_floor, best_reject, out, wrong = best
    print(f"Bestes Vektor-Gewicht: {best_weight}; Kosinus-Schwellen: ablehnen unter {best_reject}, "
          f"schwache Volltext-Belege genügen ab {best_floor} (ohne Antwort abgelehnt {out:.0%}, "
          f"mit Antwort fälschlich {wrong:.0%}, höchstens {MAX_WRONG_REFUSALS:.0%})")
    return best_weight, best_floor, best_reject


def _fresh(result):
    """A copy of a retrieval result with the floor verdict cleared (judge() sets it)."""
    copy = search.Retrieval(**{**result.__dict__, "weak": False, "weak_reason": ""})
    return copy


def print_table(rows, meta, n_in, n_out):
    """The German Markdown table of evaluate(): one row per mode."""
    print(f"Index: {meta.get('embed_model')} (Dimension {meta.get('dim')}); "
          f"{n_in} Fragen mit Antwort im Wiki, {n_out} ohne")
    print("| Modus   | Recall@1 | Recall@5 | MRR@10 | ohne Antwort korrekt abgelehnt | mit Antwort fälschlich abgelehnt | Median ms |")
    print("|---------|---------:|---------:|-------:|------:|------:|------:|")
    for mode, r in rows.items():
        out = "–" if r["refused_out_of_wiki"] is None else f"{r['refused_out_of_wiki']:.0%}"
        print(f"| {mode:<7} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['mrr@10']:.3f} | {out} | "
              f"{r['refused_in_wiki']:.0%} | {r['median_ms']:.1f} |")


def parse_modes(text, default):
    """--modes as a list. Example: ("hybrid, lexical", …) -> ["hybrid", "lexical"]; an unknown mode: one German line."""
    modes = [m.strip() for m in (text or default).split(",") if m.strip()]
    if not modes or any(m not in search.MODES for m in modes):
        raise SystemExit(f"Fehler: --modes erlaubt nur {', '.join(search.MODES)}.")
    return modes


def open_index(args):
    """(connection, meta, floor, reject) of --db; sets args.vector_weight from the flag, the index or the model."""
    try:
        conn = store.open_store(args.db)  # SQLite file or PostgreSQL DSN (rag/store/__init__.py)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    meta = conn.meta()
    args.vector_weight, floor, reject = search.index_settings(meta, args.vector_weight, args.floor_cosine,
                                                              args.reject_cosine)
    return conn, meta, floor, reject


def embed_questions(items, args, meta, modes):
    """(vectors, seconds): every question in one llama-embedding call; no call for lexical alone."""
    started = time.perf_counter()
    if modes == ["lexical"]:
        return [None] * len(items), time.perf_counter() - started
    try:
        prefix = embedder.stored_query_prefix(meta, args.model)  # e5: "query: "
        vectors = embedder.embed_texts([prefix + i["question"] for i in items], args.embedding_bin, args.model)
    except embedder.EmbeddingError as exc:
        raise SystemExit(f"Fehler: {exc}")
    return vectors, time.perf_counter() - started


def run_tune(args, conn, items, vectors):
    """evaluate.py --tune [--store]: measure, print, and with --store write the values into the index."""
    weight, best_floor, best_reject = tune(conn, items, vectors)
    if args.store:
        conn.write_meta(vector_weight=weight, floor_cosine="" if best_floor is None else best_floor,
                        reject_cosine="" if best_reject is None else best_reject)
        print(f"Gespeichert in {args.db}: vector_weight={weight}, floor_cosine={best_floor}, "
              f"reject_cosine={best_reject}")


def run_retrieval(args, conn, meta, items, modes, floor, reject):
    """evaluate.py: the question set per mode, as a table (or --json), with --misses the questions missed."""
    vectors, embed_s = embed_questions(items, args, meta, modes)
    if args.tune:
        return run_tune(args, conn, items, vectors)
    rows, misses = evaluate(conn, items, vectors, modes, floor, args.vector_weight, args.max_per_file,
                            args.comparable, reject)
    n_out = sum(1 for i in items if not i["expected"])
    if args.json:
        print(json.dumps({"modes": rows, "embed_all_questions_s": round(embed_s, 3), "floor_cosine": floor,
                          "vector_weight": args.vector_weight, "misses": misses if args.misses else None},
                         ensure_ascii=False))
        return
    print_table(rows, meta, len(items) - n_out, n_out)
    print(f"(alle {len(items)} Fragen in einem llama-embedding-Aufruf eingebettet: {embed_s:.1f} s)")
    if args.misses:
        for m in misses:
            print(f"  {m['mode']}: Rang {m['rank']}: {m['question']}  → erwartet {m['expected']}, bekam {m['got']}",
                  file=sys.stdout)
