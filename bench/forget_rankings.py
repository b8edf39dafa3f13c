#!/usr/bin/env python3
"""Do the other pages keep their rankings when one is forgotten? evaluate.py's search measure before and after
`build_index.py --forget`, question by question.

    python3 bench/forget_rankings.py                      # wiki/, eval/questions.jsonl, 3 pages
    python3 bench/forget_rankings.py --pages 5 --json

Steps: the wiki's index is built once (real embedder, a temporary folder) and the questions embedded once; every
question is ranked in every mode as evaluate.py ranks it (top 10, the index's settings). Then for each of --pages
pages, spread evenly over the index's paths in sorted order (deterministic): a copy of the index, the wiki without
the page, build_index.py --forget, every question ranked again. A question counts when its expected page is not
the forgotten one. Its list is "gleich" when the list before, without the forgotten page's chunks, is the start of
the list after. Where it is not, the first chunk out of place is explained: its search text changed (the vocabulary
lost a word of the page) or only its score (BM25's chunk count, lengths and word weights; in hybrid the fused
ranks of both lists).

Does not handle: PostgreSQL (the same ranking arithmetic, tests/test_vectors.py), answers, several pages at once.
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import common  # noqa: F401  (puts the repository on sys.path)
from common import ROOT

from eval.measure import retrieval
from eval.measure.common import DEPTH, spread
from rag import config, store
from rag.search import ranking as search

PAGES = 3  # pages forgotten, one at a time, each on a fresh copy of the index
MODES = ["hybrid", "vector", "lexical"]


def run(*args, timeout=1800):
    """build_index.py as a reader runs it; SystemExit with its last stderr line when it fails."""
    done = subprocess.run([sys.executable, str(ROOT / "build_index.py"), "--quiet", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"Fehler: build_index.py {' '.join(map(str, args))}: {done.stderr.strip()[-300:]}")
    return done.stdout.strip().splitlines()[-1]


def rank_all(db, items, vectors):
    """({mode: [[(path, chunk_index), …] per question]}, {doc_id: search text}, {(path, chunk_index): doc_id})."""
    index = store.open_store(db)
    try:
        weight, floor, reject = search.index_settings(index.meta())
        lists = {mode: [[(s.path, s.chunk_index) for s in search.retrieve(
            index, item["question"], vec, mode=mode, top_k=DEPTH, floor_cosine=floor, vector_weight=weight,
            reject_cosine=reject).sources] for item, vec in zip(items, vectors)] for mode in MODES}
        texts = {i: index.search_text(i) for i, _, _ in index.texts()}
        ids = {(r.path, r.chunk_index): i for i, r in index.sources(list(texts)).items()}
        return lists, texts, ids
    finally:
        index.close()


def metrics(db, items, vectors):
    """evaluate.py's Recall@1, Recall@5 and MRR@10 per mode on these questions: {mode: [r1, r5, mrr]}."""
    index = store.open_store(db)
    try:
        weight, floor, reject = search.index_settings(index.meta())
        rows = retrieval.evaluate(index, items, vectors, MODES, floor, weight, reject=reject)[0]
        return {m: [round(r["recall@1"], 3), round(r["recall@5"], 3), round(r["mrr@10"], 3)] for m, r in rows.items()}
    finally:
        index.close()


def why(chunk, old, new, texts, ids):
    """One German line: where `chunk` stood before (the forgotten page taken out) and now, and whether its search
    text changed (the vocabulary lost a word of the page) or only its score. texts: (before, after) {doc_id: text}."""
    def rank(ranked):
        return ranked.index(chunk) + 1 if chunk in ranked else "–"
    changed = texts[0][ids[chunk]] != texts[1].get(ids[chunk])
    return (f"Rang {rank(old)} → {rank(new)} {chunk[0]}#{chunk[1]} "
            f"({'Suchtext geändert' if changed else 'Suchtext gleich, nur der Score'})")


def compare(page, before, after, items):
    """Per mode: questions counted, lists kept, and a line for each list that changed."""
    keep = [n for n, item in enumerate(items) if all(e["file"] != page for e in item["expected"])]
    out = {}
    for mode in MODES:
        same, lines = 0, []
        for n in keep:
            old = [c for c in before[0][mode][n] if c[0] != page]
            new = after[0][mode][n]
            if new[:len(old)] == old:
                same += 1
                continue
            first = next((k for k, (a, b) in enumerate(zip(old, new)) if a != b), len(new))
            moved = old[first:first + 1] + new[first:first + 1]  # the chunk that left this rank and the one there now
            lines.append(f"{mode}: {items[n]['question']} — " +
                         "; ".join(why(c, old, new, (before[1], after[1]), before[2]) for c in moved))
        out[mode] = {"questions": len(keep), "same": same, "changed": lines}
    return keep, out


def print_report(report):
    """The German table: per page and mode the measures before → after and the lists kept, then what changed."""
    print(f"Index: {report['built']}")
    print("| vergessen | Modus | Fragen | Recall@1 | Recall@5 | MRR@10 | Liste gleich |")
    print("|---|---|---:|---|---|---|---:|")
    for p in report["pages"]:
        for mode, m in p["modes"].items():
            cells = " | ".join(f"{b:.3f} → {a:.3f}" for b, a in zip(p["before"][mode], p["after"][mode]))
            print(f"| {p['page']} | {mode} | {m['questions']} | {cells} | {m['same']}/{m['questions']} |")
    for p in report["pages"]:
        print(f"\n{p['receipt']}; Suchtext neu geschrieben: {p['rewritten']} Chunks der übrigen Seiten")
        for mode, m in p["modes"].items():
            for line in m["changed"]:
                print(f"  {line}")


def main():
    parser = argparse.ArgumentParser(description="Ranglisten der übrigen Seiten vor und nach build_index.py --forget.")
    parser.add_argument("--wiki", default=str(ROOT / "wiki"), help="Wiki-Ordner (Standard: wiki/)")
    parser.add_argument("--questions", default=str(ROOT / "eval/questions.jsonl"), help="Fragen-Datei wie evaluate.py")
    parser.add_argument("--pages", type=int, default=PAGES, help=f"so viele Seiten nacheinander vergessen ({PAGES})")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    items = retrieval.load_questions(args.questions)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        shutil.copytree(args.wiki, work / "wiki")
        built = run("--wiki", work / "wiki", "--db", work / "base.db")
        index = store.open_store(str(work / "base.db"))
        meta, paths = index.meta(), sorted(index.pages())
        index.close()
        opts = SimpleNamespace(model=config.default_model(), embedding_bin=config.default_embedding_bin())
        vectors = retrieval.embed_questions(items, opts, meta, MODES)[0]
        before = rank_all(str(work / "base.db"), items, vectors)
        report = {"command": "python3 bench/forget_rankings.py " + " ".join(sys.argv[1:]), "built": built, "pages": []}
        for page in spread(paths, args.pages):
            db, wiki = work / "forget.db", work / "wiki-forget"
            shutil.copy(work / "base.db", db)
            shutil.rmtree(wiki, ignore_errors=True)
            shutil.copytree(work / "wiki", wiki)
            (wiki / page).unlink()
            receipt = run("--wiki", wiki, "--db", db, "--forget", page, "--audit", work / "a.audit.jsonl")
            after = rank_all(str(db), items, vectors)
            keep, modes = compare(page, before, after, items)
            subset, subvectors = [items[n] for n in keep], [vectors[n] for n in keep]
            report["pages"].append({
                "page": page, "receipt": receipt.split(" → ")[0],
                "rewritten": sum(1 for i, text in after[1].items() if before[1].get(i) != text),
                "before": metrics(str(work / "base.db"), subset, subvectors),
                "after": metrics(str(db), subset, subvectors), "modes": modes})
    print(json.dumps(report, ensure_ascii=False)) if args.json else print_report(report)


if __name__ == "__main__":
    main()
