#!/usr/bin/env python3
"""The post's way, kept as the baseline the benchmarks compare against.

    python3 bench/post_way.py --db post.db "Wie lege ich eine Mailbox an?"
    -> [[0.8123, "mail/mailbox-anlegen.md", 0], ...]   # top 4: cosine, path, chunk_index

As in the post: one llama-embedding process per text, the vector stored as JSON text in
docs(path, chunk_index, content, embedding) with the numbers as llama-embedding prints them (7
decimals, "0.0123457": json.dumps of the parsed floats keeps them short); at query time every row
is read, json.loads'ed and scored with a generator-based cosine, all scores are sorted and the top
4 kept. Only the flags of the llama-embedding call are today's correct ones (mean pooling, L2 norm,
JSON output, a separator that does not split multi-line chunks), so both sides of a benchmark
produce the same vectors.

Does not handle: anything the post did not do (no batching, no packed vectors, no full-text search).
"""
import argparse
import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rag import config
from rag.models import embed_binary as embedder  # noqa: E402

TOP_K = 4  # as in the post
SCHEMA = "CREATE TABLE IF NOT EXISTS docs (path TEXT, chunk_index INTEGER, content TEXT, embedding TEXT)"


def embed(text, binary, model, timeout=300):
    """One llama-embedding process for one text -> its vector (the post's subprocess.run per chunk)."""
    n_ctx = str(embedder.context_size([text]))
    cmd = [binary, "-m", model, "-p", text, "--pooling", embedder.POOLING, "--embd-normalize", "2",
           "--embd-output-format", "json", "--embd-separator", embedder.SEPARATOR,
           "-c", n_ctx, "-b", n_ctx, "-ub", n_ctx]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    return json.loads(result.stdout[result.stdout.find("{"):])["data"][0]["embedding"]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb)


def store(conn, path, chunk_index, content, vector):
    conn.execute("INSERT INTO docs VALUES (?, ?, ?, ?)", (path, chunk_index, content, json.dumps(vector)))


def search(conn, qvec, top_k=TOP_K):
    """[(cosine, path, chunk_index, content)] best first, over every row of docs."""
    scored = []
    for path, chunk_index, content, embedding in conn.execute(
            "SELECT path, chunk_index, content, embedding FROM docs"):
        scored.append((cosine(qvec, json.loads(embedding)), path, chunk_index, content))
    scored.sort(key=lambda row: row[0], reverse=True)
    return scored[:top_k]


def main():
    parser = argparse.ArgumentParser(description="Die Suche des Blogposts (Basislinie der Benchmarks).")
    parser.add_argument("question", help="die Frage")
    parser.add_argument("--db", required=True,
                        help="SQLite-Datei mit Tabelle docs(path, chunk_index, content, embedding)")
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(), help="Pfad zu llama-embedding")
    parser.add_argument("--model", default=config.default_model(), help="GGUF-Modell für das Frage-Embedding")
    args = parser.parse_args()
    qvec = embed(args.question, args.embedding_bin, args.model)
    conn = sqlite3.connect(args.db)
    print(json.dumps([[round(score, 6), path, chunk_index] for score, path, chunk_index, _ in search(conn, qvec)]))


if __name__ == "__main__":
    main()
