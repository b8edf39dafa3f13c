#!/usr/bin/env python3
"""Measure retrieval quality on a question set: Recall@1, Recall@5, MRR@10, honest refusals.

    python3 evaluate.py                                  # eval/questions.jsonl over knowledge.db
    python3 evaluate.py --json --modes hybrid,lexical

Question file: JSON Lines, {"question": "...", "expected": [{"file": "mail/x.md", "heading": "Quota"}]};
an empty "expected" means "not in the wiki". A retrieved chunk matches an expected entry when its
path is the file and the heading is one of the chunk's heading path parts (or is empty).

Refused = the relevance floor said "weak evidence" (ask_rag.py would not call the LLM).
All questions are embedded in one llama-embedding call; times per mode exclude that call.

Does not handle: judging answers (only retrieval is measured here).
"""
import argparse
import json
import statistics
import sys
import time

from rag import config, embedder, search, store

DEPTH = 10  # ranks looked at (MRR@10)


def load_questions(path):
    try:
        with open(path, encoding="utf-8") as f:
            items = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as exc:
        raise SystemExit(f"Fehler: Fragen-Datei {path} nicht lesbar ({exc}) – JSON Lines erwartet.")
    for item in items:
        if "question" not in item or not isinstance(item.get("expected"), list):
            raise SystemExit(f"Fehler: {path}: jede Zeile braucht \"question\" und \"expected\" (Liste).")
    return items


def matches(source, expected):
    """Does a retrieved source answer one of the expected (file, heading) entries?

    Example: path "mail/a.md", heading "Mail › Quota" matches {"file": "mail/a.md", "heading": "Quota"}
    """
    parts = source.heading.split(" › ")
    return any(source.path == e["file"] and (not e.get("heading") or e["heading"] in parts) for e in expected)


def first_hit(sources, expected):
    """1-based rank of the first matching source, or None."""
    return next((rank for rank, s in enumerate(sources, start=1) if matches(s, expected)), None)


def evaluate(conn, items, vectors, modes, floor, vector_weight):
    rows, misses = {}, []
    for mode in modes:
        hits, times, refused_out, refused_in = [], [], 0, 0
        for item, qvec in zip(items, vectors):
            started = time.perf_counter()
            result = search.retrieve(conn, item["question"], qvec, mode=mode, top_k=DEPTH,
                                     floor_cosine=floor, vector_weight=vector_weight)
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
    """Measure hybrid for several vector weights and the cosine floor; return the best of each.

    Best weight: highest MRR@10, then Recall@5, then the larger weight (so the vectors still break
    ties and fill the list when the full-text search finds little). Best floor: the cosine
    threshold that maximises (share of out-of-wiki questions refused) - 2 x (share of in-wiki
    questions refused); None when no threshold beats the lexical rule alone.
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

    def objective(floor):
        refused = [(inside, search.judge(r, floor).weak) for inside, r in
                   ((inside, _fresh(r)) for inside, r in results)]
        n_in = sum(1 for inside, _ in refused if inside) or 1
        n_out = sum(1 for inside, _ in refused if not inside) or 1
        return (sum(w for inside, w in refused if not inside) / n_out
                - 2 * sum(w for inside, w in refused if inside) / n_in)

    floors = sorted({round(r.best_cosine, 3) for _, r in results if r.best_cosine is not None})
    best_floor, best_value = None, objective(None)
    for floor in floors:
        if objective(floor) > best_value + 1e-9:
            best_floor, best_value = floor, objective(floor)
    print(f"Bestes Vektor-Gewicht: {best_weight}; beste Kosinus-Schwelle: {best_floor} "
          f"(Ziel abgelehnt(ohne Antwort) − 2 × abgelehnt(mit Antwort) = {best_value:.3f})")
    return best_weight, best_floor


def _fresh(result):
    """A copy of a retrieval result with the floor verdict cleared (judge() sets it)."""
    copy = search.Retrieval(**{**result.__dict__, "weak": False, "weak_reason": ""})
    return copy


def print_table(rows, meta, n_in, n_out):
    print(f"Index: {meta.get('embed_model')} (Dimension {meta.get('dim')}); "
          f"{n_in} Fragen mit Antwort im Wiki, {n_out} ohne")
    print(f"| Modus   | Recall@1 | Recall@5 | MRR@10 | ohne Antwort korrekt abgelehnt | mit Antwort fälschlich abgelehnt | Median ms |")
    print(f"|---------|---------:|---------:|-------:|------:|------:|------:|")
    for mode, r in rows.items():
        out = "–" if r["refused_out_of_wiki"] is None else f"{r['refused_out_of_wiki']:.0%}"
        print(f"| {mode:<7} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['mrr@10']:.3f} | {out} | "
              f"{r['refused_in_wiki']:.0%} | {r['median_ms']:.1f} |")


def main():
    parser = argparse.ArgumentParser(description="Misst die Suchqualität auf einem Fragenkatalog.")
    parser.add_argument("--questions", default="eval/questions.jsonl", help="JSON-Lines-Datei mit Fragen")
    parser.add_argument("--db", default=config.env_str("RAG_DB", "knowledge.db"), help="Index (RAG_DB)")
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(), help="llama-embedding (LLAMA_EMBEDDING)")
    parser.add_argument("--model", default=config.default_model(), help="Embedding-Modell (RAG_EMBED_MODEL)")
    parser.add_argument("--modes", default="hybrid,vector,lexical", help="Modi, kommagetrennt")
    parser.add_argument("--floor-cosine", type=float, default=config.env_float("RAG_FLOOR_COSINE", None),
                        help="Kosinus-Schwelle (Standard: im Index gespeichert)")
    parser.add_argument("--vector-weight", type=float, default=config.env_float("RAG_VECTOR_WEIGHT", None),
                        help=f"Gewicht der Vektor-Rangliste im Hybrid-Modus (RAG_VECTOR_WEIGHT; Standard: im Index "
                             f"gespeichert, sonst {search.VECTOR_WEIGHT})")
    parser.add_argument("--misses", action="store_true", help="Fragen ohne Treffer auf Rang 1 auflisten")
    parser.add_argument("--tune", action="store_true",
                        help="Vektor-Gewicht und Kosinus-Schwelle für dieses Modell messen")
    parser.add_argument("--store", action="store_true",
                        help="mit --tune: die gemessenen Werte im Index speichern (ask_rag.py nutzt sie)")
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in search.MODES for m in modes):
        raise SystemExit(f"Fehler: --modes erlaubt nur {', '.join(search.MODES)}.")
    items = load_questions(args.questions)
    try:
        conn = store.connect(args.db)
    except store.StoreError as exc:
        raise SystemExit(f"Fehler: {exc}")
    meta = store.read_meta(conn)
    args.vector_weight, floor = search.index_settings(meta, args.vector_weight, args.floor_cosine)
    started = time.perf_counter()
    if modes == ["lexical"]:
        vectors = [None] * len(items)
    else:
        try:
            vectors = embedder.embed_texts([i["question"] for i in items], args.embedding_bin, args.model)
        except embedder.EmbeddingError as exc:
            raise SystemExit(f"Fehler: {exc}")
    embed_s = time.perf_counter() - started
    if args.tune:
        weight, best_floor = tune(conn, items, vectors)
        if args.store:
            with conn:
                store.write_meta(conn, vector_weight=weight, floor_cosine="" if best_floor is None else best_floor)
            print(f"Gespeichert in {args.db}: vector_weight={weight}, floor_cosine={best_floor}")
        return
    rows, misses = evaluate(conn, items, vectors, modes, floor, args.vector_weight)
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


if __name__ == "__main__":
    main()
