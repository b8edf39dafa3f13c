#!/usr/bin/env python3
"""Votes and the authors' report (issue 45): how long one vote takes to write, how long the report
takes over 10,000 audit lines, and which cosine separates topics for the clustering.

    python3 bench/feedback.py                      # fake embedder (384 dims), wiki/, 10,000 lines
    python3 bench/feedback.py --embedder real      # e5 embeds the report's questions
    python3 bench/feedback.py --records 300 --votes 20 --json     # tiny (smoke test)
    python3 bench/feedback.py --threshold          # e5: the cosine threshold per pair F1

Steps (not --threshold):
  1. index    wiki/ with the chosen embedder (build_index.py --quiet, SQLite)
  2. log      RECORDS synthetic audit lines over the last 30 days, each about as long as a real one:
              a REFUSED share refused (DISTINCT different question texts, USERS pseudonyms), the
              rest answers citing real sections of the index
  3. votes    VOTES votes on answers chosen evenly over the log, so the backward search of the
              audit log (rag/audit/feedback.py find) reads half of it on average, then VOTES on the
              newest answers (as a reader votes): rag/doors/ratings.py vote in this process, p50
              and p95 (goal: p50 ≤ 10 ms)
  2b. build  build_index.py on the unchanged wiki twice: first with the sections' own questions
              to embed (rag/ingest/headings.py; a fresh build embeds them too), then with nothing
              to do; the difference is what the report's questions cost the build
  4. report   `ask_rag.py --report --json` as a whole process, twice (goal: ≤ 5 s on 2 cores): the
              first searches every section for "hard to find" with the questions' vectors the build
              made, the second reads the result back (kept beside the votes until the index
              changes); then in this process step by step (reading the log, embedding and
              grouping the refused questions, the nearest pages, searching every section, and
              that again with no vectors kept); the grouping also in pure Python
              (RAG_PURE_PYTHON=1) when numpy is installed

--threshold: the cosine threshold of the grouping, with the real model (bench/feedback_threshold.py
says how).

Does not handle: PostgreSQL votes (tests/test_feedback.py covers the store; the vote's cost there is
one round trip more), the first report's embedding with a warm embedding server (--serve).
"""
import argparse
import dataclasses
import json
import os
import random
import shutil
import sys
import tempfile
import time

import common
import feedback_threshold
from common import ROOT

from rag import config, core, store  # noqa: E402  (common puts ROOT on sys.path)
from rag.audit import log as audit
from rag.answer.prompt import NO_INFO
from rag.audit import feedback
from rag.doors import common as doors
from rag.doors import ratings
from rag.ingest import headings
from rag.report import build, clusters, gaps, hard
from rag.store.access import Reader

RECORDS = 10_000  # audit lines
REFUSED = 0.3  # share of refused answers
DISTINCT = 300  # different refused question texts
USERS = 40  # pseudonyms
VOTES = 200  # votes written
DIM = 384  # the fake embedder's dimensions (e5-small's)
SEED = 45
SECRET = "bench-geheimnis"  # RAG_AUDIT_SECRET of the synthetic pseudonyms
GOAL_VOTE_MS, GOAL_REPORT_S = 10, 5
OPENINGS = ["", "Kurze Frage: ", "Hallo, ", "Weiß jemand: ", "Frage: ", "Moin, ", "Hilfe: "]
ENDINGS = ["", " Danke!", " (dringend)", " Gruß", " – bitte kurz", " Danke im Voraus."]


# -- the synthetic audit log --------------------------------------------------------------------
def questions(distinct, rnd):
    """`distinct` different question texts: the TOPICS' wordings with openings and endings."""
    texts = sorted({o + q + e for q in sum(feedback_threshold.TOPICS.values(), []) for o in OPENINGS for e in ENDINGS})
    return sorted(rnd.sample(texts, min(distinct, len(texts))))


def line_for(when, name, question, sections):
    """One audit line about as long as a real one: refused (question given) or a cited answer."""
    refused = question is not None
    return {"id": audit.new_id(), "time": when, "user": audit.pseudonym(name, SECRET),
            "mode": "hybrid", "question": question or "Wie lege ich eine Mailbox an?",
            "answer": NO_INFO if refused else "Mit cyradm: cm user/vorname.nachname [1]. " * 8,
            "chunks": [{"path": p, "heading": h, "chunk_index": 0, "sha256": "0" * 64, "flags": []}
                       for p, h in sections], "citations": None if refused else {"valid": [1]},
            "timings": {"embed_s": 0.02, "retrieve_s": 0.03, "first_token_s": 2.1},
            "support": [{"text": "Mit cyradm: cm user/vorname.nachname.", "verdict": "gestützt"}],
            "prompt_sha256": "0" * 64, "llm_called": not refused, "kind": "howto"}


def audit_log(path, sections, args, rnd):
    """Write the synthetic log; returns [(answer id, asker)] of the answers citing a section."""
    texts, names, answered = questions(args.distinct, rnd), [f"leser-{n}" for n in range(USERS)], []
    start, period = time.time() - 30 * 86400, 30 * 86400 / args.records
    with open(path, "w", encoding="utf-8") as f:
        for n in range(args.records):
            when = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(start + n * period))
            question = rnd.choice(texts) if rnd.random() < REFUSED else None
            name = rnd.choice(names)
            entry = line_for(when, name, question, rnd.sample(sections, min(4, len(sections))))
            f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
            if question is None:
                answered.append((entry["id"], name))
    return answered


# -- measurements ------------------------------------------------------------------------------
def vote_times(settings, chosen, rnd):
    """Milliseconds of each vote (ratings.vote in this process, as its asker) on these answers."""
    times = []
    for answer_id, name in chosen:
        asker = dataclasses.replace(settings, reader=Reader(name, None), audit_secret=SECRET)
        started = time.perf_counter()
        vote = -1 if rnd.random() < 0.5 else 1
        ratings.vote(asker, answer_id, vote, "Die Quota stimmt nicht")
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)


def asked_vectors(settings):
    """What asking left beside the votes: the vector of each refused question of the log, kept as
    ask_rag.py keeps it when it refuses (core.keep_vector; the embedding is the question's own,
    made for the search). Returns the milliseconds of each keep, sorted."""
    refusals, _ = build.audit_lines(settings.audit, None)
    texts = sorted(gaps.refused_questions(refusals))
    index, meta, _ = core.open_index(settings)
    index.close()
    times = []
    for text, vector in zip(texts, core.embed(texts, settings, meta, "hybrid", {})):
        started = time.perf_counter()
        feedback.keep_vector(settings.db, meta.get("embed_model"), text, vector)
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)


def percentile(values, share):
    """Example: percentile([1, 2, 3, 4], 0.5) -> 2"""
    return values[min(len(values) - 1, int(share * (len(values) - 1) + 0.5))] if values else None


def report_steps(settings, wiki):
    """Seconds of each step of build.build, in this process, with nothing kept (in memory or
    beside the votes) but what build_index.py keeps: as the first report after the index
    changed. hard_to_find_embedding_s: the same search when no build made the sections' questions
    (rag/ingest/headings.py), as before --forget's next build."""
    gaps.cache.clear()
    hard.kept.clear()
    table = feedback.Table(settings.db)
    table.write(("DELETE FROM kept WHERE key NOT LIKE ?", (headings.KIND + "%",)))
    made = table.rows("SELECT key, state, value FROM kept WHERE key LIKE ?", (headings.KIND + "%",))
    table.close()
    path = settings.audit
    steps = {}
    started = time.perf_counter()
    refusals, answers = build.audit_lines(path, None)
    steps["read_log_s"] = time.perf_counter() - started
    refused = gaps.refused_questions(refusals)
    index, meta, _ = core.open_index(settings)
    try:
        texts = sorted(refused)
        steps["embed_s"], vecs = common.timed(gaps.vectors, texts, settings, meta)
        threshold = clusters.threshold_for(meta.get("embed_model"))
        steps["group_s"], found = common.timed(clusters.groups, vecs, threshold)
        gaps.cache.clear()
        steps["gaps_s"], _ = common.timed(gaps.gaps, refused, settings, meta, index)
        steps["hard_to_find_s"], _ = common.timed(hard.measure, index, settings, meta,
                                                  hard.heading_questions)  # not kept: searched
        table = feedback.Table(settings.db)
        table.write(("DELETE FROM kept", ()))
        steps["hard_to_find_embedding_s"], _ = common.timed(hard.measure, index, settings, meta,
                                                            hard.heading_questions)
        table.write(("DELETE FROM kept", ()), *[("INSERT INTO kept VALUES (?, ?, ?)", row)
                                                 for row in made])  # as the build left them
        table.close()
    finally:
        index.close()
    steps["whole_s"], report = common.timed(build.build, settings, wiki)
    if clusters.vectors_module.numpy_available():
        os.environ["RAG_PURE_PYTHON"] = "1"
        steps["group_pure_python_s"], _ = common.timed(clusters.groups, vecs, threshold)
        del os.environ["RAG_PURE_PYTHON"]
    return {**{k: round(v, 3) for k, v in steps.items()}, "answers": answers,
            "refused": len(refusals), "distinct": len(texts), "groups": len(found),
            "shown": len(report["gaps"]), "sections": report["sections"]}


def build_share(env, db):
    """What the report's sections' questions cost build_index.py (rag/ingest/headings.py): a run
    that changes nothing but has to make them, then one that changes nothing at all."""
    table = feedback.Table(db, create=True)
    table.write(("DELETE FROM kept WHERE key LIKE ?", (headings.KIND + "%",)))
    table.close()
    cmd = [sys.executable, str(ROOT / "build_index.py"), "--quiet"]
    making, nothing = (common.measure(cmd, env=env) for _ in range(2))
    return {"build_making_questions_s": round(making.seconds, 2),
            "build_unchanged_s": round(nothing.seconds, 2)}


def sections_of(db):
    """[(path, heading)] of the index's sections."""
    index = store.open_store(db)
    try:
        return hard.sections(index)
    finally:
        index.close()


def measure(args, tmp):
    """Steps 1 to 4; returns the report's results."""
    rnd = random.Random(SEED)
    if args.embedder == "fake":
        binary, model = common.write_fake_embedder(tmp)
    else:
        binary, model = config.default_embedding_bin(), config.default_model()
        common.require((binary, "llama-embedding"), (model, "Modell"))
    db, log = os.path.join(tmp, "knowledge.db"), os.path.join(tmp, "knowledge.audit.jsonl")
    env = {**os.environ, "LLAMA_EMBEDDING": binary, "RAG_EMBED_MODEL": model, "FAKE_DIM": str(DIM),
           "RAG_WIKI": str(ROOT / "wiki"), "RAG_DB": db, "RAG_AUDIT": log}
    os.environ.update({"FAKE_DIM": str(DIM)})
    if args.db and args.embedder == "real":  # a copy: the votes and the kept report go beside it
        shutil.copyfile(args.db, db)
    else:
        common.build_quietly(env)
    built = build_share(env, db)
    answered = audit_log(log, sections_of(db), args, rnd)
    settings = core.Settings(db=db, model=model, embedding_bin=binary, audit=log)
    print("  Vektoren der abgelehnten Fragen, wie beim Fragen behalten …", file=sys.stderr,
          flush=True)
    kept = asked_vectors(settings)
    print("  Bewertungen schreiben …", file=sys.stderr, flush=True)
    spread = [answered[int(i * len(answered) / args.votes)] for i in range(args.votes)]
    rnd.shuffle(spread)  # evenly over the log: find() reads half of it on average
    times = vote_times(settings, spread, rnd)
    recent = vote_times(settings, answered[-args.votes:], rnd)  # as a reader votes: just asked
    print("  Bericht als Prozess, zweimal …", file=sys.stderr, flush=True)
    cli, again = (common.measure([sys.executable, str(ROOT / "ask_rag.py"), "--report", "--json"],
                                 env=env) for _ in range(2))
    if cli.returncode or again.returncode:
        raise SystemExit(f"Fehler: ask_rag.py --report scheiterte: {cli.stderr.strip()[-300:]}")
    print("  Bericht Schritt für Schritt …", file=sys.stderr, flush=True)
    with doors.warm_embedder(settings):  # as ask_rag.py --report embeds
        steps = report_steps(settings, str(ROOT / "wiki"))
    return {"keep_vector_p50_ms": round(percentile(kept, 0.5), 2),
            "vote_p50_ms": round(percentile(times, 0.5), 2),
            "vote_p95_ms": round(percentile(times, 0.95), 2),
            "vote_recent_p50_ms": round(percentile(recent, 0.5), 2), "votes": len(times),
            "log_mb": round(os.path.getsize(log) / common.MB, 1),
            "report_cli_s": round(cli.seconds, 2), "report_cli_again_s": round(again.seconds, 2),
            "report_cli_peak_mb": round(cli.peak_mb, 1), **built, **steps}


def main():
    parser = argparse.ArgumentParser(
        description="Misst Bewertungen (Schreiben) und den Bericht für die Autorinnen und Autoren "
                    "über ein synthetisches Audit-Log.")
    parser.add_argument("--records", type=int, default=RECORDS,
                        help=f"Audit-Zeilen (Standard: {RECORDS})")
    parser.add_argument("--distinct", type=int, default=DISTINCT,
                        help=f"verschiedene abgelehnte Fragen (Standard: {DISTINCT})")
    parser.add_argument("--votes", type=int, default=VOTES, help=f"Bewertungen (Standard: {VOTES})")
    parser.add_argument("--embedder", choices=("fake", "real"), default="fake",
                        help=f"fake: Zufallsvektoren mit {DIM} Dimensionen (Standard); real: e5 "
                             f"des Setups")
    parser.add_argument("--threshold", action="store_true",
                        help="nur die Schwelle der Gruppierung mit dem echten Modell messen")
    parser.add_argument("--db", help="mit --threshold oder --embedder real: ein fertiger e5-Index "
                                     "von wiki/ (SQLite; sonst gebaut, ~1 min)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    if args.records < 10 or args.votes < 1 or args.distinct < 1:
        raise SystemExit("Fehler: --records ≥ 10, --votes ≥ 1 und --distinct ≥ 1 angeben.")
    info = common.machine()
    with tempfile.TemporaryDirectory(prefix="rag-bench-feedback-") as tmp:
        if args.threshold:
            return feedback_threshold.emit(args, info, *feedback_threshold.thresholds(tmp, args.db))
        results = measure(args, tmp)
    info["loadavg_end"] = common.loadavg()
    emit_results(args, info, results)


def emit_results(args, info, results):
    report = {"benchmark": "feedback", "command": common.command_line(), "machine": info,
              "params": {"records": args.records, "distinct": args.distinct, "votes": args.votes,
                         "embedder": args.embedder, "refused_share": REFUSED, "users": USERS},
              "results": results,
              "goals": [{"name": "vote_p50_ms", "goal": GOAL_VOTE_MS,
                         "met": results["vote_p50_ms"] <= GOAL_VOTE_MS},
                        {"name": "report_cli_s", "goal": GOAL_REPORT_S,
                         "met": results["report_cli_s"] <= GOAL_REPORT_S}]}
    rows = [{"what": key, "value": value} for key, value in results.items()]
    title = (f"Bewertungen und Bericht: {args.records} Audit-Zeilen ({results['log_mb']} MB), "
             f"{results['distinct']} verschiedene abgelehnte Fragen, Embedder {args.embedder}")
    text = "\n".join([common.header(title, info), f"Befehl: {report['command']}", "",
                      common.table([("what", "Messung"), ("value", "Wert")], rows), "",
                      common.goal_line("Bewertung schreiben p50 ≤ 10 ms", report["goals"][0]["met"],
                                       f"{results['vote_p50_ms']} ms"),
                      common.goal_line("Bericht ≤ 5 s", report["goals"][1]["met"],
                                       f"{results['report_cli_s']} s als ganzer Prozess, der erste "
                                       f"nach dem Bau des Index; der zweite "
                                       f"{results['report_cli_again_s']} s")])
    common.emit(args, report, text)


if __name__ == "__main__":
    main()
