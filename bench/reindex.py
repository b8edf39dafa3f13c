#!/usr/bin/env python3
"""Re-indexing: build_index.py on an unchanged wiki of 1,000 generated pages, and after one edit.

    python3 bench/reindex.py                         # fake embedder: the project's own overhead
    python3 bench/reindex.py --embedder real         # real model (the first build takes long)
    python3 bench/reindex.py --pages 20 --repeat 1 --json      # tiny (smoke test)

The pages are generated (seeded): front matter, a title, three sections of German IT text, in ten
folders. After a first full build, `build_index.py` runs as a reader runs it:

  unchanged         nothing changed: every file is read and hashed, nothing is embedded
  one page, known   one page's paragraph rewritten with words the wiki already has
  one page, new     one page gets a word the wiki did not have: the compound vocabulary changes,
                    so build_index.py re-derives the full-text rows of every chunk

With the fake embedder (default) a vector costs microseconds, so the numbers are the project's own
overhead; with --embedder real the one changed page also waits for one llama-embedding process.

Does not handle: renamed or deleted pages, the post's way (it has no incremental mode: every run
re-embeds everything, as in the first build).
"""
import argparse
import os
import random
import re
import sys
import tempfile
from pathlib import Path

import common
from common import ROOT

from rag import config  # noqa: E402  (common puts ROOT on sys.path)

PAGES = 1000  # generated pages
FOLDERS = 10  # spread over this many folders
SECTIONS = 3  # ## sections per page
WORDS_PER_PARAGRAPH = 70  # ~500 characters
REPEAT = 3  # runs per measurement (median)
SEED = 7


def page_text(rnd, number):
    """One generated page: front matter, H1, SECTIONS sections with one paragraph each."""
    title = f"Seite {number}: " + " ".join(rnd.choices(common.GERMAN_WORDS[:60], k=3)).title()
    parts = [f"---\ntitle: {title}\n---", f"# {title}"]
    for s in range(SECTIONS):
        parts.append(f"## Abschnitt {s + 1}: {rnd.choice(common.GERMAN_WORDS[:60]).title()}")
        parts.append(" ".join(rnd.choices(common.GERMAN_WORDS, k=WORDS_PER_PARAGRAPH)).capitalize() + ".")
    return "\n\n".join(parts) + "\n"


def generate_wiki(folder, pages, seed=SEED):
    """Write `pages` pages below folder; returns their paths (sorted)."""
    rnd, paths = random.Random(seed), []
    for number in range(pages):
        path = Path(folder) / f"bereich-{number % FOLDERS:02d}" / f"seite-{number:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page_text(rnd, number), encoding="utf-8")
        paths.append(path)
    return sorted(paths)


def edit_known(path, run):
    """Rewrite the last paragraph with other words the wiki already uses."""
    text = path.read_text(encoding="utf-8").rstrip("\n")
    head, _ = text.rsplit("\n\n", 1)
    rnd = random.Random(f"{path}-{run}")
    path.write_text(head + "\n\n" + " ".join(rnd.choices(common.GERMAN_WORDS, k=WORDS_PER_PARAGRAPH)).capitalize()
                    + ".\n", encoding="utf-8")


def edit_new_word(path, run):
    """Append a sentence with a word the wiki has never seen (letters only, so it joins the vocabulary)."""
    word = "zusatzbegriff" + "".join(chr(ord("a") + int(d)) for d in str(run))
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"\nNeu ist der {word.title()} im Ablauf.\n")


def build(wiki, db, env):
    run = common.measure([sys.executable, str(ROOT / "build_index.py"), "--quiet", "--wiki", str(wiki), "--db", db],
                         env=env)
    return run.seconds, run.stdout.strip()


def counts(summary):
    """Example: 'Seiten: 0 neu, 1 geändert, 0 entfernt, 999 unverändert · Chunks: 4 eingebettet, …' -> {...}"""
    pattern = r"(\d+) (neu|geändert|entfernt|unverändert|eingebettet)"
    return {key: int(value) for value, key in re.findall(pattern, summary)}


def main():
    parser = argparse.ArgumentParser(description="Misst build_index.py auf einem unveränderten Wiki aus generierten "
                                                 "Seiten und nach der Änderung einer Seite.")
    parser.add_argument("--pages", type=int, default=PAGES, help=f"Anzahl generierter Seiten (Standard: {PAGES})")
    parser.add_argument("--repeat", type=int, default=REPEAT, help=f"Läufe je Messung (Standard: {REPEAT})")
    parser.add_argument("--embedder", choices=("fake", "real"), default="fake",
                        help="fake: Vektoren in Mikrosekunden (Standard); "
                             "real: llama-embedding mit dem Modell des Setups")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    args = parser.parse_args()
    if args.pages < 2 or args.repeat < 1:
        raise SystemExit("Fehler: --pages ≥ 2 und --repeat ≥ 1 angeben.")
    info = common.machine()
    with tempfile.TemporaryDirectory(prefix="rag-bench-reindex-") as tmp:
        if args.embedder == "fake":
            binary, model = common.write_fake_embedder(tmp)
        else:
            binary, model = config.default_embedding_bin(), config.default_model()
            if not (os.path.isfile(binary) and os.path.isfile(model)):
                raise SystemExit("Fehler: llama-embedding oder Modell fehlt – "
                                 "einrichten mit: python3 scripts/setup_llama.py")
        env = {**os.environ, "LLAMA_EMBEDDING": binary, "RAG_EMBED_MODEL": model}
        wiki, db = Path(tmp) / "wiki", os.path.join(tmp, "knowledge.db")
        paths = generate_wiki(wiki, args.pages)
        size_mb = sum(p.stat().st_size for p in paths) / common.MB
        print(f"  erster Lauf über {args.pages} Seiten …", file=sys.stderr, flush=True)
        first_s, first = build(wiki, db, env)
        rows = [{"case": "erster Lauf (alles neu)", "seconds": first_s, **counts(first)}]
        cases = [("unverändert", None), ("eine Seite geändert, bekannte Wörter", edit_known),
                 ("eine Seite geändert, neues Wort", edit_new_word)]
        for label, edit in cases:
            runs = []
            for r in range(args.repeat):
                if edit:
                    edit(paths[(len(paths) // 2 + r) % len(paths)], r)
                runs.append(build(wiki, db, env))
            rows.append({"case": label, "seconds": common.median([s for s, _ in runs]), "runs": [s for s, _ in runs],
                         **counts(runs[-1][1])})
        chunks = int(re.search(r"(\d+) im Index", first).group(1))
    info["loadavg_end"] = common.loadavg()
    report = {"benchmark": "reindex", "command": common.command_line(), "machine": info,
              "params": {"pages": args.pages, "repeat": args.repeat, "embedder": args.embedder,
                         "wiki_mb": round(size_mb, 2), "chunks": chunks},
              "results": rows}
    cols = [("case", "Lauf"), ("seconds", "Sekunden (Median)"), ("neu", "neu"), ("geändert", "geändert"),
            ("unverändert", "unverändert"), ("eingebettet", "Chunks eingebettet")]
    title = (f"Neu indexieren: {args.pages} generierte Seiten ({size_mb:.2f} MB, {chunks} Chunks), "
             f"Embedder {args.embedder}")
    text = "\n".join([common.header(title, info), f"Befehl: {report['command']}",
                      f"build_index.py als ganzer Prozess, Median aus {args.repeat} Läufen",
                      "", common.table(cols, rows)])
    common.emit(args, report, text)


if __name__ == "__main__":
    main()
