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
  4. report   `ask_rag.py --report --json` as a whole process, twice (goal: ≤ 5 s on 2 cores): the
              first searches every section for "hard to find", the second reads that back (kept
              beside the votes until the index changes); then in this process step by step
              (reading the log, embedding and grouping the refused questions, the nearest pages,
              searching every section); the grouping also in pure Python (RAG_PURE_PYTHON=1) when
              numpy is installed

--threshold embeds TOPICS (six topics the sample wiki does not answer, five wordings each) with the
real model and groups them at thresholds 0.80 … 0.96: pair precision, recall and F1 against the
topics. The best F1 (ties: the higher threshold) is the one to write into rag/tuned.toml
(clusters.THRESHOLDS).

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
from pathlib import Path

import common
from common import ROOT

from rag import config, core, store  # noqa: E402  (common puts ROOT on sys.path)
from rag.audit import log as audit
from rag.answer.prompt import NO_INFO
from rag.audit import feedback
from rag.doors import common as doors
from rag.doors import ratings
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
TOPICS = {  # questions the sample wiki does not answer, five wordings per topic
    "vpn-mac": ["Wie richte ich das VPN auf meinem MacBook ein?",
                "Gibt es einen VPN-Client für macOS?",
                "Das VPN verbindet sich unter macOS nicht, was tun?",
                "Wie bekomme ich das Firmen-VPN auf das iPad?",
                "VPN auf dem Mac installieren"],
    "kantine": ["Was gibt es heute in der Kantine?",
                "Bis wann hat die Kantine geöffnet?",
                "Wie lade ich Guthaben auf meine Kantinenkarte?",
                "Gibt es in der Kantine vegane Gerichte?",
                "Wo finde ich den Speiseplan der Kantine?"],
    "parken": ["Wo darf ich auf dem Firmengelände parken?",
               "Wie beantrage ich einen Parkplatz in der Tiefgarage?",
               "Gibt es Ladesäulen für Elektroautos auf dem Parkplatz?",
               "Kostet der Mitarbeiterparkplatz etwas?",
               "Wo parken Besucher?"],
    "reise": ["Wie rechne ich eine Dienstreise ab?",
              "Welche Hotelkosten werden bei Dienstreisen erstattet?",
              "Wie hoch ist die Verpflegungspauschale?",
              "Wer genehmigt meine Dienstreise?",
              "Darf ich für die Dienstreise die Bahn erste Klasse buchen?"],
    "gehalt": ["Wann wird das Gehalt überwiesen?",
               "Wo finde ich meine Lohnabrechnung?",
               "Wie ändere ich meine Bankverbindung für das Gehalt?",
               "Wann gibt es das Weihnachtsgeld?",
               "Wie beantrage ich eine Gehaltserhöhung?"],
    "feier": ["Wann ist die Weihnachtsfeier?",
              "Wer organisiert den Betriebsausflug?",
              "Darf ich zur Sommerfeier jemanden mitbringen?",
              "Gibt es dieses Jahr ein Firmenfest?",
              "Wo findet der Betriebsausflug statt?"],
}
OPENINGS = ["", "Kurze Frage: ", "Hallo, ", "Weiß jemand: ", "Frage: ", "Moin, ", "Hilfe: "]
ENDINGS = ["", " Danke!", " (dringend)", " Gruß", " – bitte kurz", " Danke im Voraus."]


# -- the synthetic audit log --------------------------------------------------------------------
def questions(distinct, rnd):
    """`distinct` different question texts: the TOPICS' wordings with openings and endings."""
    texts = sorted({o + q + e for q in sum(TOPICS.values(), []) for o in OPENINGS for e in ENDINGS})
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
    beside the votes): as the first report after the index changed."""
    gaps.cache.clear()
    hard.kept.clear()
    table = feedback.Table(settings.db)
    table.write(("DELETE FROM kept", ()))
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
            "report_cli_peak_mb": round(cli.peak_mb, 1), **steps}


# -- the threshold -----------------------------------------------------------------------------
def pair_scores(found, labels):
    """Pair precision, recall, F1 of a grouping against topic labels.

    Example: groups [[0, 1], [2]] with labels a, a, b -> (1.0, 1.0, 1.0)
    """
    same_group = {(i, j) for g in found for i in g for j in g if i < j}
    same_topic = {(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels))
                  if labels[i] == labels[j]}
    hits = len(same_group & same_topic)
    precision = hits / len(same_group) if same_group else 1.0
    recall = hits / len(same_topic) if same_topic else 1.0
    return precision, recall, 2 * precision * recall / ((precision + recall) or 1)


def threshold_rows(tmp, db=None):
    """Embed TOPICS with the real model (an index of wiki/ for its query prefix; built here unless
    `db` names one), group them at each threshold."""
    binary, model = config.default_embedding_bin(), config.default_model()
    common.require((binary, "llama-embedding"), (model, "Modell"))
    if db is None:
        db = os.path.join(tmp, "knowledge.db")
        common.build_quietly({**os.environ, "LLAMA_EMBEDDING": binary, "RAG_EMBED_MODEL": model,
                              "RAG_WIKI": str(ROOT / "wiki"), "RAG_DB": db})
    settings = core.Settings(db=db, model=model, embedding_bin=binary)
    index, meta, _ = core.open_index(settings)
    index.close()
    texts = [q for qs in TOPICS.values() for q in qs]
    labels = [t for t, qs in TOPICS.items() for _ in qs]
    vecs = core.embed(texts, settings, meta, "hybrid", {})
    sims = clusters.similarities(vecs)
    pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))]
    inside = [sims[i][j] for i, j in pairs if labels[i] == labels[j]]
    across = [sims[i][j] for i, j in pairs if labels[i] != labels[j]]
    rows = []
    for step in range(80, 97):
        found = clusters.groups(vecs, step / 100)
        precision, recall, f1 = pair_scores(found, labels)
        rows.append({"threshold": step / 100, "groups": len(found),
                     "precision": round(precision, 3), "recall": round(recall, 3),
                     "f1": round(f1, 3)})
    stats = {"model": meta.get("embed_model"), "questions": len(texts), "topics": len(TOPICS),
             "cosine_same_topic_median": round(common.median(inside), 3),
             "cosine_other_topic_median": round(common.median(across), 3),
             "cosine_other_topic_max": round(max(across), 3)}
    return rows, stats


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
            return emit_threshold(args, info, *threshold_rows(tmp, args.db))
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


def emit_threshold(args, info, rows, stats):
    best = max(rows, key=lambda r: (r["f1"], r["threshold"]))
    report = {"benchmark": "feedback-threshold", "command": common.command_line(), "machine": info,
              "stats": stats, "results": rows, "best": best}
    cols = [("threshold", "Schwelle"), ("groups", "Gruppen"), ("precision", "Präzision (Paare)"),
            ("recall", "Recall (Paare)"), ("f1", "F1")]
    text = "\n".join([common.header(f"Schwelle der Gruppierung: {stats['questions']} Fragen, "
                                    f"{stats['topics']} Themen, {stats['model']}", info),
                      f"Befehl: {report['command']}",
                      f"Kosinus im selben Thema (Median) {stats['cosine_same_topic_median']}, "
                      f"zwischen Themen (Median) {stats['cosine_other_topic_median']}, "
                      f"höchstens {stats['cosine_other_topic_max']}", "",
                      common.table(cols, rows), "",
                      f"Beste Schwelle (F1, bei Gleichstand die höhere): {best['threshold']}"])
    common.emit(args, report, text)


if __name__ == "__main__":
    main()
