#!/usr/bin/env python3
"""Which statements of recorded answers the support check calls "gestützt": by question type,
answered right or wrong, with and without the question's nouns (rag/check/support.py
SUBJECT_SHARE); and which fact answers the grounding check withdraws, as recorded and with
today's code (grounding.grounding, grounding.gap). No model: the answers come from `evaluate.py
--answers --out FILE`, the sources from the same index searched again.

    python3 bench/support_verdicts.py --answers wiki.jsonl --db wiki.db --answers iob.jsonl --db iob.db

Prints per answer file: {"kind, right|wrong": [statements, gestützt without the question, gestützt with it]}
and {"kind, right|wrong": [fact answers checked, withdrawn as recorded, withdrawn now]}.
"right": evaluate.py's "fact" (a fact answer with its key fact, a how-to answer with all its steps); an
out-of-corpus question that was answered is always "wrong".

Does not handle: answers from another index or another version of the search (the sources would differ).
"""
import argparse
import json

import common  # noqa: F401  (puts the repository on sys.path)

from rag import core
from rag.check import support
from rag.check import grounding
from rag.check.grounding import GROUNDED
from rag.answer.prompt import NO_INFO


def counts(answers_path, db):
    """({"kind, right|wrong": [statements, gestützt without the question, gestützt with it]},
    {"kind, right|wrong": [fact answers checked, withdrawn as recorded, withdrawn now]}) of one answer file."""
    verdicts, withdrawn = {}, {}
    with open(answers_path, encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            recorded = row.get("grounding") or {}
            text = recorded.get("answer") or row.get("answer") or ""  # a withdrawn answer as the model gave it
            if not row.get("llm_called") or text.startswith(NO_INFO):
                continue
            retrieval = core.run(row["question"], core.Settings(db=db, retrieve_only=True, audit="")).retrieval
            right = row["kind"] != "out" and bool(row.get("fact"))
            key = f"{row['kind']}, {'right' if right else 'wrong'}"
            if recorded:
                now = grounding.grounding(row["question"], text, retrieval.sources, retrieval.vocab)
                total = withdrawn.setdefault(key, [0, 0, 0])
                total[0] += 1
                total[1] += bool(recorded.get("refused"))
                total[2] += bool(now and grounding.gap(now, GROUNDED))
            if recorded.get("refused"):
                continue  # the reader saw no statements
            plain = support.check(text, retrieval.sources, retrieval.vocab)["statements"]
            asked = support.check(text, retrieval.sources, retrieval.vocab, question=row["question"])["statements"]
            total = verdicts.setdefault(key, [0, 0, 0])
            total[0] += len(plain)
            total[1] += sum(s["verdict"] == "gestützt" for s in plain)
            total[2] += sum(s["verdict"] == "gestützt" for s in asked)
    return dict(sorted(verdicts.items())), dict(sorted(withdrawn.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", action="append", required=True, help="evaluate.py --answers --out FILE")
    parser.add_argument("--db", action="append", required=True, help="the index those answers were given from")
    args = parser.parse_args()
    if len(args.answers) != len(args.db):
        parser.error("je --answers ein --db angeben")
    for path, db in zip(args.answers, args.db):
        verdicts, withdrawn = counts(path, db)
        print(path, "gestützt:", json.dumps(verdicts, ensure_ascii=False), "zurückgezogen:",
              json.dumps(withdrawn, ensure_ascii=False))


if __name__ == "__main__":
    main()
