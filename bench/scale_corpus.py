#!/usr/bin/env python3
"""Real e5 vectors for bench/scale.py: German texts made from wiki/, embedded once, cached.

    python3 bench/scale_corpus.py --count 20000        # -> $RAG_CACHE/scale/e5-20000-<hash>.f32 (+ .json)

Texts: every chunk of wiki/ (heading path + content), every sentence or list line under its
heading, and pairs of sentences of the same page ("generated paraphrases": the same facts in
other combinations), de-duplicated, shuffled with a fixed seed, the first --count taken. Queries:
the questions of eval/questions.jsonl with e5's "query: " prefix. Both are embedded with the real
multilingual-e5-small through one llama-server --embeddings (as build_index.py --embed-via spawn).

File format: little-endian float32, rows of D values (the texts first, then the queries); the
.json beside it names the counts, the model and the dimension. A cached file is reused.

Does not handle: other models than the setup's e5 (pass --model for another GGUF), corpora beyond
the wiki's few thousand sentences × pairs (about 60,000 distinct texts).
"""
import argparse
import hashlib
import json
import random
import re
import sys
import time
from array import array
from pathlib import Path

import common  # noqa: F401  (puts the repository on sys.path)
from common import ROOT

from rag import config
from rag.ingest import chunking, pages
from rag.models import embed_binary as embedder
from rag.models import embed_server as embed_client
from rag.models.server_process import ServerProcess

SEED = 19
BATCH = 64  # texts per /v1/embeddings request
SENTENCE = re.compile(r"(?<=[.!?:])\s+|\n+")
MIN_SENTENCE = 25  # shorter pieces (a lone "Schritte:") say little


def wiki_texts(wiki=ROOT / "wiki"):
    """Distinct German texts from the wiki's Markdown/text pages, in a fixed order."""
    texts = []
    for rel in pages.find_pages(wiki):
        if not rel.endswith((".md", ".txt")):
            continue
        text, _ = pages.read_page(wiki / rel, rel)
        if text is None:
            continue
        sentences = []
        for heading, content in chunking.chunk_page(text):
            texts.append(chunking.embedded_text(heading, content))
            for piece in SENTENCE.split(content):
                piece = piece.strip(" -*#>|`")
                if len(piece) >= MIN_SENTENCE:
                    sentences.append((heading, piece))
                    texts.append(chunking.embedded_text(heading, piece))
        for i, (heading, a) in enumerate(sentences):
            for _, b in sentences[i + 1:]:
                texts.append(f"{heading}\n\n{a} {b}")
    return list(dict.fromkeys(texts))


def questions():
    with open(ROOT / "eval" / "questions.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["question"] for line in f if line.strip()]


def cache_path(count, model):
    key = hashlib.sha256(f"{count} {Path(model).name} {SEED} v1".encode()).hexdigest()[:12]
    return config.cache_dir() / "scale" / f"e5-{count}-{key}.f32"


def load(count, model=None):
    """(texts as float32 array, queries as float32 array, dim) from the cache, or None."""
    path = cache_path(count, model or config.default_model())
    info = path.with_suffix(".json")
    if not (path.exists() and info.exists()):
        return None
    meta = json.loads(info.read_text())
    values = array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    if sys.byteorder != "little":
        values.byteswap()
    split = meta["texts"] * meta["dim"]
    return values[:split], values[split:], meta["dim"]


def embed(texts, model, server_bin, threads=None):
    """float32 array of all vectors, in order, through one llama-server for the whole run."""
    out = array("f")
    server = ServerProcess.for_indexing(model, server_bin, texts, threads=threads)
    server.start()
    try:
        started = time.monotonic()
        for start in range(0, len(texts), BATCH):
            for vec in embed_client.embed_fitted(texts[start:start + BATCH], server.url):
                out.extend(vec)
            done = start + BATCH
            if done % (BATCH * 20) == 0:
                rate = done / (time.monotonic() - started)
                print(f"  {done}/{len(texts)} Texte · {rate:.1f}/s · noch {(len(texts) - done) / rate / 60:.0f} min",
                      file=sys.stderr, flush=True)
    finally:
        server.stop()
    return out


def main():
    parser = argparse.ArgumentParser(description="Bettet deutsche Texte aus wiki/ mit e5 ein (für bench/scale.py).")
    parser.add_argument("--count", type=int, default=20000, help="Anzahl Texte (Standard: 20000)")
    parser.add_argument("--model", default=config.default_model(), help="GGUF-Embedding-Modell (Standard: e5)")
    parser.add_argument("--threads", type=int, help="Threads für llama-server")
    args = parser.parse_args()
    path = cache_path(args.count, args.model)
    if load(args.count, args.model):
        print(f"schon da: {path}")
        return
    texts = wiki_texts()
    random.Random(SEED).shuffle(texts)
    if len(texts) < args.count:
        raise SystemExit(f"Fehler: nur {len(texts)} verschiedene Texte im Wiki – kleineres --count angeben.")
    texts = texts[:args.count]
    query_prefix, passage_prefix = embedder.prefixes_for(Path(args.model).name)
    asked = questions()
    print(f"{len(texts)} Texte und {len(asked)} Fragen einbetten mit {Path(args.model).name} …", file=sys.stderr)
    started = time.monotonic()
    vectors = embed([passage_prefix + t for t in texts] + [query_prefix + q for q in asked],
                    args.model, config.default_server_bin(), args.threads)
    dim = len(vectors) // (len(texts) + len(asked))
    path.parent.mkdir(parents=True, exist_ok=True)
    if sys.byteorder != "little":
        vectors.byteswap()
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(vectors.tobytes())
    tmp.replace(path)
    path.with_suffix(".json").write_text(json.dumps({"texts": len(texts), "queries": len(asked), "dim": dim,
                                                     "model": Path(args.model).name, "seed": SEED}))
    print(f"{path}: {len(texts)} + {len(asked)} Vektoren, Dimension {dim}, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
