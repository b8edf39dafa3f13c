#!/usr/bin/env python3
"""Rights in retrieval against an index of the reader's pages alone: R@1, R@5, MRR@10 on eval/questions.jsonl.

    python3 bench/access_recall.py                         # 5 seeds, real e5 embedder (2 cores: ~10 min)
    python3 bench/access_recall.py --seeds 1,2 --modes hybrid
    python3 bench/access_recall.py --embedder fake --seeds 1 --json    # tiny (smoke test)

The goal of issue 30: a user who may read only 10 % of the pages gets answers from those pages and no
others, and retrieval from their pages is not worse than an index built from their pages alone (R@5
within 0.02 on the questions whose expected page is among them).

Per run: wiki/ is copied to a temporary folder with a `.access` at its root (group OTHER: every page is
restricted), and that big index is built once. Per seed, SHARE of all pages (only .md/.txt pages: only
they can carry their own `access:` line) are chosen with random.Random(seed) and get `access: [GROUP]`
in their front matter; build_index.py picks the changed rules up incrementally (no new embeddings). The
reader Reader("zehn-prozent", (GROUP,)) sees exactly those pages (store.open_store(reader=…), as
rag/core.py opens it with Settings.reader). Against it: an index built from the original files of the
same pages alone, without any rule. Both are measured with eval/measure/retrieval.py's evaluate():

  questions   of eval/questions.jsonl whose expected page is among the chosen ones (expected entries of
              other pages dropped); every other question counts as "not answerable from these pages"
              (the refusal column)
  leak check  every question, every mode, the top 10 sources: any path outside the chosen pages is counted
              (must be 0)
  same text   the chosen pages' chunks (heading, content hash) in both indexes, compared: a difference would
              come from the pages, not from the index

What differs between the two indexes by design (reported, not tuned): the compound vocabulary (learned
only from pages without a rule: here from none in the big index), BM25's average chunk length (the
whole index's), and doc ids (ties are broken by path and chunk, not id).

Does not handle: PostgreSQL (the same store interface; tests/test_access.py compares both stores),
answers (only retrieval), pages other than .md/.txt as the reader's pages.
"""
import argparse
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import common
from common import ROOT

from rag import config, store  # noqa: E402  (common puts ROOT on sys.path)
from rag.ingest import pages
from rag.ingest.pages import FRONT_MATTER, LEADING
from rag.search import ranking as search
from rag.store.access import Reader

from eval.measure import retrieval
from eval.measure.common import DEPTH

SEEDS = (1, 2, 3, 4, 5)  # one choice of pages per seed
SHARE = 0.10  # share of all pages the reader may read
GROUP = "zehn"  # the reader's group, written into the chosen pages' front matter
OTHER = "andere"  # the group of every other page (the wiki root's .access)
QUESTIONS = "eval/questions.jsonl"
MODES = "hybrid,vector,lexical"
GOAL_R5 = 0.02  # R@5 with rights may be at most this much below the small index's (issue 30)


# -- the wiki copies -------------------------------------------------------------------------------
def choose(all_pages, seed, share=SHARE):
    """The reader's pages: round(share · all pages) of the .md/.txt pages, by seed, sorted.

    Example: 38 pages, share 0.1 -> 4 pages; the same seed gives the same 4.
    """
    candidates = [p for p in all_pages if p.endswith((".md", ".txt"))]
    k = max(1, round(share * len(all_pages)))
    return sorted(random.Random(seed).sample(candidates, k))


def with_access(text, group):
    """The page with `access: [group]` in its front matter (a front matter is added when it has none).

    Example: "---\\ntitle: A\\n---\\n# A" -> "---\\naccess: [zehn]\\ntitle: A\\n---\\n# A"
    """
    lead = LEADING.match(text).end()
    if FRONT_MATTER.match(text[lead:]):
        first = text.index("\n", lead) + 1  # after the opening ---
        return text[:first] + f"access: [{group}]\n" + text[first:]
    return f"---\naccess: [{group}]\n---\n" + text


def set_rules(big, wiki, chosen, before):
    """Restore the pages of the seed before, then give the chosen pages the reader's group."""
    for rel in before:
        shutil.copyfile(wiki / rel, big / rel)
    for rel in chosen:
        (big / rel).write_text(with_access((wiki / rel).read_text(encoding="utf-8"), GROUP), encoding="utf-8")


def small_wiki(folder, wiki, chosen):
    """A wiki of the chosen pages alone, their original files (no rule anywhere)."""
    for rel in chosen:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(wiki / rel, folder / rel)
    return folder


def build(wiki, db, env):
    """build_index.py over wiki into db, as a reader runs it; returns its summary line."""
    done = subprocess.run([sys.executable, str(ROOT / "build_index.py"), "--quiet", "--wiki", str(wiki), "--db", db],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"Fehler: build_index.py scheiterte: {done.stderr.strip()[-300:]}")
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def embedded(summary):
    """Example: "Seiten: … · Chunks: 0 eingebettet, 25 wiederverwendet, …" -> 0"""
    found = re.search(r"(\d+) eingebettet", summary)
    return int(found.group(1)) if found else None


def chunk_keys(db, paths):
    """{path: [(heading, content hash)…]} of these pages' chunks, in order (read straight from the file)."""
    conn = sqlite3.connect(db)
    rows = conn.execute(f"SELECT path, heading, content_hash FROM docs WHERE path IN ({','.join('?' * len(paths))}) "
                        "ORDER BY path, chunk_index", list(paths)).fetchall()
    conn.close()
    out = {}
    for path, heading, digest in rows:
        out.setdefault(path, []).append((heading, digest))
    return out


# -- measuring -------------------------------------------------------------------------------------
def reader_items(questions, chosen):
    """The questions as the reader's set: expected entries on the chosen pages, else expected [] (not answerable).

    Example: chosen {"a.md"}; expected [a.md › X, b.md › Y] -> [a.md › X]; expected [b.md › Y] -> []
    """
    return [{**q, "expected": [e for e in q["expected"] if e["file"] in chosen]} for q in questions]


def measure(index, items, vectors, modes):
    """evaluate() of eval/measure/retrieval.py with the index's own stored settings; adds them to the rows."""
    weight, floor, reject = search.index_settings(index.meta())
    rows, _ = retrieval.evaluate(index, items, vectors, modes, floor, weight, reject=reject)
    return rows, {"vector_weight": weight, "floor_cosine": floor, "reject_cosine": reject,
                  "vocab": len(index.vocab()), "chunks_visible": index.lexical_count()}


def outside(index, items, vectors, modes, chosen):
    """Sources outside the chosen pages among the top DEPTH of every question and mode (must be 0), and sources seen."""
    weight, floor, reject = search.index_settings(index.meta())
    bad, seen = [], 0
    for mode in modes:
        for item, vector in zip(items, vectors):
            found = search.retrieve(index, item["question"], vector, mode=mode, top_k=DEPTH, floor_cosine=floor,
                                    vector_weight=weight, reject_cosine=reject)
            seen += len(found.sources)
            bad += [(mode, item["question"], s.path) for s in found.sources if s.path not in chosen]
    return bad, seen


def pooled(runs, mode):
    """R@1/R@5/MRR@10 over every seed's questions together (each rate times its question count)."""
    out = {}
    for side in ("rights", "alone"):
        n = sum(r["questions_in"] for r in runs)
        out[side] = {m: sum(r[side][mode][m] * r["questions_in"] for r in runs) / n if n else None
                     for m in ("recall@1", "recall@5", "mrr@10")}
    out["questions_in"] = sum(r["questions_in"] for r in runs)
    return out


def run_seed(seed, ctx):
    chosen = choose(ctx["all_pages"], seed)
    set_rules(ctx["big"], ctx["wiki"], chosen, ctx["before"])
    ctx["before"] = chosen
    big_summary = build(ctx["big"], ctx["big_db"], ctx["env"])
    small_db = str(ctx["tmp"] / f"klein-{seed}.db")
    small_summary = build(small_wiki(ctx["tmp"] / f"klein-{seed}", ctx["wiki"], chosen), small_db, ctx["env"])
    items = reader_items(ctx["questions"], set(chosen))
    n_in = sum(1 for i in items if i["expected"])
    print(f"  Saat {seed}: {', '.join(chosen)} – {n_in} Fragen", file=sys.stderr, flush=True)
    big = store.open_store(ctx["big_db"], reader=Reader("zehn-prozent", (GROUP,)))
    small = store.open_store(small_db)
    try:
        rights, rights_info = measure(big, items, ctx["vectors"], ctx["modes"])
        alone, alone_info = measure(small, items, ctx["vectors"], ctx["modes"])
        bad, seen = outside(big, items, ctx["vectors"], ctx["modes"], set(chosen))
    finally:
        big.close()
        small.close()
    same = chunk_keys(ctx["big_db"], chosen) == chunk_keys(small_db, chosen)
    return {"seed": seed, "pages": chosen, "questions_in": n_in, "questions_not_answerable": len(items) - n_in,
            "rights": rights, "alone": alone, "rights_index": rights_info, "alone_index": alone_info,
            "outside": len(bad), "outside_examples": bad[:5], "sources_checked": seen, "same_chunks": same,
            "big_build": big_summary, "big_embedded": embedded(big_summary), "small_build": small_summary}


def report_text(report):
    lines = [common.header("Rechte in der Suche gegen einen Index nur der eigenen Seiten", report["machine"]),
             f"Befehl: {report['command']}",
             f"Wiki: {report['params']['pages']} Seiten, je Saat {report['params']['chosen']} für die Gruppe "
             f"„{GROUP}“, alle anderen „{OTHER}“; Fragen: {report['params']['questions']}", ""]
    rows = []
    for r in report["seeds"]:
        for mode in report["params"]["modes"]:
            a, b = r["rights"][mode], r["alone"][mode]
            rows.append({"seed": r["seed"], "mode": mode, "n": r["questions_in"],
                         "r1": a["recall@1"], "r1s": b["recall@1"], "r5": a["recall@5"], "r5s": b["recall@5"],
                         "mrr": a["mrr@10"], "mrrs": b["mrr@10"],
                         "ref": a["refused_out_of_wiki"], "refs": b["refused_out_of_wiki"],
                         "wrong": a["refused_in_wiki"], "wrongs": b["refused_in_wiki"]})
    for mode in report["params"]["modes"]:
        p = report["pooled"][mode]
        rows.append({"seed": "alle", "mode": mode, "n": p["questions_in"],
                     "r1": p["rights"]["recall@1"], "r1s": p["alone"]["recall@1"],
                     "r5": p["rights"]["recall@5"], "r5s": p["alone"]["recall@5"],
                     "mrr": p["rights"]["mrr@10"], "mrrs": p["alone"]["mrr@10"]})
    cols = [("seed", "Saat"), ("mode", "Modus"), ("n", "Fragen"), ("r1", "R@1 Rechte"), ("r1s", "R@1 allein"),
            ("r5", "R@5 Rechte"), ("r5s", "R@5 allein"), ("mrr", "MRR Rechte"), ("mrrs", "MRR allein"),
            ("ref", "abgelehnt (nicht ihre) Rechte"), ("refs", "… allein"),
            ("wrong", "fälschlich abgelehnt Rechte"), ("wrongs", "… allein")]
    lines.append(common.table(cols, rows))
    lines.append("")
    for r in report["seeds"]:
        lines.append(f"Saat {r['seed']}: {', '.join(r['pages'])}; großer Index: {r['big_build'].split(' → ')[0]}; "
                     f"gleiche Chunks: {common.fmt(r['same_chunks'])}; Wortschatz {r['rights_index']['vocab']} / "
                     f"{r['alone_index']['vocab']} Wörter, sichtbare Chunks {r['rights_index']['chunks_visible']} / "
                     f"{r['alone_index']['chunks_visible']}")
    checked = sum(r["sources_checked"] for r in report["seeds"])
    lines.append(f"Quellen außerhalb der eigenen Seiten: {report['outside']} von {checked} geprüften "
                 f"(Top {DEPTH}, jede Frage, jeder Modus, jede Saat)")
    lines += [common.goal_line(g["goal"], g["met"], g["detail"]) for g in report["goals"]]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description="Misst die Suche eines Benutzers, der nur 10 % der Seiten lesen darf: "
                                                 "mit Rechten im ganzen Index gegen einen Index nur seiner Seiten.")
    parser.add_argument("--wiki", default="wiki", help="Wiki-Ordner, der kopiert wird (Standard: wiki)")
    parser.add_argument("--questions", default=QUESTIONS, help=f"Fragen (Standard: {QUESTIONS})")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="Saaten der Seitenwahl, kommagetrennt")
    parser.add_argument("--modes", default=MODES, help=f"Suchmodi, kommagetrennt (Standard: {MODES})")
    parser.add_argument("--embedder", choices=("real", "fake"), default="real",
                        help="real: llama-embedding mit e5 aus dem Setup (Standard); fake: Zufallsvektoren (Smoke-Test)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    modes = retrieval.parse_modes(args.modes, MODES)
    wiki = (ROOT / args.wiki).resolve()
    info = common.machine()
    with tempfile.TemporaryDirectory(prefix="rag-bench-access-") as tmp:
        tmp = Path(tmp)
        if args.embedder == "fake":
            binary, model = common.write_fake_embedder(tmp)
        else:
            binary, model = config.default_embedding_bin(), config.default_model()
            common.require((binary, "llama-embedding"), (model, "Embedding-Modell"))
        env = {**os.environ, "LLAMA_EMBEDDING": binary, "RAG_EMBED_MODEL": model}
        big = tmp / "gross"
        shutil.copytree(wiki, big)
        (big / ".access").write_text(f"# alle Seiten: nur die Gruppe {OTHER}\n{OTHER}\n", encoding="utf-8")
        big_db = str(tmp / "gross.db")
        print("  großen Index bauen …", file=sys.stderr, flush=True)
        first = build(big, big_db, env)
        all_pages = pages.find_pages(wiki)
        questions = retrieval.load_questions(ROOT / args.questions)
        index = store.open_store(big_db)
        embed_args = argparse.Namespace(embedding_bin=binary, model=model)
        vectors, _ = retrieval.embed_questions(questions, embed_args, index.meta(), modes)
        index.close()
        ctx = {"tmp": tmp, "wiki": wiki, "big": big, "big_db": big_db, "env": env, "all_pages": all_pages,
               "questions": questions, "vectors": vectors, "modes": modes, "before": []}
        runs = [run_seed(seed, ctx) for seed in seeds]
    report = {"benchmark": "access_recall", "command": common.command_line(), "machine": info,
              "params": {"pages": len(all_pages), "chosen": len(runs[0]["pages"]) if runs else 0, "share": SHARE,
                         "seeds": seeds, "modes": modes, "questions": args.questions, "embedder": args.embedder,
                         "first_build": first},
              "seeds": runs, "pooled": {mode: pooled(runs, mode) for mode in modes},
              "outside": sum(r["outside"] for r in runs)}
    goals = [{"goal": "keine Quelle außerhalb der eigenen Seiten", "met": report["outside"] == 0,
              "detail": f"{report['outside']} außerhalb"}]
    if "hybrid" in modes:
        p = report["pooled"]["hybrid"]
        gap = p["rights"]["recall@5"] - p["alone"]["recall@5"] if p["questions_in"] else None
        goals.append({"goal": f"R@5 (hybrid, alle Saaten) höchstens {GOAL_R5} unter dem Index nur der eigenen Seiten",
                      "met": gap is not None and gap >= -GOAL_R5 - 1e-9,
                      "detail": f"{p['rights']['recall@5']:.3f} gegen {p['alone']['recall@5']:.3f} über "
                                f"{p['questions_in']} Fragen" if gap is not None else "keine Fragen"})
    report["goals"] = goals
    info["loadavg_end"] = common.loadavg()
    common.emit(args, report, report_text(report))


if __name__ == "__main__":
    main()
