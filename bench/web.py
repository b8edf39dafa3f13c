#!/usr/bin/env python3
"""The page's door under measurement: `ask_rag.py --serve` with its warm embedder and a real llama-server.

    python3 bench/web.py                                   # 10 questions one by one, then 8 clients at once, -np 4
    python3 bench/web.py --questions 3 --clients 2 --np 2 --json    # tiny (smoke)

Setup, all on 127.0.0.1 in a temporary folder: the wiki is indexed (build_index.py), one answer
llama-server -np NP starts, in front of it a small proxy that notes (time.monotonic) when the first
answer token of each request passes from llama-server, and `ask_rag.py --serve --steps model --no-floor
--no-audit` (its warm llama-server --embeddings for the questions) talks to that proxy. Clients
talk to the page's own endpoint, POST /api/ask, and read its Server-Sent Events as the page does.

1. One by one (--questions): per question the time from the POST to the `sources` event (question
   embedding + retrieval as the page sees it, HTTP included) and the core's own embed_s + retrieve_s;
   and the delay from the proxy passing llama-server's first token to the client reading the first
   `piece` event: what the door adds to the first token (same clock, same machine).
2. At once (--clients, browser-like: each opens one stream and reads it to the end; questions not
   asked before, so llama-server's prompt cache does not answer from memory): every client
   must get its answer or, past SLOTS + QUEUE, the immediate German "ausgelastet" reply (HTTP 503);
   anything else counts as failed. First-token times (from the POST) as p50/p95. Run twice: with the
   door's default queue (as many waiting as there are slots) and with --serve-queue 0.

Does not handle: a real browser's rendering time (tests/test_browser.py runs the page in Chromium),
remote clients, TLS, several machines.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import common
import requests
from common import ROOT
from load import percentile, questions

from rag import config  # noqa: E402  (common puts ROOT on sys.path)
from rag.models.server_process import ServerProcess  # noqa: E402

QUESTIONS = 10  # part 1: questions one by one
CLIENTS = 8  # part 2: clients asking at once
PARALLEL = 4  # -np of the answer llama-server
MAX_TOKENS = 64  # answer length: enough to see the stream, bounded under load
TIMEOUT = 600  # seconds one streamed answer may take under load
GOAL_RETRIEVAL_S = 0.15  # median question embedding + retrieval in the page
GOAL_DELAY_S = 0.3  # first token: llama-server -> page event
START_TIMEOUT = 180  # seconds for --serve to print its address (the warm embedder loads first)


class StampProxy:
    """HTTP proxy in front of llama-server; `firsts` gets time.monotonic() of the first answer token of
    each streamed completion, in the order the requests arrived (None until it came)."""

    def __init__(self, upstream):
        self.upstream, self.firsts, self.lock = upstream, [], threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def relay(self, response):
                self.send_response(response.status_code)
                self.send_header("Content-Type", response.headers.get("Content-Type", "application/json"))
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.close_connection = True
                return response

            def do_GET(self):
                response = self.relay(requests.get(proxy.upstream + self.path, timeout=30))
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(response.content), response.content))

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with proxy.lock:
                    slot = len(proxy.firsts)
                    proxy.firsts.append(None)
                try:
                    with requests.post(proxy.upstream + self.path, data=body, stream=True, timeout=(5, TIMEOUT),
                                       headers={"Content-Type": "application/json"}) as upstream:
                        self.relay(upstream)
                        for line in upstream.iter_lines():
                            if proxy.firsts[slot] is None and line.startswith(b"data: {") and has_text(line[6:]):
                                proxy.firsts[slot] = time.monotonic()
                            data = line + b"\n"
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # --serve closed the stream (its client went away, or it was stopped)

        return Handler

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def has_text(data):
    """Does a streamed chunk carry answer text that is not only whitespace (the core holds that back)?

    Example: b'{"choices": [{"delta": {"content": " Mit"}}]}' -> True; content " " -> False
    """
    try:
        choices = json.loads(data).get("choices") or []
    except ValueError:
        return False
    return any(((c.get("delta") or {}).get("content") or c.get("text") or "").strip() for c in choices)


def ask(url, question):
    """One page question: {"status", "sources_s", "first_s", "first_at", "total_s", "timings", "error", "busy"}."""
    start = time.monotonic()
    out = {"status": None, "sources_s": None, "first_s": None, "first_at": None, "total_s": None, "timings": {},
           "error": None, "busy": False}
    try:
        with requests.post(url + "/api/ask", json={"question": question}, stream=True, timeout=(5, TIMEOUT)) as r:
            out["status"] = r.status_code
            if r.status_code == 503:
                message = r.json().get("error", "")
                out["busy"] = "ausgelastet" in message and r.headers.get("Retry-After", "").isdigit()
                out["error"] = None if out["busy"] else f"503 ohne „ausgelastet“: {message[:80]}"
                out["total_s"] = time.monotonic() - start
                return out
            if r.status_code != 200:
                out["error"] = f"HTTP {r.status_code}: {r.text[:80]}"
                return out
            kind, done = None, False
            for line in r.iter_lines(decode_unicode=True):
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    now = time.monotonic()
                    if kind == "sources":
                        out["sources_s"] = now - start
                    elif kind == "piece" and out["first_at"] is None:
                        out["first_at"], out["first_s"] = now, now - start
                    elif kind == "error":
                        out["error"] = json.loads(line[6:])["error"][:120]
                    elif kind == "done":
                        done, out["timings"] = True, json.loads(line[6:])["timings"]
            if not done and not out["error"]:
                out["error"] = "Strom endete ohne done"
    except requests.RequestException as exc:
        out["error"] = f"{type(exc).__name__}: {str(exc)[:100]}"
    out["total_s"] = time.monotonic() - start
    return out


class Served:
    """`ask_rag.py --serve` as a subprocess on a free port; stopped on exit."""

    def __init__(self, env, *args):
        self.args = [sys.executable, str(ROOT / "ask_rag.py"), "--serve", "--port", "0", "--no-floor", "--no-audit",
                     "--max-tokens", str(MAX_TOKENS), "--steps", "model", *args]  # every answer streamed by the
        #             model, also a how-to answer (by default its steps come verbatim, with no stream to measure)
        self.env, self.lines = env, []

    def __enter__(self):
        self.process = subprocess.Popen(self.args, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, text=True,
                                        stdin=subprocess.DEVNULL)
        timer = threading.Timer(START_TIMEOUT, self.process.kill)
        timer.start()
        try:
            for line in self.process.stdout:
                self.lines.append(line.strip())
                if line.startswith("Web-Seite: "):
                    self.url = line.split()[1].rstrip("/")
                if line.startswith("Antwort-Server: "):
                    return self
        finally:
            timer.cancel()
        raise SystemExit(f"Fehler: ask_rag.py --serve startete nicht: {self.lines[-3:]}")

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait(timeout=30)


def one_by_one(url, proxy, pool):
    rows = []
    for question in pool:
        before = len(proxy.firsts)
        result = ask(url, question)
        # the answerability check (rag/answer/answerable.py) is a request without a stream before the answer's:
        # the first token is the first one any request of this question streamed
        upstream = next((t for t in proxy.firsts[before:] if t is not None), None)
        t = result["timings"]
        rows.append({"question": question, "sources_s": result["sources_s"],
                     "core_s": (t.get("embed_s", 0) + t.get("retrieve_s", 0)) if t else None,
                     "embed_s": t.get("embed_s"), "retrieve_s": t.get("retrieve_s"),
                     "delay_s": result["first_at"] - upstream if result["first_at"] and upstream else None,
                     "first_s": result["first_s"], "total_s": result["total_s"], "error": result["error"]})
    return rows


def at_once(url, pool, clients):
    results = [None] * clients
    barrier = threading.Barrier(clients)

    def client(i):
        barrier.wait()
        results[i] = ask(url, pool[i % len(pool)])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    answered = [r for r in results if r["status"] == 200 and not r["error"]]
    busy = [r for r in results if r["busy"]]
    firsts = [r["first_s"] for r in answered if r["first_s"] is not None]
    return {"clients": clients, "answered": len(answered), "busy": len(busy),
            "failed": clients - len(answered) - len(busy), "first_p50": percentile(firsts, 50),
            "first_p95": percentile(firsts, 95), "total_p95": percentile([r["total_s"] for r in answered], 95),
            "busy_reply_max_s": max((r["total_s"] for r in busy), default=None),
            "errors": sorted({r["error"] for r in results if r["error"]})[:3]}


def render(report):
    p, one = report["params"], report["one_by_one"]
    lines = [common.header(f"Web-Seite (ask_rag.py --serve): Antwortmodell {os.path.basename(p['answer_model'])}, "
                           f"llama-server -np {p['np']}, bis {MAX_TOKENS} Tokens je Antwort", report["machine"]),
             f"Befehl: {report['command']}", "",
             f"1. {len(one)} Fragen nacheinander (Embeddings: {report['embedder']})",
             common.table([("sources_s", "POST→Quellen s"), ("core_s", "Einbetten+Suche s (Kern)"),
                           ("delay_s", "1. Token llama-server→Seite s"), ("first_s", "1. Token s"),
                           ("total_s", "ganz s"), ("error", "Fehler"), ("question", "Frage")], one), ""]
    lines.append(f"Median: POST→Quellen {common.fmt(report['median_sources_s'])} s, Kern "
                 f"{common.fmt(report['median_core_s'])} s, Verzögerung 1. Token {common.fmt(report['median_delay_s'])} s "
                 f"(höchstens {common.fmt(report['max_delay_s'])} s)")
    lines += ["", f"2. {p['clients']} Clients gleichzeitig, je ein Strom bis zum Ende",
              common.table([("queue", "Warteplätze"), ("clients", "Clients"), ("answered", "beantwortet"),
                            ("busy", "„ausgelastet“"), ("failed", "gescheitert"), ("first_p50", "1. Token p50 s"),
                            ("first_p95", "1. Token p95 s"), ("total_p95", "ganz p95 s"),
                            ("busy_reply_max_s", "„ausgelastet“ nach s")], report["at_once"])]
    errors = sorted({e for r in report["at_once"] for e in r["errors"]})
    if errors:
        lines += ["Fehler (Beispiele):"] + [f"  {e}" for e in errors]
    lines += [""] + [common.goal_line(g["goal"], g["met"], g["value"]) for g in report["goals"]]
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(description="Misst die Web-Seite von ask_rag.py --serve: Einbetten+Suche, "
                                                 "Verzögerung des ersten Tokens, viele Clients gleichzeitig.")
    parser.add_argument("--questions", type=int, default=QUESTIONS, help=f"Fragen nacheinander (Standard: {QUESTIONS})")
    parser.add_argument("--clients", type=int, default=CLIENTS, help=f"Clients gleichzeitig (Standard: {CLIENTS})")
    parser.add_argument("--np", type=int, default=PARALLEL, help=f"-np des Antwort-Servers (Standard: {PARALLEL})")
    parser.add_argument("--answer-model", default=config.default_llm_model(),
                        help="GGUF des Antwortmodells (Standard: das des Setups, RAG_LLM_MODEL)")
    parser.add_argument("--wiki", default=str(ROOT / "wiki"), help="Wiki-Ordner (Standard: wiki/ des Projekts)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    common.require((config.default_server_bin(), "llama-server"), (args.answer_model, "Antwortmodell"),
                   (config.default_model(), "Embedding-Modell"))
    if min(args.questions, args.clients, args.np) < 1 or args.questions + 2 * args.clients + 1 > len(questions()):
        raise SystemExit(f"Fehler: --questions, --clients und --np mindestens 1, --questions + 2 × --clients "
                         f"höchstens {len(questions()) - 1}.")
    return args


def measure(args, env, pool, proxy):
    """(embedder named by --serve, part 1 rows, part 2 runs): one by one, then at once with and without a queue."""
    runs = []
    with Served(env) as served:
        embedder = next((line.split(": ", 1)[1] for line in served.lines if line.startswith("Frage-Embedder")), "?")
        ask(served.url, pool[-1])  # warm-up: page cache, the system prompt in llama-server's cache
        print(f"  {args.questions} Fragen nacheinander …", file=sys.stderr, flush=True)
        one = one_by_one(served.url, proxy, pool[:args.questions])
        print(f"  {args.clients} Clients gleichzeitig …", file=sys.stderr, flush=True)
        fresh = pool[args.questions:]  # questions llama-server has not seen: no prompt from its cache
        runs.append({"queue": f"{args.np} (Standard)", **at_once(served.url, fresh[:args.clients], args.clients)})
    with Served(env, "--serve-queue", "0") as served:
        print(f"  {args.clients} Clients gleichzeitig, keine Warteplätze …", file=sys.stderr, flush=True)
        runs.append({"queue": 0, **at_once(served.url, fresh[args.clients:2 * args.clients], args.clients)})
    return embedder, one, runs


def make_report(args, info, embedder, one, runs):
    """The JSON report: medians of part 1 and the three goals."""
    ok = [r for r in one if not r["error"]]

    def med(key):
        values = [r[key] for r in ok if r[key] is not None]
        return statistics.median(values) if values else None
    delays = [r["delay_s"] for r in ok if r["delay_s"] is not None]
    report = {"benchmark": "web", "command": common.command_line(), "machine": info, "embedder": embedder,
              "params": {"questions": args.questions, "clients": args.clients, "np": args.np,
                         "answer_model": args.answer_model, "max_tokens": MAX_TOKENS},
              "one_by_one": one, "at_once": runs, "median_sources_s": med("sources_s"), "median_core_s": med("core_s"),
              "median_delay_s": med("delay_s"), "max_delay_s": max(delays, default=None)}
    failed = sum(r["failed"] for r in runs) + len(one) - len(ok)
    report["goals"] = [
        {"goal": f"Einbetten+Suche in der Seite ≤ {GOAL_RETRIEVAL_S} s (Median)",
         "met": report["median_sources_s"] is not None and report["median_sources_s"] <= GOAL_RETRIEVAL_S,
         "value": f"POST→Quellen {common.fmt(report['median_sources_s'])} s, Kern {common.fmt(report['median_core_s'])} s"},
        {"goal": f"erstes Token ≤ {GOAL_DELAY_S} s nach llama-server", "met": bool(delays) and max(delays) <= GOAL_DELAY_S,
         "value": f"Median {common.fmt(report['median_delay_s'])} s, höchstens {common.fmt(report['max_delay_s'])} s"},
        {"goal": f"{args.clients} Clients gleichzeitig: 0 gescheitert", "met": failed == 0,
         "value": "; ".join(f"Warteplätze {r['queue']}: {r['answered']} beantwortet, {r['busy']} „ausgelastet“, "
                            f"{r['failed']} gescheitert" for r in runs)}]
    return report


def main():
    args = parse_args()
    info = common.machine()
    with tempfile.TemporaryDirectory(prefix="rag-bench-web-") as tmp:
        env = {**os.environ, "RAG_WIKI": args.wiki, "RAG_DB": os.path.join(tmp, "knowledge.db"),
               "RAG_EMBED_MODEL": config.default_model(), "RAG_EMBED_VIA": "", "RAG_API_KEY": "", "RAG_SERVE_KEY": ""}
        common.build_quietly(env, 1800)
        with ServerProcess(model=args.answer_model, parallel=args.np, log_path=os.path.join(tmp, "llm.log")) as llm, \
                StampProxy(llm.url) as proxy:
            env["LLAMA_SERVER_URL"] = proxy.url
            embedder, one, runs = measure(args, env, questions(), proxy)
    report = make_report(args, info, embedder, one, runs)
    info["loadavg_end"] = common.loadavg()
    common.emit(args, report, render(report))

if __name__ == "__main__":
    main()
