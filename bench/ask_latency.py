#!/usr/bin/env python3
"""How long a reader waits for the first answer token, step by step, on wiki/ with the real model.

    python3 bench/ask_latency.py                   # 5 questions from eval/questions.jsonl
    python3 bench/ask_latency.py --questions 1 --pages 3 --max-tokens 1 --json    # tiny (smoke test)

wiki/ is indexed with the real llama-embedding into a temporary folder, a real llama-server with
the answer model (config.default_llm_model(): the setup's Qwen2.5-Coder-1.5B-Instruct, or --llm-model)
is started on a free port, then every question runs `ask_rag.py --no-floor` as a reader does:

  until 1st token   from starting the process to the first byte on stdout (the first answer piece)
  whole answer      from starting the process to its exit (answer, sources, audit line)
  embedding         the question's llama-embedding process    } from ask_rag.py's own timings,
  retrieval         hybrid search in SQLite                   } read back from its audit log
  first token       request sent to first streamed piece      }   (the server's prompt_n/prompt_ms too)
  read tokens       the prompt tokens llama-server read before the first token, over every call (check,
                    answer), without those it served from its prompt cache: the same on any machine
  bare embedding    one llama-embedding process for the first question, as rag/models/embed_binary.py starts it
                    and with extra flags (-t 1, llama.cpp's memory fitting on, warm-up switched), median of --embed-repeat
  rest              until 1st token − embedding − retrieval − first token: start, imports, /health,
                    /props and the prompt; two parts of it measured on their own:
    start           `python3 -c "import ask_rag, rag.llm"`: interpreter and imports (median of 3)
    prompt          answer.build_prompt for the same sources, in this process (mean of 100)

Each question is asked once: a repeat would hit llama-server's prompt cache. Medians over questions.
After the questions, one calibration request (rag/models/llm.py prompt_speed: a fixed prompt of ~256 tokens,
no prompt cache) gives the machine's reading speed, so that seconds compare across machines:
read tokens / speed ≈ the server's share of the first-token seconds.

Does not handle: a remote server.
"""
import argparse
import json
import os
import shutil
import subprocess
import threading
import sys
import tempfile
import time
from pathlib import Path

import common
from common import ROOT

from rag import config  # noqa: E402  (common puts ROOT on sys.path)
from rag.answer import prompt as answer
from rag.ingest.pages import find_pages
from rag.models import embed_binary as embedder
from rag.models import llm
from rag.models.server_process import ServerProcess  # noqa: E402
from rag.search import ranking as search
from rag.store import sqlite as store  # noqa: E402

QUESTIONS = 5  # distinct questions, the first of eval/questions.jsonl
EMBED_REPEAT = 5  # runs of the bare question embedding per llama-embedding setting
MAX_TOKENS = 160  # answer length limit, as ask_rag.py (--max-tokens 1 for a first-token-only run)
GOAL_EMBED_RETRIEVE_S = 1.0  # question embedding plus retrieval under one second
GOAL_FIRST_TOKEN_S = 8.0  # issue #10, 2 cores: first answer token (whole process) ≤ 8 s median
GOAL_WHOLE_S = 20.0  # issue #10, 2 cores: whole answer ≤ 20 s median
GOAL_STATUS_S = 4.0  # issue 34: a stderr line before the first answer byte, within 4 s of the start, every question


def items(limit):
    """The first `limit` lines of eval/questions.jsonl. Example: items(1) -> [{"question": "…", "expected": […]}]"""
    with open(ROOT / "eval" / "questions.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()][:limit]


def copy_wiki(source, target, pages, first=()):
    """Copy wiki/ (or `pages` pages of it: the pages in `first`, then the others in order) to target.

    A smaller wiki keeps the pages that answer the questions asked, so the answerability check
    (rag/answer/answerable.py) lets them through and the model answers, as on the whole wiki."""
    found = find_pages(Path(source))
    for rel in ([p for p in found if p in set(first)] + [p for p in found if p not in set(first)])[:pages]:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(source) / rel, target / rel)
    return target


def until_first_byte(cmd, env, timeout=300):
    """(seconds to the first byte on stdout, seconds to the exit, seconds to the first byte on stderr: the status
    line, None without one). Raises on failure."""
    start = time.perf_counter()
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    status, err = {}, []

    def read_stderr():
        first = process.stderr.read(1)
        status["s"] = time.perf_counter() - start if first else None
        err.append(first + process.stderr.read())
    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    first = process.stdout.read(1)
    seconds = time.perf_counter() - start
    process.stdout.read()
    process.wait(timeout=timeout)
    reader.join(timeout)
    if process.returncode != 0 or not first:
        raise SystemExit(f"Fehler: ask_rag.py endete mit Code {process.returncode}: {b''.join(err).decode()[-300:]}")
    return seconds, time.perf_counter() - start, status.get("s")


def prompt_seconds(db, question, chunks):
    """Mean time of answer.build_prompt for the chunks ask_rag.py used (from the audit log)."""
    conn = store.connect(db)
    ids = [conn.execute("SELECT id FROM docs WHERE path = ? AND chunk_index = ?", (c["path"], c["chunk_index"]))
           .fetchone()[0] for c in chunks]
    sources = search.load_sources(conn, ids)
    ordered = [sources[i] for i in ids]
    start = time.perf_counter()
    for _ in range(100):
        answer.build_prompt(question, ordered)
    return (time.perf_counter() - start) / 100


EMBED_VARIANTS = {  # extra llama-embedding flags for the bare question embedding; each runs in the environment
    "wie rag/models/embed_binary.py": [],  # of rag/models/embed_binary.py (run_env: LLAMA_ARG_FIT=off) but "fit an"
    "-t 1": ["-t", "1"],
    "fit an (llama.cpp-Standard)": ["-fit", "on"],
}


def switch_warmup(cmd):
    """(label, cmd) with llama.cpp's warm-up switched the other way than rag/models/embed_binary.py has it."""
    if "--no-warmup" in cmd:
        return "mit Warm-up", [c for c in cmd if c != "--no-warmup"]
    return "--no-warmup", cmd + ["--no-warmup"]


def question_embedding(binary, model, question, repeat):
    """{variant: median seconds} of one llama-embedding process for one question, the variants
    taking turns (so a busy moment hits all of them alike)."""
    question = embedder.prefixes_for(model)[0] + question  # as ask_rag.py embeds it (e5: "query: ")
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt") as f:
        f.write(question)
        f.flush()
        cmd = embedder.build_command(binary, model, f.name, embedder.context_size([question]))
        commands = {name: cmd + extra for name, extra in EMBED_VARIANTS.items()}
        label, switched = switch_warmup(cmd)
        commands[label] = switched
        runs = {name: [] for name in commands}
        for _ in range(repeat):
            for name, command in commands.items():
                runs[name].append(common.measure(command, env=embedder.run_env()).seconds)
    return {name: common.median(times) for name, times in runs.items()}


def parse_args():
    parser = argparse.ArgumentParser(
        description="Misst die Wartezeit bis zum ersten Antwort-Token, Schritt für Schritt.")
    parser.add_argument("--wiki", default=str(ROOT / "wiki"), help="Wiki-Ordner (Standard: wiki/ des Projekts)")
    parser.add_argument("--pages", type=int, help="nur die ersten N Seiten indexieren (Standard: alle)")
    parser.add_argument("--questions", type=int, default=QUESTIONS,
                        help=f"so viele Fragen aus eval/questions.jsonl (Standard: {QUESTIONS})")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help=f"Antwortlänge (Standard: {MAX_TOKENS})")
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(), help="Pfad zu llama-embedding")
    parser.add_argument("--server-bin", default=config.default_server_bin(), help="Pfad zu llama-server")
    parser.add_argument("--model", default=config.default_model(), help="GGUF-Modell für die Embeddings")
    parser.add_argument("--llm-model", default=config.default_llm_model(), help="GGUF-Modell für llama-server")
    parser.add_argument("--embed-repeat", type=int, default=EMBED_REPEAT,
                        help=f"Läufe des nackten Frage-Embeddings je Einstellung "
                             f"(Standard: {EMBED_REPEAT}; 0 = keine)")
    parser.add_argument("--top-k", type=int, help="Chunks im Prompt (an ask_rag.py; Standard: dessen Standard)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    return parser.parse_args()


def ask_one(question, args, db, audit, env):
    """One ask_rag.py process against the running server: its times, split by the audit log's timings."""
    cmd = [sys.executable, str(ROOT / "ask_rag.py"), "--db", db, "--no-floor", "--audit", str(audit),
           "--max-tokens", str(args.max_tokens), *(["--top-k", str(args.top_k)] if args.top_k else []),
           question]
    total, whole, status = until_first_byte(cmd, env)
    entry = json.loads(audit.read_text(encoding="utf-8").splitlines()[-1])
    t = entry["timings"]
    read = t.get("read_before_first_token")
    print(f"  {total:.2f} s / {whole:.2f} s, {read if read is not None else '–'} Tokens gelesen: {question}",
          file=sys.stderr, flush=True)
    return {"question": question, "until_first_token_s": total, "whole_answer_s": whole, "until_status_line_s": status,
            "status_line_first": status is not None and status < total,
            "predicted_n": t.get("predicted_n"), "embed_s": t["embed_s"],
            "retrieve_s": t["retrieve_s"], "first_token_s": t.get("first_token_s"),
            "prompt_n": t.get("prompt_n"), "prompt_ms": t.get("prompt_ms"),
            "read_before_first_token": read, "read": t.get("read"),
            "prompt_build_s": prompt_seconds(db, question, entry["chunks"]),
            "rest_s": total - t["embed_s"] - t["retrieve_s"] - (t.get("first_token_s") or 0)}


def measure(args, chosen, asked):
    """(build run, Python start seconds, one row per question, the calibration) on a copy of the wiki with its
    own index; the calibration request comes after the questions, so it leaves their prompt cache alone."""
    with tempfile.TemporaryDirectory(prefix="rag-bench-ask-") as tmp:
        tmp = Path(tmp)
        answering = [e["file"] for item in chosen for e in item.get("expected", [])]
        wiki = copy_wiki(args.wiki, tmp / "wiki", args.pages, answering)
        db, audit = str(tmp / "knowledge.db"), tmp / "audit.jsonl"
        env = {**os.environ, "LLAMA_EMBEDDING": args.embedding_bin, "RAG_EMBED_MODEL": args.model}
        print("  Index bauen …", file=sys.stderr, flush=True)
        build = common.measure([sys.executable, str(ROOT / "build_index.py"), "--rebuild", "--quiet",
                                "--wiki", str(wiki), "--db", db], env=env)
        start_s = common.median([common.measure(
            [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); import ask_rag, rag.models.llm"]
        ).seconds for _ in range(3)])
        print("  llama-server starten …", file=sys.stderr, flush=True)
        with ServerProcess(model=args.llm_model, binary=args.server_bin) as server:
            llm.warm(server.url, answer.SYSTEM)  # as the demo and --serve do: the first question reads as a later one
            rows = [ask_one(question, args, db, audit, {**env, "LLAMA_SERVER_URL": server.url}) for question in asked]
            calibration = llm.prompt_speed(server.url)
    return build, start_s, rows, calibration


def medians(rows, start_s):
    """The median of every step over the questions, plus the Python start and embedding + retrieval."""
    med = {k: common.median([r[k] for r in rows if r.get(k) is not None])
           for k in ("until_first_token_s", "whole_answer_s", "predicted_n", "embed_s", "retrieve_s", "first_token_s",
                     "prompt_n", "prompt_ms", "prompt_build_s", "rest_s", "read_before_first_token",
                     "until_status_line_s")}
    med["status_line_first_every_time"] = all(r.get("status_line_first") for r in rows)
    med["status_line_max_s"] = max((r["until_status_line_s"] for r in rows if r.get("until_status_line_s") is not None),
                                   default=None)
    med["start_s"] = start_s
    return med


def goals(med):
    """Issue #10's three goals on the medians."""
    return [{"goal": f"question embedding + retrieval < {GOAL_EMBED_RETRIEVE_S} s (median)",
             "met": med["embed_plus_retrieve_s"] < GOAL_EMBED_RETRIEVE_S,
             "value": round(med["embed_plus_retrieve_s"], 3)},
            {"goal": f"first answer token ≤ {GOAL_FIRST_TOKEN_S:.0f} s (median, whole process)",
             "met": med["until_first_token_s"] <= GOAL_FIRST_TOKEN_S,
             "value": round(med["until_first_token_s"], 3)},
            {"goal": f"a status line on stderr before the first answer byte and within {GOAL_STATUS_S:.0f} s, every question",
             "met": bool(med["status_line_first_every_time"] and med["status_line_max_s"] is not None
                         and med["status_line_max_s"] <= GOAL_STATUS_S), "value": med["status_line_max_s"]},
            {"goal": f"whole answer ≤ {GOAL_WHOLE_S:.0f} s (median, whole process)",
             "met": med["whole_answer_s"] <= GOAL_WHOLE_S, "value": round(med["whole_answer_s"], 3)}]


def main():
    args = parse_args()
    common.require_llama(args)
    info = common.machine()
    chosen = items(args.questions)
    asked = [item["question"] for item in chosen]
    build, start_s, rows, calibration = measure(args, chosen, asked)
    med = medians(rows, start_s)
    bare = question_embedding(args.embedding_bin, args.model, asked[0], args.embed_repeat) if args.embed_repeat else {}
    med["embed_plus_retrieve_s"] = common.median([r["embed_s"] + r["retrieve_s"] for r in rows])
    info["loadavg_end"] = common.loadavg()
    report = {"benchmark": "ask_latency", "command": common.command_line(), "machine": info,
              "params": {"wiki": args.wiki, "pages": args.pages, "questions": len(asked), "max_tokens": args.max_tokens,
                         "embed_repeat": args.embed_repeat,
                         "model": args.model, "llm_model": args.llm_model, "top_k": args.top_k},
              "build_s": build.seconds, "median": med, "questions": rows, "question_embedding_s": bare,
              "calibration": calibration,
              "goals": goals(med)}
    common.emit(args, report, render(report))


def render(report):
    m = report["median"]
    prompt_tps = m["prompt_n"] / m["prompt_ms"] * 1000 if m.get("prompt_ms") else None
    server = f"Prompt {m['prompt_n'] or 0:.0f} Tokens, {prompt_tps or 0:.0f} Tokens/s"
    steps = [("Statuszeile auf stderr (ganzer ask_rag.py-Prozess)", m.get("until_status_line_s")),
             ("Gesamt bis zum ersten Token (ganzer ask_rag.py-Prozess)", m["until_first_token_s"]),
             (f"Gesamt bis zum Ende der Antwort ({m['predicted_n'] or 0:.0f} Tokens erzeugt)", m["whole_answer_s"]),
             ("  1. Frage-Embedding (ein llama-embedding-Prozess)", m["embed_s"]),
             ("  2. Suche (hybrid)", m["retrieve_s"]),
             (f"  4. erstes Token von llama-server ({server})", m["first_token_s"]),
             ("  Rest: Start, Imports, /health, /props, Prompt", m["rest_s"]),
             ("    davon Python-Start und Imports", m["start_s"]),
             ("    davon 3. Prompt bauen (answer.build_prompt)", m["prompt_build_s"]),
             ("Frage-Embedding + Suche", m["embed_plus_retrieve_s"])]
    p = report["params"]
    lines = [common.header(f"Fragen bis zum ersten Token: {p['questions']} Fragen aus eval/questions.jsonl, Median, "
                           f"Modell {os.path.basename(p['llm_model'])}", report["machine"]),
             f"Befehl: {report['command']}",
             f"(Index über {p['pages'] or 'alle'} Seiten gebaut in {report['build_s']:.1f} s)",
             "", common.table([("step", "Schritt"), ("seconds", "Sekunden")],
                              [{"step": step, "seconds": value} for step, value in steps]), ""]
    if report["question_embedding_s"]:
        lines += [f"Frage-Embedding allein: ein llama-embedding-Prozess, Median aus {p['embed_repeat']}, "
                  f"Flags zusätzlich zu denen von rag/models/embed_binary.py:", "",
                  common.table([("flags", "Flags"), ("seconds", "Sekunden")],
                               [{"flags": k, "seconds": v} for k, v in report["question_embedding_s"].items()]), ""]
    lines += read_lines(report) + [common.goal_line(g["goal"], g["met"], g["value"]) for g in report["goals"]]
    return "\n".join(lines)


CALLS = {"search": "Suche", "choose": "Auswahl", "check": "Prüfung", "answer": "Antwort"}  # rag/core.py's calls


def read_lines(report):
    """What the model read before the first token, per question and as the median, and the calibration."""
    rows = [{"question": r["question"], "read": r.get("read_before_first_token"), "first": r["until_first_token_s"],
             "calls": " + ".join(f"{CALLS.get(c['call'], c['call'])} {common.fmt(c['prompt_n'])}"
                                 for c in r.get("read") or [])} for r in report["questions"]]
    c = report.get("calibration")
    speed = (f"{c['tokens_per_s']:.1f} Tokens/s ({c['prompt_n']} Tokens ohne Prompt-Cache in {c['prompt_ms']:.0f} ms, "
             f"eine Anfrage)") if c else "– (der Server meldet keine timings)"
    return ["Prompt-Tokens, die llama-server bis zum ersten Token las (alle Aufrufe, ohne Prompt-Cache):", "",
            common.table([("question", "Frage"), ("read", "Tokens gelesen"), ("calls", "je Aufruf"),
                          ("first", "Sekunden bis 1. Token")], rows),
            f"Median: {common.fmt(report['median'].get('read_before_first_token'))} Tokens",
            f"Lesegeschwindigkeit dieser Maschine (Kalibrierung): {speed}", ""]


if __name__ == "__main__":
    main()
