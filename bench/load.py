#!/usr/bin/env python3
"""Many askers at once: K concurrent ask_rag.py processes against one llama-server with parallel slots.

    python3 bench/load.py                              # K = 1 2 4 8, 60 s each, -np 4, a rebuild loop alongside
    python3 bench/load.py --np 1 4 --k 4               # which -np serves 4 askers best
    python3 bench/load.py --answer-model default       # the setup's answer model instead of Gemma 3 270M
    python3 bench/load.py --seconds 5 --k 1 --no-rebuild --json      # tiny (smoke)

Setup, all on 127.0.0.1 in a temporary folder: the wiki is indexed once (build_index.py, its
default way), one answer server (llama-server -np NP -c CONTEXT×NP) and one embedding server
(llama-server --embeddings with the index's model; the askers use --embed-via server) are started.
For each K, K threads each run `ask_rag.py --no-floor QUESTION` in a loop for --seconds (questions
from eval/questions.jsonl in turn; --no-floor: every question reaches the LLM). Per question:
time to the first byte of the answer on stdout (TTFT, from process start) and to its exit.
An asker counts as an error when the exit code is not 0, stderr has a line, or the source list
is empty ("Quellen:" without [1]): a half-built index would show there.

With the rebuild loop (default), `build_index.py --rebuild` runs over and over on the same index
while the askers read it; every rebuild must finish and no reader may fail.

The answer model is Gemma 3 270M by default (small and quick: the numbers show the server and the
pipeline, not a good answerer); --answer-model default uses the setup's answer model.

Does not handle: remote servers, GPU offload, answers' quality (evaluate.py), more than one machine.
"""
import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import common
from common import ROOT

from rag import config  # noqa: E402  (common puts ROOT on sys.path)
from rag.models.server_process import CONTEXT, ServerProcess  # noqa: E402

SECONDS = 60  # per K: askers start new questions until then
ASKERS = (1, 2, 4, 8)  # K: concurrent ask_rag.py processes
PARALLEL = (4,)  # -np of the answer server
EMBED_PARALLEL = 2  # -np of the embedding server (a question is short)
ASK_TIMEOUT = 300  # seconds one ask_rag.py may take before it counts as an error
REBUILD_TIMEOUT = 1800  # seconds one build_index.py --rebuild may take
MAX_TOKENS = 64  # answer length per question: enough to see the stream, bounded under load
GOAL_ERRORS = 0  # readers that fail while the index is rebuilt


def questions(limit=None):
    """Questions with an answer in the wiki, in file order. Example: ["Wie lege ich in Cyrus IMAP …?", …]"""
    with open(ROOT / "eval" / "questions.jsonl", encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    return [i["question"] for i in items if i.get("expected")][:limit]


def ask_once(question, env, timeout=ASK_TIMEOUT):
    """One ask_rag.py process: {"ttft", "total", "error"} (seconds; error None or one line)."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, str(ROOT / "ask_rag.py"), "--no-floor", "--no-audit",
                                "--max-tokens", str(MAX_TOKENS), question], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    ttft, out = None, b""
    try:
        while True:
            piece = os.read(process.stdout.fileno(), 4096)
            if not piece:
                break
            if ttft is None and piece.strip():
                ttft = time.perf_counter() - start
            out += piece
        err = process.stderr.read().decode("utf-8", "replace").strip()
        code = process.wait()
    finally:
        timer.cancel()
        process.stdout.close()
        process.stderr.close()
    total = time.perf_counter() - start
    text = out.decode("utf-8", "replace")
    error = None
    if code != 0:
        error = (err.splitlines() or [f"Code {code}"])[-1][:160]
    elif err:
        error = err.splitlines()[-1][:160]
    elif "Quellen:" not in text or "  [1] " not in text.split("Quellen:", 1)[1]:
        error = "Antwort ohne Quellen"
    return {"ttft": ttft, "total": total, "error": error}


def run_askers(k, seconds, env, pool):
    """K threads asking until `seconds` have passed; returns every result in completion order."""
    deadline = time.monotonic() + seconds
    results, lock = [], threading.Lock()

    def asker():
        while time.monotonic() < deadline:
            with lock:
                question = next(pool)
            result = ask_once(question, env)
            with lock:
                results.append(result)

    threads = [threading.Thread(target=asker) for _ in range(k)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.monotonic() - started


def percentile(values, p):
    """Nearest-rank percentile. Example: percentile([1, 2, 3, 4], 50) -> 2"""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * p // 100) - 1)]


def summarize(np_, k, results, wall):
    ok = [r for r in results if not r["error"]]
    ttft = [r["ttft"] for r in ok if r["ttft"] is not None]
    total = [r["total"] for r in ok]
    errors = [r["error"] for r in results if r["error"]]
    return {"np": np_, "k": k, "questions": len(results), "answered": len(ok), "errors": len(errors),
            "error_samples": sorted(set(errors))[:3], "wall_s": wall,
            "per_minute": len(ok) / wall * 60 if wall else None,
            "ttft_p50": percentile(ttft, 50), "ttft_p95": percentile(ttft, 95),
            "total_p50": percentile(total, 50), "total_p95": percentile(total, 95)}


class RebuildLoop:
    """build_index.py --rebuild over and over until stop(); counts runs and failures (bounded by a timeout each)."""

    def __init__(self, env):
        self.env, self.runs, self.failures, self.samples, self.seconds = env, 0, 0, [], []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.loop)

    def loop(self):
        while not self.stopping.is_set():
            started = time.perf_counter()
            try:
                result = subprocess.run([sys.executable, str(ROOT / "build_index.py"), "--rebuild", "--quiet"],
                                        cwd=ROOT, env=self.env, capture_output=True, text=True,
                                        timeout=REBUILD_TIMEOUT)
                failed = result.returncode != 0
                detail = (result.stderr.strip().splitlines() or ["?"])[-1][:160]
            except subprocess.TimeoutExpired:
                failed, detail = True, f"länger als {REBUILD_TIMEOUT} s"
            self.runs += 1
            self.seconds.append(time.perf_counter() - started)
            if failed:
                self.failures += 1
                self.samples.append(detail)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join()


def answer_model(choice):
    """The answer model's path: "small" (Gemma 3 270M, default here) or "default" (the setup's choice)."""
    if choice == "default":
        return config.default_llm_model()
    if choice == "small":
        return str(config.cache_model_path())
    return choice


def render(report):
    p = report["params"]
    rows = [dict(r, errors=f"{r['errors']}/{r['questions']}") for r in report["results"]]
    cols = [("np", "-np"), ("k", "K"), ("answered", "beantwortet"), ("per_minute", "Fragen/min"),
            ("ttft_p50", "1. Token p50 s"), ("ttft_p95", "1. Token p95 s"), ("total_p50", "ganz p50 s"),
            ("total_p95", "ganz p95 s"), ("errors", "Fehler")]
    lines = [common.header(f"Viele Fragende: K gleichzeitige ask_rag.py, {p['seconds']} s je K, Antwortmodell "
                           f"{os.path.basename(p['answer_model'])}, Embeddings {os.path.basename(p['embed_model'])} "
                           f"über llama-server, bis {MAX_TOKENS} Tokens je Antwort", report["machine"]),
             f"Befehl: {report['command']}",
             f"Server: llama-server -np NP -c {CONTEXT}×NP (je Slot {CONTEXT}); "
             + (f"nebenher build_index.py --rebuild in Schleife: {report['rebuild']['runs']} Läufe, "
                f"{report['rebuild']['failures']} gescheitert, Median {common.fmt(report['rebuild']['median_s'])} s"
                if report["rebuild"] else "ohne Neuaufbau nebenher"), "",
             common.table(cols, rows)]
    samples = sorted({s for r in report["results"] for s in r["error_samples"]})
    if samples:
        lines += ["", "Fehler (Beispiele):"] + [f"  {s}" for s in samples[:5]]
    if report["rebuild"] and report["rebuild"]["samples"]:
        lines += ["Neuaufbau gescheitert (Beispiele):"] + [f"  {s}" for s in report["rebuild"]["samples"][:3]]
    lines += [""] + [common.goal_line(g["goal"], g["met"], g["value"]) for g in report["goals"]]
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(description="Misst viele gleichzeitige Fragen an einen llama-server "
                                                 "(Fragen/min, Zeit bis zum ersten Token und bis zur ganzen Antwort), "
                                                 "während der Index neu gebaut wird.")
    parser.add_argument("--k", type=int, nargs="+", default=list(ASKERS),
                        help=f"Anzahl gleichzeitiger Fragender, je eine Messung (Standard: {' '.join(map(str, ASKERS))})")
    parser.add_argument("--np", type=int, nargs="+", default=list(PARALLEL),
                        help=f"-np des Antwort-Servers, je ein Serverstart (Standard: {' '.join(map(str, PARALLEL))})")
    parser.add_argument("--seconds", type=int, default=SECONDS,
                        help=f"Sekunden je K, in denen neue Fragen beginnen (Standard: {SECONDS})")
    parser.add_argument("--answer-model", default="small",
                        help="small: Gemma 3 270M (Standard, schnell); default: das Antwortmodell des Setups; "
                             "oder ein Pfad zu einer GGUF-Datei")
    parser.add_argument("--no-rebuild", action="store_true", help="ohne build_index.py --rebuild nebenher")
    parser.add_argument("--wiki", default=str(ROOT / "wiki"), help="Wiki-Ordner (Standard: wiki/ des Projekts)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    return parser.parse_args()


def check_setup(args, llm, embed_model):
    """One German line naming the setup command when llama-server or a model is missing, or a count is below 1."""
    common.require((config.default_server_bin(), "llama-server"), (llm, "Antwortmodell"),
                   (embed_model, "Embedding-Modell"))
    if args.seconds < 1 or min(args.k) < 1 or min(args.np) < 1:
        raise SystemExit("Fehler: --seconds, --k und --np müssen mindestens 1 sein.")


def build_copy(tmp, wiki, embed_model):
    """Copy the wiki into tmp and index it there; returns the environment that points at the copy."""
    shutil.copytree(wiki, os.path.join(tmp, "wiki"))
    env = {**os.environ, "RAG_WIKI": os.path.join(tmp, "wiki"), "RAG_DB": os.path.join(tmp, "knowledge.db"),
           "RAG_EMBED_MODEL": embed_model, "RAG_EMBED_VIA": "", "RAG_API_KEY": ""}
    common.build_quietly(env, REBUILD_TIMEOUT)
    return env


def add_rebuilds(rebuild, loop):
    """The counts of one RebuildLoop added to the run's (None before the first)."""
    rebuild = rebuild or {"runs": 0, "failures": 0, "samples": [], "seconds": []}
    rebuild["runs"] += loop.runs
    rebuild["failures"] += loop.failures
    rebuild["samples"] += loop.samples
    rebuild["seconds"] += loop.seconds
    return rebuild


def measure_np(np_, args, llm, tmp, env, ask_env, pool, results):
    """One answer server with -np np_: every K in turn, build_index.py --rebuild beside it; returns the loop or None."""
    with ServerProcess(model=llm, parallel=np_, log_path=os.path.join(tmp, f"server-np{np_}.log")) as server:
        ask_env["LLAMA_SERVER_URL"] = server.url
        ask_once(next(pool), ask_env)  # warm-up: page cache, prompt cache
        loop = RebuildLoop(env) if not args.no_rebuild else None
        if loop:
            loop.__enter__()
        try:
            for k in args.k:
                print(f"  -np {np_}, K = {k}: {args.seconds} s …", file=sys.stderr, flush=True)
                found, wall = run_askers(k, args.seconds, ask_env, pool)
                results.append(summarize(np_, k, found, wall))
        finally:
            if loop:
                loop.__exit__(None, None, None)
    return loop


def measure(args, llm, embed_model):
    """(results, rebuild counts or None) over every --np, on a fresh copy of the wiki."""
    with tempfile.TemporaryDirectory(prefix="rag-bench-load-") as tmp:
        env = build_copy(tmp, args.wiki, embed_model)
        pool = itertools.cycle(questions())
        results, rebuild = [], None
        with ServerProcess(model=embed_model, embeddings=True, parallel=EMBED_PARALLEL,
                           log_path=os.path.join(tmp, "embed-server.log")) as embed_server:
            ask_env = {**env, "RAG_EMBED_VIA": "server", "RAG_EMBED_URL": embed_server.url}
            for np_ in args.np:
                loop = measure_np(np_, args, llm, tmp, env, ask_env, pool, results)
                if loop:
                    rebuild = add_rebuilds(rebuild, loop)
    if rebuild:
        rebuild["median_s"] = statistics.median(rebuild["seconds"]) if rebuild["seconds"] else None
    return results, rebuild


def make_report(args, info, llm, embed_model, results, rebuild):
    """The JSON report with its goals: no reader fails, every rebuild finishes."""
    errors = sum(r["errors"] for r in results)
    report = {"benchmark": "load", "command": common.command_line(), "machine": info,
              "params": {"k": args.k, "np": args.np, "seconds": args.seconds, "answer_model": llm,
                         "embed_model": embed_model, "context_per_slot": CONTEXT, "max_tokens": MAX_TOKENS,
                         "rebuild": not args.no_rebuild},
              "results": results, "rebuild": rebuild,
              "goals": [{"goal": "no reader fails" + (" while the index is rebuilt" if rebuild else ""),
                         "met": errors <= GOAL_ERRORS, "value": f"{errors} errors"}]}
    if rebuild:
        report["goals"].append({"goal": "every rebuild finishes", "met": rebuild["failures"] == 0 and rebuild["runs"] > 0,
                                "value": f"{rebuild['runs'] - rebuild['failures']}/{rebuild['runs']}"})
    return report


def main():
    args = parse_args()
    llm, embed_model = answer_model(args.answer_model), config.default_model()
    check_setup(args, llm, embed_model)
    info = common.machine()
    results, rebuild = measure(args, llm, embed_model)
    report = make_report(args, info, llm, embed_model, results, rebuild)
    info["loadavg_end"] = common.loadavg()
    common.emit(args, report, render(report))

if __name__ == "__main__":
    main()
