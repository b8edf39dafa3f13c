#!/usr/bin/env python3
"""What query expansion (--expand) and follow-up rewriting (--chat) add to the time of an answer.

    python3 bench/expand_cost.py                          # 8 layperson questions, 8 follow-up pairs
    python3 bench/expand_cost.py --expand-method both     # what --expand-method both adds
    python3 bench/expand_cost.py --questions 1 --pairs 1 --pages 3 --max-tokens 1 --json   # tiny (smoke test)

wiki/ is indexed into a temporary folder with the real llama-embedding (with --pages, the pages
the questions expect come first), a real llama-server with the answer model is started, then
every step runs through rag/core.py as ask_rag.py runs it (the question embedded by a
llama-embedding process, as by default):

  expansion   per layperson question (eval/questions_layperson.jsonl, spread over the file):
              1. the whole answer without expansion (--no-floor)          -> answer_s
              2. --retrieve-only without, 3. with --expand                -> added_s = 3 − 2
              share = added_s / (answer_s + added_s). The model's calls alone: expand_s (phrases)
              and choose_s (the choice among the first results), as the method asks for them.
  follow-ups  per pair of eval/followups.jsonl: the first question answered (its answer is the
              history); the follow-up --retrieve-only alone and with that history (the default: it is
              searched together with the question before it, no model) -> carry_s = with − alone;
              then answered with the history and --rewrite: rewrite_s (the model's call) and its
              answer time; share = rewrite_s / answer time. --questions 0: only the follow-ups.

Each question is asked once in each way, in this order, so llama-server's prompt cache never holds
the prompt being timed. Medians over the questions.

Does not handle: a remote server, --embed-via server (there the embedding part of added_s is smaller),
the answerability check's refusals (a refused question has a short answer_s; --pages keeps the
pages that answer).
"""
import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import common
from common import ROOT

from ask_latency import copy_wiki  # noqa: E402  (common puts ROOT on sys.path)
from rag import config
from rag import core
from rag.models.server_process import ServerProcess  # noqa: E402
from rag.search import expand  # noqa: E402

QUESTIONS = 8  # layperson questions
PAIRS = 8  # follow-up pairs
GOAL_EXPAND_S = 3.0  # issue #18: expansion adds ≤ 3 s median on 2 cores with the default model
GOAL_REWRITE_S = 2.0  # issue #18: rewriting adds ≤ 2 s


def spread(items, limit):
    """`limit` items spread evenly. Example: 10 items, limit 3 -> items 0, 3, 6"""
    return items if limit >= len(items) else [items[i * len(items) // limit] for i in range(limit)]


def jsonl(name):
    with open(ROOT / "eval" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def timed_run(question, settings, history=()):
    """(wall seconds, Answer) of one question through the core."""
    started = time.perf_counter()
    done = core.run(question, settings, history)
    return time.perf_counter() - started, done


def checked(done):
    """The Answer, unless the model could not be asked for the expansion or the rewrite (then one German line)."""
    if done.searched and done.searched.warning:
        raise SystemExit(f"Fehler: {done.searched.warning}")
    return done


def expansion_rows(questions, base, method):
    rows = []
    for question in questions:
        answer_s, _ = timed_run(question, dataclasses.replace(base, no_floor=True))
        plain_s, _ = timed_run(question, dataclasses.replace(base, retrieve_only=True))
        expanded_s, done = timed_run(question, dataclasses.replace(base, retrieve_only=True, expand=method))
        checked(done)
        added = expanded_s - plain_s
        model_s = sum(done.timings.get(key, 0.0) for key in ("expand_s", "choose_s"))
        rows.append({"question": question[:60], "answer_s": answer_s, "plain_s": plain_s, "expanded_s": expanded_s,
                     "expand_s": done.timings.get("expand_s"), "choose_s": done.timings.get("choose_s"),
                     "added_s": added, "share": added / (answer_s + added),
                     "phrases": len(done.searched.expansions), "chosen": len(done.searched.chosen)})
        print(f"  +{added:.2f} s (Modell {model_s:.2f} s) zu {answer_s:.1f} s: {question[:60]}",
              file=sys.stderr, flush=True)
    return rows


def rewrite_rows(pairs, base):
    rows = []
    for pair in pairs:
        _, first = timed_run(pair["first"], dataclasses.replace(base, no_floor=True))
        history = [{"role": "user", "content": pair["first"]}, {"role": "assistant", "content": first.text or ""}]
        alone_s, _ = timed_run(pair["followup"], dataclasses.replace(base, retrieve_only=True))
        with_s, _ = timed_run(pair["followup"], dataclasses.replace(base, retrieve_only=True), history)
        answer_s, done = timed_run(pair["followup"], dataclasses.replace(base, no_floor=True, rewrite=True), history)
        rewrite_s = checked(done).timings.get("rewrite_s")  # None: the follow-up needed no history
        rewritten = done.searched.question if done.searched else pair["followup"]
        rows.append({"followup": pair["followup"], "rewritten": rewritten, "answer_s": answer_s, "carry_s": with_s - alone_s,
                     "rewrite_s": rewrite_s, "share": rewrite_s / answer_s if rewrite_s is not None else None})
        print(f"  +{with_s - alone_s:.2f} s mit der Frage davor, +{rewrite_s} s umgeschrieben, zu {answer_s:.1f} s: "
              f"{pair['followup']} → {rewritten}",
              file=sys.stderr, flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description="Misst, was --expand und das Umschreiben von Folgefragen kosten.")
    parser.add_argument("--wiki", default=str(ROOT / "wiki"), help="Wiki-Ordner (Standard: wiki/ des Projekts)")
    parser.add_argument("--pages", type=int, help="nur die ersten N Seiten indexieren (Standard: alle)")
    parser.add_argument("--questions", type=int, default=QUESTIONS,
                        help=f"Laienfragen aus eval/questions_layperson.jsonl (Standard: {QUESTIONS})")
    parser.add_argument("--pairs", type=int, default=PAIRS, help=f"Paare aus eval/followups.jsonl (Standard: {PAIRS})")
    parser.add_argument("--expand-method", choices=expand.METHODS, default=expand.METHOD,
                        help=f"was --expand fragt, wie ask_rag.py --expand-method (Standard: {expand.METHOD})")
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(), help="Pfad zu llama-embedding")
    parser.add_argument("--server-bin", default=config.default_server_bin(), help="Pfad zu llama-server")
    parser.add_argument("--model", default=config.default_model(), help="GGUF-Modell für die Embeddings")
    parser.add_argument("--llm-model", default=config.default_llm_model(), help="GGUF-Modell für llama-server")
    parser.add_argument("--max-tokens", type=int, help="Antwortlänge (Standard: die von ask_rag.py)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    common.require_llama(args)
    info = common.machine()
    chosen = spread(jsonl("questions_layperson.jsonl"), args.questions)
    questions = [i["question"] for i in chosen]
    pairs = spread(jsonl("followups.jsonl"), args.pairs)
    answering = [e["file"] for item in chosen + pairs for e in item.get("expected", [])]
    with tempfile.TemporaryDirectory(prefix="rag-bench-expand-") as tmp:
        tmp = Path(tmp)
        wiki, db = copy_wiki(args.wiki, tmp / "wiki", args.pages, answering), str(tmp / "knowledge.db")
        env = {**os.environ, "LLAMA_EMBEDDING": args.embedding_bin, "RAG_EMBED_MODEL": args.model}
        print("  Index bauen …", file=sys.stderr, flush=True)
        common.measure([sys.executable, str(ROOT / "build_index.py"), "--rebuild", "--quiet", "--wiki", str(wiki),
                        "--db", db], env=env)
        print("  llama-server starten …", file=sys.stderr, flush=True)
        with ServerProcess(model=args.llm_model, binary=args.server_bin) as server:
            base = core.Settings(db=db, model=args.model, embedding_bin=args.embedding_bin, server=server.url, audit="",
                                 max_tokens=args.max_tokens)
            expansion = expansion_rows(questions, base, args.expand_method)
            rewriting = rewrite_rows(pairs, base)
    med = {"added_s": common.median([r["added_s"] for r in expansion]),
           "expand_s": common.median([r["expand_s"] for r in expansion if r["expand_s"] is not None]),
           "choose_s": common.median([r["choose_s"] for r in expansion if r["choose_s"] is not None]),
           "expand_share": common.median([r["share"] for r in expansion]),
           "answer_s": common.median([r["answer_s"] for r in expansion]),
           "carry_s": common.median([r["carry_s"] for r in rewriting]),
           "rewrite_s": common.median([r["rewrite_s"] for r in rewriting if r["rewrite_s"] is not None]),
           "rewrite_share": common.median([r["share"] for r in rewriting if r["share"] is not None]),
           "followup_answer_s": common.median([r["answer_s"] for r in rewriting])}
    info["loadavg_end"] = common.loadavg()
    report = {"benchmark": "expand_cost", "command": common.command_line(), "machine": info,
              "params": {"questions": len(questions), "pairs": len(pairs), "pages": args.pages, "max_tokens": args.max_tokens,
                         "expand_method": args.expand_method, "llm_model": args.llm_model, "model": args.model},
              "median": med, "expansion": expansion, "rewriting": rewriting,
              "goals": [{"goal": f"expansion adds ≤ {GOAL_EXPAND_S:.0f} s (median)",
                         "met": med["added_s"] is not None and med["added_s"] <= GOAL_EXPAND_S, "value": med["added_s"]},
                        {"goal": f"a follow-up (default: with the question before it) adds ≤ {GOAL_REWRITE_S:.0f} s "
                                 f"(median)",
                         "met": med["carry_s"] is not None and med["carry_s"] <= GOAL_REWRITE_S, "value": med["carry_s"]},
                        {"goal": f"rewriting (--rewrite) adds ≤ {GOAL_REWRITE_S:.0f} s (median)",
                         "met": med["rewrite_s"] is not None and med["rewrite_s"] <= GOAL_REWRITE_S,
                         "value": med["rewrite_s"]}]}
    common.emit(args, report, render(report))


def render(report):
    m, p = report["median"], report["params"]
    lines = [common.header(f"Kosten von --expand ({p['expand_method']}) und vom Umschreiben: {p['questions']} "
                           f"Laienfragen, {p['pairs']} Folgefragen, Median, Modell {os.path.basename(p['llm_model'])}",
                           report["machine"]),
             f"Befehl: {report['command']}", "",
             common.table([("step", "Schritt"), ("seconds", "Sekunden"), ("share", "Anteil an der Antwort")], [
                 {"step": "--expand: zusätzlich (Modell + Einbetten + Suche)", "seconds": m["added_s"],
                  "share": m["expand_share"]},
                 {"step": "  davon das Modell: Suchbegriffe", "seconds": m["expand_s"]},
                 {"step": "  davon das Modell: Auswahl unter den Treffern", "seconds": m["choose_s"]},
                 {"step": "  ganze Antwort ohne --expand", "seconds": m["answer_s"]},
                 {"step": "Folgefrage mit der Frage davor suchen (Standard)", "seconds": m["carry_s"]},
                 {"step": "Folgefrage umschreiben (--rewrite, Modell)", "seconds": m["rewrite_s"],
                  "share": m["rewrite_share"]},
                 {"step": "  ganze Antwort der Folgefrage", "seconds": m["followup_answer_s"]}]), ""]
    lines += [common.goal_line(g["goal"], g["met"], g["value"]) for g in report["goals"] if g["value"] is not None]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
