#!/usr/bin/env python3
"""Step 2 of the post: embed the question, rank the chunks, build a context-only prompt, ask, show.

    python3 ask_rag.py "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"
    python3 ask_rag.py --retrieve-only --explain "Kuendigungsfrist Dienstleister"
    python3 ask_rag.py --json "Wie groß darf mein Postfach sein?"
    python3 ask_rag.py --expand "Mein Mailprogramm meldet, der Speicher ist fast voll – was tun?"
    python3 ask_rag.py --chat            # follow-ups: "Und wie lösche ich sie wieder?"
    python3 ask_rag.py --rate a-3f9c… -1 "Quota stimmt nicht"    # a vote on an answer, by its id
    python3 ask_rag.py --report          # what the wiki lacks, for its authors (--json: one object)

main() runs the post's steps one call each (rag/core.py Run); the terminal shows what they yield:
  1. embed    the question, with the same model as the index (llama-embedding, or a server)
  2. rank     German full-text search fused with exact cosine similarity (rag/search/);
              too little evidence: "Dazu habe ich keine Information." without asking the model
  3. prompt   the top-k chunks numbered [1]…[n], quoted as data, "Dazu habe ich keine Information."
  4. ask      a running llama-server; then the checks of its answer and one line in the audit log
  5. show     the answer as it streams, its sources and which of them it cites

What the post does not do: a how-to question ("Wie lege ich … an?") is answered with the wiki's
own section, verbatim, under the number of its source; the model only judges whether that section
answers the question (rag/answer/judge.py), and without it the answer is "Dazu habe ich keine
Information.". The model writes only fact answers, and those are checked against the sources
before they are shown (rag/check/). `--explain` prints what each stage decided.

The same core answers on the web page and API of --serve and over MCP (--mcp); the flags are in
rag/doors/flags.py. Does not handle: several indexes at once, editing earlier questions of a --chat
session.
"""
import itertools
import signal
import sys

from rag import core
from rag.doors import asker
from rag.doors import flags
from rag.doors import modes
from rag.doors import terminal


def main():
    args = flags.parse_ask()  # every flag and its environment variable: rag/doors/flags.py
    question = (args.question or "").strip()
    if args.audit_show is not None:
        return modes.audit(args)  # one entry of the audit log, readable
    if asker.first(args):
        return  # --add-user; else who asks is known now (--users, --as, a proxy's headers)
    if args.rate:
        return modes.rate(args)  # a vote on an answer, by its id (rag/audit/feedback.py)
    if args.report:
        return modes.report(args)  # what the wiki lacks, for its authors (rag/report/)
    if args.serve or args.mcp:
        return modes.serve(args)  # the web page and the API, or MCP: the same core
    if args.chat:
        return terminal.chat(args)  # one question after another, each through the same steps
    if args.explain and not question:
        return modes.table()  # every tuned number and where it comes from (rag/tuned.py)
    if not question:
        terminal.fail('keine Frage angegeben – so fragen: python3 ask_rag.py "Wie lege ich eine Mailbox an?"', 2)
    run = core.Run(question, flags.settings_from(args))
    terminal.answer(itertools.chain(
        run.embed(),   # 1. embed the question with the index's model    rag/models/embed_query.py
        run.rank(),    # 2. rank: full text + cosine, fused, the floor    rag/search/ranking.py
        run.prompt(),  # 3. prompt: the sources as data, [1]…[n]         rag/answer/prompt.py
        run.ask(),     # 4. ask: a how-to's section verbatim, judged; else llama-server writes
        run.check(),   #    then the answer's checks and the audit line  rag/check/, rag/audit/
    ), args)           # 5. show: the answer as it streams, its sources and checks


if __name__ == "__main__":
    signal.signal(signal.SIGINT, terminal.interrupted)
    try:
        main()
    except BrokenPipeError:
        sys.exit(141)
