#!/usr/bin/env python3
"""Which questions of an answer set get another prompt with the guard on than off (no model asked).

    python3 eval/guard_prompts.py [DB] [QUESTIONS] [OUT]   # defaults: knowledge.db, eval/answers.jsonl, no file

A question whose prompt is the same both ways gets the same answer at temperature 0, so the guard
(rag/answer/guard.py) can change its answer only by its answer-side checks, which `evaluate.py --answers`
reports per answer ("guard"). OUT: the questions whose prompt differs, as JSON Lines, to ask them
both ways (RAG_GUARD=on/off python3 evaluate.py --answers --answer-questions OUT).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from rag import core
from rag.answer import context
from rag.answer import guard  # noqa: E402
from rag.answer import prompt  # noqa: E402


def differs(item, settings):
    kind = context.kind(item["question"])
    done = core.found(item["question"], settings)
    retrieval, question = done.retrieval, done.question
    if retrieval.weak or not retrieval.sources:  # refused before any prompt
        return False
    guarded = guard.Shield(retrieval.sources, True).guarded(retrieval)
    reads = (kind, settings.whole_chunks, settings.fact_sources)
    off = prompt.for_question(question, retrieval, True, *reads)[1]
    on = prompt.for_question(question, guarded, True, *reads)[1]
    return on != off


def main(argv):
    db, questions, out = (argv + ["knowledge.db", "eval/answers.jsonl", None][len(argv):])[:3]
    settings = core.Settings(db=db, audit="")
    with open(questions, encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    touched = [item for item in items if differs(item, settings)]
    for item in touched:
        print(f"anderer Prompt: {item['question']}", file=sys.stderr)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(item, ensure_ascii=False) + "\n" for item in touched)
    print(f"{len(touched)} von {len(items)} Fragen bekommen mit dem Schutz einen anderen Prompt")


if __name__ == "__main__":
    main(sys.argv[1:])
