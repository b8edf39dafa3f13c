#!/usr/bin/env python3
"""Do the other pages keep their rankings when one is forgotten? evaluate.py's search measure before and after
`build_index.py --forget`, question by question.

    python3 bench/forget_rankings.py                      # wiki/, eval/questions.jsonl, 3 pages
    python3 bench/forget_rankings.py --keep-statistics    # approach 2 beside it (docs/vergessen.md)
    python3 bench/forget_rankings.py --pages 5 --json     # per page "before", "forget" (and "kept"): after, modes

Steps: the wiki's index is built once (real embedder, a temporary folder) and the questions embedded once; every
question is ranked in every mode as evaluate.py ranks it (top 10, the index's settings). Then for each of --pages
pages, spread evenly over the index's paths in sorted order (deterministic): a copy of the index, the wiki without
the page, build_index.py --forget, every question ranked again. A question counts when its expected page is not
the forgotten one. Its list is "gleich" when the list before, without the forgotten page's chunks, is the start of
the list after. Where it is not, the first chunk out of place is explained: its search text changed (the vocabulary
lost a word of the page) or only its score (BM25's chunk count, lengths and word weights; in hybrid the fused
ranks of both lists).

--keep-statistics measures a second way to forget on the same questions and pages ("Ansatz 2"): the other pages
ranked on the index from before, the page's chunks left out of every candidate query (KeptStatistics), BM25's chunk
count, average length and document frequencies and the compound vocabulary still those with the page. The product
does not do this (docs/vergessen.md): those numbers are a trace of the page. For each way, every question whose
first hit moved gets one cause: "Platz frei" (only the page's chunks left the list above it), "Vokabular" (the
question's terms or the search text of the first chunk out of place changed) or "Score" (the same text, another
score: BM25's statistics and word weights; in hybrid the fused ranks; in vector the per-file cap).

Does not handle: PostgreSQL (the same ranking arithmetic, tests/test_vectors.py), answers, several pages at once.
"""
import argparse
import collections
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
from rag.store.sqlite import SQLiteStore
from rag.store.sqlite_lexical import match_query
from rag.text import german

PAGES = 3  # pages forgotten, one at a time, each on a fresh copy of the index
MODES = ["hybrid", "vector", "lexical"]
CAUSES = ["Platz frei", "Vokabular", "Score"]  # why a question's first hit moved, see the module docstring
Ranked = collections.namedtuple("Ranked", "lists hits texts ids terms")  # rank_all's answer


class KeptStatistics(SQLiteStore):
    """Approach 2, bench only: the index from before --forget with the page's chunks left out of every candidate
    query, and nothing rescored: BM25 (FTS5's bm25() over all rows), the word weights (N and document frequencies
    with the page) and the stored vocabulary stay as they were. A reader with rights gets its own frequencies
    instead (SQLiteStore.own_frequencies)."""

    def __init__(self, path, page):
        super().__init__(path)
        self.page = page

    def hiding(self, column):
        if column == "path":
            return " AND path != ?", [self.page]
        return f" AND {column} NOT IN (SELECT id FROM docs WHERE path = ?)", [self.page]

    def hidden_ids(self):
        if self.hidden is None:
            self.hidden = {i for i, in self.conn.execute("SELECT id FROM docs WHERE path = ?", (self.page,))}
        return self.hidden

    def own_frequencies(self, rows, groups, limit):
        return rows if limit is None else rows[:limit]

    def lexical_count(self):
        return self.conn.execute("SELECT COUNT(*) FROM fts").fetchone()[0]

    def matching(self, alternatives):
        return self.conn.execute("SELECT COUNT(*) FROM fts WHERE fts MATCH ?",
                                 (match_query([alternatives]),)).fetchone()[0]


def run(*args, timeout=1800):
    """build_index.py as a reader runs it; SystemExit with its last stderr line when it fails."""
    done = subprocess.run([sys.executable, str(ROOT / "build_index.py"), "--quiet", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"Fehler: build_index.py {' '.join(map(str, args))}: {done.stderr.strip()[-300:]}")
    return done.stdout.strip().splitlines()[-1]


def rank_all(index, items, vectors):
    """Every question in every mode on an open store (closed here): Ranked with lists {mode: [[(path, chunk_index),
    …] per question]}, hits (the same shape, True where the source answers the question), texts {doc_id: search
    text} and ids {(path, chunk_index): doc_id} of the chunks the store shows, terms [query terms per question]."""
    try:
        weight, floor, reject = search.index_settings(index.meta())
        lists, hits = {}, {}
        for mode in MODES:
            found = [search.retrieve(index, item["question"], vec, mode=mode, top_k=DEPTH, floor_cosine=floor,
                                     vector_weight=weight, reject_cosine=reject).sources
                     for item, vec in zip(items, vectors)]
            lists[mode] = [[(s.path, s.chunk_index) for s in sources] for sources in found]
            hits[mode] = [[retrieval.matches(s, item["expected"]) for s in sources]
                          for item, sources in zip(items, found)]
        ids = {(r.path, r.chunk_index): i for i, r in index.sources([i for i, _, _ in index.texts()]).items()}
        vocab = index.vocab()
        return Ranked(lists, hits, {i: index.search_text(i) for i in ids.values()}, ids,
                      [german.query_terms(item["question"], vocab) for item in items])
    finally:
        index.close()


def metrics(index, items, vectors):
    """evaluate.py's Recall@1, Recall@5 and MRR@10 per mode on these questions: {mode: [r1, r5, mrr]}."""
    try:
        weight, floor, reject = search.index_settings(index.meta())
        rows = retrieval.evaluate(index, items, vectors, MODES, floor, weight, reject=reject)[0]
        return {m: [round(r["recall@1"], 3), round(r["recall@5"], 3), round(r["mrr@10"], 3)] for m, r in rows.items()}
    finally:
        index.close()


def why(chunk, old, new, before, after):
    """(German line, search text changed?): where `chunk` stood before (the forgotten page taken out) and now, and
    whether its search text changed (the vocabulary lost a word of the page) or only its score."""
    def rank(ranked):
        return ranked.index(chunk) + 1 if chunk in ranked else "–"
    changed = before.texts[before.ids[chunk]] != after.texts.get(before.ids[chunk])
    return (f"Rang {rank(old)} → {rank(new)} {chunk[0]}#{chunk[1]} "
            f"({'Suchtext geändert' if changed else 'Suchtext gleich, nur der Score'})"), changed


def first_hit(flags):
    """1-based rank of the first True, None without one. Example: [False, True] -> 2"""
    return next((n for n, hit in enumerate(flags, start=1) if hit), None)


def compare(page, before, after, items):
    """Per mode: questions counted, lists kept, a line for each list that changed, and the causes of the questions
    whose first hit moved ({cause: count}, see the module docstring)."""
    keep = [n for n, item in enumerate(items) if all(e["file"] != page for e in item["expected"])]
    out = {}
    for mode in MODES:
        same, lines, causes = 0, [], dict.fromkeys(CAUSES, 0)
        for n in keep:
            pairs = list(zip(before.lists[mode][n], before.hits[mode][n]))
            old = [c for c, _ in pairs if c[0] != page]
            new = after.lists[mode][n]
            moved_hit = first_hit(before.hits[mode][n]) != first_hit(after.hits[mode][n])
            if new[:len(old)] == old:
                same += 1
                causes["Platz frei"] += moved_hit
                continue
            first = next((k for k, (a, b) in enumerate(zip(old, new)) if a != b), len(new))
            moved = old[first:first + 1] + new[first:first + 1]  # the chunk that left this rank and the one there now
            told = [why(c, old, new, before, after) for c in moved]
            lines.append(f"{mode}: {items[n]['question']} — " + "; ".join(line for line, _ in told))
            if moved_hit and first_hit([h for c, h in pairs if c[0] != page]) == first_hit(after.hits[mode][n]):
                causes["Platz frei"] += 1
            elif moved_hit:
                vocabulary = mode != "vector" and (before.terms[n] != after.terms[n] or any(c for _, c in told))
                causes["Vokabular" if vocabulary else "Score"] += 1
        out[mode] = {"questions": len(keep), "same": same, "changed": lines, "causes": causes}
    return keep, out


def print_table(report, key, title):
    """One German table: per page and mode the measures before → after and the lists kept, the moved causes."""
    print(f"\n{title}")
    print("| vergessen | Modus | Fragen | Recall@1 | Recall@5 | MRR@10 | Liste gleich | erster Treffer verschoben: "
          + " / ".join(CAUSES) + " |")
    print("|---|---|---:|---|---|---|---:|---|")
    for p in report["pages"]:
        for mode, m in p[key]["modes"].items():
            cells = " | ".join(f"{b:.3f} → {a:.3f}" for b, a in zip(p["before"][mode], p[key]["after"][mode]))
            causes = " / ".join(str(m["causes"][c]) for c in CAUSES)
            print(f"| {p['page']} | {mode} | {m['questions']} | {cells} | {m['same']}/{m['questions']} | {causes} |")


def print_report(report):
    """The German tables (approach 1, and 2 where measured), then what changed in approach 1."""
    print(f"Index: {report['built']}")
    print_table(report, "forget", "Ansatz 1: build_index.py --forget (wie ein Neubau ohne die Seite)")
    if "kept" in report["pages"][0]:
        print_table(report, "kept", "Ansatz 2: Statistik behalten (Index von vorher, die Seite nur ausgeblendet)")
    for p in report["pages"]:
        print(f"\n{p['receipt']}; Suchtext neu geschrieben: {p['rewritten']} Chunks der übrigen Seiten")
        for key in ("forget", "kept"):
            for mode, m in p.get(key, {}).get("modes", {}).items():
                for line in m["changed"]:
                    print(f"  {'Ansatz 2 ' if key == 'kept' else ''}{line}")


def measure(index, page, before, items, vectors):
    """One way of forgetting: {"after": metrics, "modes": compare's} on the questions of the other pages;
    index(): a fresh open store of that way."""
    after = rank_all(index(), items, vectors)
    keep, modes = compare(page, before, after, items)
    subset, subvectors = [items[n] for n in keep], [vectors[n] for n in keep]
    return {"after": metrics(index(), subset, subvectors), "modes": modes}, after, keep


def main():
    parser = argparse.ArgumentParser(description="Ranglisten der übrigen Seiten vor und nach build_index.py --forget.")
    parser.add_argument("--wiki", default=str(ROOT / "wiki"), help="Wiki-Ordner (Standard: wiki/)")
    parser.add_argument("--questions", default=str(ROOT / "eval/questions.jsonl"), help="Fragen-Datei wie evaluate.py")
    parser.add_argument("--pages", type=int, default=PAGES, help=f"so viele Seiten nacheinander vergessen ({PAGES})")
    parser.add_argument("--keep-statistics", action="store_true",
                        help="auch Ansatz 2 messen: Index von vorher, die Seite nur aus den Kandidaten genommen, "
                             "BM25-Statistik und Vokabular wie vorher (nur im Benchmark)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    items = retrieval.load_questions(args.questions)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        base = str(work / "base.db")
        shutil.copytree(args.wiki, work / "wiki")
        built = run("--wiki", work / "wiki", "--db", base)
        index = store.open_store(base)
        meta, paths = index.meta(), sorted(index.pages())
        index.close()
        opts = SimpleNamespace(model=config.default_model(), embedding_bin=config.default_embedding_bin())
        vectors = retrieval.embed_questions(items, opts, meta, MODES)[0]
        before = rank_all(store.open_store(base), items, vectors)
        report = {"command": "python3 bench/forget_rankings.py " + " ".join(sys.argv[1:]), "built": built, "pages": []}
        for page in spread(paths, args.pages):
            db, wiki = work / "forget.db", work / "wiki-forget"
            shutil.copy(base, db)
            shutil.rmtree(wiki, ignore_errors=True)
            shutil.copytree(work / "wiki", wiki)
            (wiki / page).unlink()
            receipt = run("--wiki", wiki, "--db", db, "--forget", page, "--audit", work / "a.audit.jsonl")
            forgot, after, keep = measure(lambda: store.open_store(str(db)), page, before, items, vectors)
            row = {"page": page, "receipt": receipt.split(" → ")[0],
                   "rewritten": sum(1 for i, text in after.texts.items() if before.texts.get(i) != text),
                   "before": metrics(store.open_store(base), [items[n] for n in keep], [vectors[n] for n in keep]),
                   "forget": forgot}
            if args.keep_statistics:
                row["kept"] = measure(lambda: KeptStatistics(base, page), page, before, items, vectors)[0]
            report["pages"].append(row)
    print(json.dumps(report, ensure_ascii=False)) if args.json else print_report(report)


if __name__ == "__main__":
    main()
