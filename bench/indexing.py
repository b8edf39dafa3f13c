#!/usr/bin/env python3
"""Indexing speed on wiki/ with the real model: the post's process per chunk vs the project's ways.

    python3 bench/indexing.py                      # post (first 20 chunks), project, ceiling
    python3 bench/indexing.py --compare            # the default model and Gemma 3 270M in one run, and their ratio
    python3 bench/indexing.py --tune               # plus a sweep: texts per process, -c/-b/-ub, -t, warm-up, -fit
    python3 bench/indexing.py --tune-server        # plus a sweep of the spawned server: -np, texts per request
    python3 bench/indexing.py --limit 3 --post-limit 2 --no-build --json     # tiny (smoke test)

Every way embeds the same texts (the chunks build_index.py makes of wiki/, heading path and the
model's passage prefix included), so they produce the same vectors; "max 1−cos" shows it.

  post       one llama-embedding process per chunk (bench/post_way.py), on the first --post-limit
             chunks: the model is loaded once per chunk, so tokens/s is about the same on any subset
  project    build_index.py's default (--embed-via auto = spawn): one llama-server --embeddings for
             the run (ServerProcess.for_indexing), BATCH (rag/ingest/embed_chunks.py) chunks per
             /v1/embeddings request; the time includes starting the server and loading the model
             (the fastest of REPEAT runs)
  binary     rag/models/embed_binary.embed_texts in batches of BATCH (--embed-via binary, the post's
             llama-embedding, many chunks per process)
  build      the whole `build_index.py --rebuild --quiet` process (embedding plus SQLite and FTS)
  ceiling    llama-server's prompt processing for the same model and texts, model loaded once, one
             chunk at a time, one pass before and one after the other measurements, per chunk the
             faster one. A decoder (Gemma): one /completion with n_predict 1 per chunk, Σ prompt_n /
             Σ prompt_ms. An encoder (e5) cannot complete: one /v1/embeddings request per chunk (wall
             time), which is its whole prompt processing.

Tokens are counted by llama-server's /tokenize with the BOS token, as llama-embedding sees them.

Does not handle: GPU offload, cold file caches.
"""
import argparse
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import common
from common import ROOT
from indexing_ways import REPEAT, embed_post, embed_project, embed_spawned, max_deviation, server_sweep, sweep

from rag import config  # noqa: E402  (common puts ROOT on sys.path)
from rag.ingest import chunking, embed_chunks, formats, pages
from rag.models import embed_binary as embedder  # noqa: E402
from rag.models import server_process  # noqa: E402
from rag.models.server_process import ServerProcess  # noqa: E402

POST_LIMIT = 20  # chunks embedded the post's way (each one a process that loads the model)
GOAL_SHARE = 0.8  # project tokens/s at least 80 % of llama-server's prompt processing
HTTP_TIMEOUT = 600  # seconds per request to llama-server
EMBEDDINGS_PER_REQUEST = 16  # texts per /v1/embeddings request (--embeddings-endpoint)
GOAL_E5_FACTOR = 3.0  # the default model (multilingual-e5-small) at least 3x faster than Gemma 3 270M (--compare)


# -- texts and tokens ------------------------------------------------------------------------------
def wiki_texts(wiki, limit=None):
    """What build_index.py embeds for wiki/, in its order: heading path + blank line + content."""
    texts = []
    for rel in pages.find_pages(Path(wiki)):
        text, _ = pages.read_page(Path(wiki) / rel, rel)
        if isinstance(text, bytes):  # PDF, HTML, Word: Markdown first, as build_index.py does
            text, _ = pages.convert_page(rel, text, formats.default_pdftotext(), set())
        if text is None:
            continue
        texts += [chunking.embedded_text(h, c) for h, c in chunking.chunk_page(text)]
    return texts[:limit] if limit else texts


def post_json(url, body, timeout=HTTP_TIMEOUT):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"Fehler: llama-server antwortete nicht brauchbar auf {url} ({exc}) – "
                         f"Rechner ausgelastet? Mit --limit weniger Chunks messen.")


def count_tokens(url, texts):
    """Tokens per text, BOS included (llama-embedding tokenizes with add_special)."""
    return [len(post_json(url + "/tokenize", {"content": t, "add_special": True})["tokens"]) for t in texts]


# -- the ceiling -----------------------------------------------------------------------------------
def is_encoder(model, binary, threads):
    """True for a model that cannot complete (BERT-like, e.g. multilingual-e5): llama-server with
    --embeddings answers /completion with HTTP 500 "does not support logits computation"."""
    extra = ["-t", str(threads)] if threads else []
    with ServerProcess(model=model, binary=binary, embeddings=True, extra=extra) as server:
        body = json.dumps({"prompt": "Test", "n_predict": 1}).encode()
        request = urllib.request.Request(server.url + "/completion", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT):
                return False
        except urllib.error.HTTPError:
            return True


def ceiling_pass(model, binary, texts, threads, encoder=False):
    """One pass of llama-server over the texts: (tokens per text, prompt ms per text).

    Decoder: one /completion with n_predict 1 per text; llama-server reports how long the prompt took.
    Encoder: one /v1/embeddings request per text, timed here (its forward pass is all there is).
    """
    extra = ["-t", str(threads)] if threads else []
    with ServerProcess(model=model, binary=binary, embeddings=encoder, extra=extra) as server:
        tokens = count_tokens(server.url, texts)
        if encoder:
            post_json(server.url + "/v1/embeddings", {"input": texts[:1]})  # warm-up
            return tokens, [common.timed(post_json, server.url + "/v1/embeddings", {"input": [t]})[0] * 1000
                            for t in texts]
        post_json(server.url + "/completion", {"prompt": texts[0], "n_predict": 1, "cache_prompt": False})  # warm-up
        timings = [post_json(server.url + "/completion",
                             {"prompt": t, "n_predict": 1, "cache_prompt": False})["timings"] for t in texts]
    return tokens, [t["prompt_ms"] for t in timings]


def ceiling_rate(tokens, passes):
    """Σ tokens / Σ (per text, the fastest pass): other jobs on the machine only ever slow a pass down.

    Example: ceiling_rate([100, 100], [[50, 80], [60, 70]]) -> 200 / 0.12 s = 1666.7 tokens/s
    """
    return sum(tokens) / sum(min(ms) for ms in zip(*passes)) * 1000


def embeddings_endpoint_rate(model, binary, texts, tokens, threads, repeat):
    """Tokens/s of llama-server's /v1/embeddings, EMBEDDINGS_PER_REQUEST texts per request."""
    extra = ["-t", str(threads)] if threads else []
    size = str(max(512, -(-max(tokens) // 256) * 256))  # one text per micro-batch
    with ServerProcess(model=model, binary=binary, embeddings=True, extra=extra + ["-b", size, "-ub", size]) as server:
        post_json(server.url + "/v1/embeddings", {"input": texts[:1]})  # warm-up
        seconds = 0.0
        for i in range(0, len(texts), EMBEDDINGS_PER_REQUEST):
            body = {"input": texts[i:i + EMBEDDINGS_PER_REQUEST]}
            seconds += min(common.timed(post_json, server.url + "/v1/embeddings", body)[0] for _ in range(repeat))
    return sum(tokens) / seconds


# -- one model -------------------------------------------------------------------------------------
def time_ways(name, model, texts, args, post_n):
    """([(seconds, vectors)] of the project's way, the same of llama-embedding batches, (seconds, vectors)
    of the post's way on the first post_n texts, or (None, None)); the first two interleaved, args.repeat times."""
    project_runs, binary_runs = [], []
    for _ in range(args.repeat):  # interleaved: a busy minute slows both ways, not one
        print(f"  {name}: Projekt (llama-server für den Lauf) …", file=sys.stderr, flush=True)
        project_runs.append(common.timed(embed_spawned, texts, args.server_bin, model))
        print(f"  {name}: llama-embedding-Batches …", file=sys.stderr, flush=True)
        binary_runs.append(common.timed(embed_project, texts, args.embedding_bin, model))
    if not post_n:
        return project_runs, binary_runs, (None, None)
    print(f"  {name}: Post: {post_n} Prozesse …", file=sys.stderr, flush=True)
    return project_runs, binary_runs, common.timed(embed_post, texts[:post_n], args.embedding_bin, model)


def measure_build(name, model, args, total):
    """The whole `build_index.py --rebuild --quiet` process on args.wiki: seconds, tokens/s, peak RSS."""
    print(f"  {name}: build_index.py --rebuild …", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="rag-bench-indexing-") as tmp:
        env = {**os.environ, "LLAMA_EMBEDDING": args.embedding_bin, "RAG_EMBED_MODEL": model}
        run = common.measure([sys.executable, str(ROOT / "build_index.py"), "--rebuild", "--quiet", "--wiki",
                              args.wiki, "--db", os.path.join(tmp, "knowledge.db")], env=env)
    if run.returncode != 0:
        raise SystemExit(f"Fehler: build_index.py scheiterte: {run.stderr.strip()[-300:]}")
    return dict(build_s=run.seconds, build_tokens_per_s=total / run.seconds, build_peak_mb=run.peak_mb)


def measure_model(model, raw_texts, args, threads, post_n, first=True):
    """All ways for one model; returns the results dict (tokens/s, shares, vectors compared).
    The post's way and the sweeps (--tune, --tune-server) only for the `first` model."""
    name = os.path.basename(model)
    texts = [embedder.prefixes_for(model)[1] + t for t in raw_texts]  # as build_index.py embeds them (e5: "passage: ")
    encoder = is_encoder(model, args.server_bin, threads)
    print(f"  {name}: llama-server: Tokens zählen, Obergrenze messen ({len(texts)} Chunks, "
          f"{'Encoder' if encoder else 'Decoder'}) …", file=sys.stderr, flush=True)
    tokens, first_pass = ceiling_pass(model, args.server_bin, texts, threads, encoder)
    total = sum(tokens)
    project_runs, binary_runs, (post_s, post_vectors) = time_ways(name, model, texts, args, post_n)
    project_s, project_vectors = min(project_runs, key=lambda run: run[0])
    binary_s, binary_vectors = min(binary_runs, key=lambda run: run[0])
    passes = [first_pass]
    if args.repeat > 1:
        print(f"  {name}: llama-server: Obergrenze ein zweites Mal …", file=sys.stderr, flush=True)
        passes.append(ceiling_pass(model, args.server_bin, texts, threads, encoder)[1])
    ceiling = ceiling_rate(tokens, passes)
    post_tps = sum(tokens[:post_n]) / post_s if post_s else None
    results = {"model": name, "encoder": encoder, "chunks": len(texts), "tokens": total,
               "max_tokens_per_chunk": max(tokens), "ceiling_tokens_per_s": ceiling,
               "ceiling_passes_tokens_per_s": [total / sum(p) * 1000 for p in passes],
               "server_embeddings_tokens_per_s": None, "server_threads": threads,
               "post_chunks": post_n, "post_s": post_s, "post_tokens_per_s": post_tps,
               "post_estimate_all_s": total / post_tps if post_tps else None,
               "project_batch": embed_chunks.BATCH, "project_parallel": server_process.INDEX_PARALLEL,
               "project_processes": 1, "project_s": project_s, "project_runs_s": [run[0] for run in project_runs],
               "project_tokens_per_s": total / project_s, "project_share": total / project_s / ceiling,
               "binary_processes": -(-len(texts) // embed_chunks.BATCH), "binary_s": binary_s,
               "binary_runs_s": [run[0] for run in binary_runs], "binary_tokens_per_s": total / binary_s,
               "binary_share": total / binary_s / ceiling,
               "project_vs_binary_max_1_minus_cos": max_deviation(project_vectors, binary_vectors),
               "post_vs_project_max_1_minus_cos": (max_deviation(post_vectors, project_vectors[:post_n])
                                                   if post_vectors else None),
               "build_s": None, "build_tokens_per_s": None}
    if args.embeddings_endpoint:
        results["server_embeddings_tokens_per_s"] = embeddings_endpoint_rate(model, args.server_bin, texts, tokens,
                                                                             threads, args.repeat)
    if not args.no_build and not args.limit:
        results.update(measure_build(name, model, args, total))
    if args.tune and first:
        results["tuning"] = sweep(texts, args.embedding_bin, model, binary_vectors, tokens, args.repeat)
    if args.tune_server and first:
        results["server_tuning"] = server_sweep(texts, args.server_bin, model, binary_vectors, tokens, threads,
                                                args.repeat)
    return results


# -- report ----------------------------------------------------------------------------------------
def model_table(r):
    ceiling = r["ceiling_tokens_per_s"]
    rows = []
    if r["post_s"]:
        rows.append({"way": f"Post: 1 Prozess je Chunk (erste {r['post_chunks']})", "chunks": r["post_chunks"],
                     "processes": r["post_chunks"], "seconds": r["post_s"], "tps": r["post_tokens_per_s"]})
    rows += [{"way": f"Projekt: llama-server für den Lauf (-np {r['project_parallel']}, {r['project_batch']} je "
                     f"Anfrage, Start inkl.)", "chunks": r["chunks"], "processes": 1, "seconds": r["project_s"],
              "tps": r["project_tokens_per_s"]},
             {"way": f"llama-embedding: Batch {r['project_batch']} (--embed-via binary)", "chunks": r["chunks"],
              "processes": r["binary_processes"], "seconds": r["binary_s"], "tps": r["binary_tokens_per_s"]}]
    if r.get("build_s") is not None:
        rows.append({"way": "build_index.py --rebuild (ganzer Lauf, Standard)", "chunks": r["chunks"],
                     "processes": 1, "seconds": r["build_s"], "tps": r["build_tokens_per_s"]})
    how = "/v1/embeddings, 1 Text je Anfrage" if r["encoder"] else "/completion (prompt)"
    rows.append({"way": f"Obergrenze: llama-server {how}", "chunks": r["chunks"], "tps": ceiling})
    if r["server_embeddings_tokens_per_s"]:
        rows.append({"way": f"llama-server /v1/embeddings ({EMBEDDINGS_PER_REQUEST} Texte je Anfrage, -np 1)",
                     "chunks": r["chunks"], "tps": r["server_embeddings_tokens_per_s"]})
    for row in rows:
        row["share"] = f"{row['tps'] / ceiling:.0%}" if row.get("tps") else None
        row["tps"] = round(row["tps"]) if row.get("tps") else None
    cols = [("way", "Weg"), ("chunks", "Chunks"), ("processes", "Prozesse"), ("seconds", "Sekunden"),
            ("tps", "Tokens/s"), ("share", "Anteil Obergrenze")]
    lines = [f"Modell {r['model']}: {r['tokens']} Tokens (längster Chunk {r['max_tokens_per_chunk']})", "",
             common.table(cols, rows), ""]
    same = f"gleiche Vektoren (max 1−cos Server/llama-embedding): {r['project_vs_binary_max_1_minus_cos']:.1e}"
    if r["post_s"]:
        same += f"; Post/Projekt: {r['post_vs_project_max_1_minus_cos']:.1e}"
        lines.append(f"Post hochgerechnet auf alle {r['chunks']} Chunks: {r['post_estimate_all_s']:.0f} s")
    lines.append(same)
    for key, title in (("tuning", "llama-embedding"), ("server_tuning", "llama-server für den Lauf")):
        if r.get(key):
            tune = [dict(t, tokens_per_s=round(t["tokens_per_s"]), share=f"{t['tokens_per_s'] / ceiling:.0%}",
                         max_1_minus_cos=f"{t['max_1_minus_cos']:.1e}") for t in r[key]]
            lines += ["", f"Einstellungen {title} (je Zeile alle Chunks, schnellster Lauf; eine Stellschraube nach "
                          f"der anderen):", "",
                      common.table([("setting", "Einstellung"), ("processes", "Prozesse"), ("seconds", "Sekunden"),
                                    ("tokens_per_s", "Tokens/s"), ("share", "Anteil Obergrenze"),
                                    ("peak_mb", "RAM MB je Prozess"), ("max_1_minus_cos", "max 1−cos")], tune)]
    return lines


def render(report):
    models = report["models"]
    lines = [common.header(f"Indexieren: {models[0]['chunks']} Chunks aus {report['params']['wiki']}, "
                           f"Modell{'e' if len(models) > 1 else ''} {', '.join(m['model'] for m in models)}",
                           report["machine"]),
             f"Befehl: {report['command']}", ""]
    for r in models:
        lines += model_table(r) + [""]
    if report.get("ratio"):
        ratio = report["ratio"]
        lines.append(f"{ratio['fast']} gegen {ratio['slow']} (Standardweg, dieselben Chunks): "
                     f"{ratio['fast_s']:.1f} s gegen {ratio['slow_s']:.1f} s = {ratio['factor']:.1f}× schneller")
        lines.append("")
    lines += [common.goal_line(g["goal"], g["met"], g["value"]) for g in report["goals"]]
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(description="Misst das Einbetten des Wikis: ein Prozess je Chunk (Blogpost), "
                                                 "llama-embedding-Batches und den llama-server des Projekts, neben "
                                                 "llama-servers Obergrenze.")
    parser.add_argument("--wiki", default=str(ROOT / "wiki"), help="Wiki-Ordner (Standard: wiki/ des Projekts)")
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(), help="Pfad zu llama-embedding")
    parser.add_argument("--server-bin", default=config.default_server_bin(), help="Pfad zu llama-server")
    parser.add_argument("--model", default=config.default_model(), help="GGUF-Modell (Standard: das des Setups)")
    parser.add_argument("--compare", action="store_true",
                        help="zusätzlich Gemma 3 270M messen und das Verhältnis der Standardwege zeigen")
    parser.add_argument("--limit", type=int, help="nur die ersten N Chunks (Standard: alle)")
    parser.add_argument("--post-limit", type=int, default=POST_LIMIT,
                        help=f"so viele Chunks auf dem Weg des Posts einbetten (Standard: {POST_LIMIT}; 0 = keine; "
                             f"nur das erste Modell)")
    parser.add_argument("--repeat", type=int, default=REPEAT,
                        help=f"Läufe je Messung, abwechselnd, der schnellste zählt (Standard: {REPEAT})")
    parser.add_argument("--threads", type=int, help="-t für llama-server (Standard: Anzahl CPU-Kerne)")
    parser.add_argument("--no-build", action="store_true", help="build_index.py nicht als ganzen Prozess messen")
    parser.add_argument("--embeddings-endpoint", action="store_true",
                        help="zusätzlich llama-server /v1/embeddings mit -np 1 messen (zweiter Serverstart)")
    parser.add_argument("--tune", action="store_true",
                        help="llama-embedding: Batchgröße, -c/-b/-ub, -t, --no-warmup und -fit off durchmessen "
                             "(Minuten; nur das erste Modell)")
    parser.add_argument("--tune-server", action="store_true",
                        help="llama-server für den Lauf: -np und Texte je Anfrage durchmessen (Minuten; nur das "
                             "erste Modell)")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    return parser.parse_args()


def models_to_measure(args):
    """The model of --model, with --compare also Gemma 3 270M; each file must be there, as the binaries."""
    models = [args.model]
    gemma = str(config.cache_model_path())
    if args.compare and os.path.basename(args.model) != os.path.basename(gemma):
        models.append(gemma)
    for path, what in [(args.embedding_bin, "llama-embedding"), (args.server_bin, "llama-server")] + \
                      [(m, "Modell") for m in models]:
        if not os.path.isfile(path):
            raise SystemExit(f"Fehler: {what} nicht gefunden ({path}) – "
                             f"einrichten mit: python3 scripts/setup_llama.py")
    if args.repeat < 1:
        raise SystemExit("Fehler: --repeat muss mindestens 1 sein.")
    return models


def goals(results):
    """The project's share of the ceiling per model; with two models their ratio, and the goal on it."""
    found, ratio = [], None
    for r in results:
        suffix = "" if r is results[0] else f" ({r['model']})"
        found.append({"goal": f"project >= {GOAL_SHARE:.0%} of llama-server prompt processing{suffix}",
                      "met": r["project_share"] >= GOAL_SHARE, "value": f"{r['project_share']:.0%}"})
    if len(results) > 1:
        fast, slow = results
        factor = slow["project_s"] / fast["project_s"]
        ratio = {"fast": fast["model"], "slow": slow["model"], "fast_s": fast["project_s"],
                 "slow_s": slow["project_s"], "factor": factor}
        found.append({"goal": f"{fast['model']} >= {GOAL_E5_FACTOR:.0f}x faster than {slow['model']}",
                      "met": factor >= GOAL_E5_FACTOR, "value": f"{factor:.1f}x"})
    return found, ratio


def main():
    args = parse_args()
    models = models_to_measure(args)
    raw_texts = wiki_texts(args.wiki, args.limit)
    if not raw_texts:
        raise SystemExit(f"Fehler: keine Chunks in {args.wiki} – Pfad mit --wiki angeben.")
    info = common.machine()
    threads = args.threads or os.cpu_count()
    post_n = min(args.post_limit if args.post_limit is not None else POST_LIMIT, len(raw_texts))
    results = [measure_model(m, raw_texts, args, threads, post_n if i == 0 else 0, i == 0) for i, m in enumerate(models)]
    report = {"benchmark": "indexing", "command": common.command_line(), "machine": info,
              "params": {"wiki": args.wiki, "model": args.model, "models": models, "embedding_bin": args.embedding_bin,
                         "limit": args.limit, "post_limit": post_n, "batch": embed_chunks.BATCH,
                         "parallel": server_process.INDEX_PARALLEL, "repeat": args.repeat},
              "results": results[0], "models": results, "ratio": None, "tuning": results[0].get("tuning"),
              "best": None, "goals": []}
    report["goals"], report["ratio"] = goals(results)
    if report["tuning"]:
        report["best"] = max(report["tuning"], key=lambda t: t["tokens_per_s"])
    info["loadavg_end"] = common.loadavg()
    common.emit(args, report, render(report))


if __name__ == "__main__":
    main()
