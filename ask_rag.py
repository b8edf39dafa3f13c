#!/usr/bin/env python3
"""Step 2 of the post: embed the question, rank the chunks, build a context-only prompt, ask.

    python3 ask_rag.py "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"
    python3 ask_rag.py --retrieve-only --explain "Kuendigungsfrist Dienstleister"
    python3 ask_rag.py --json "Wie groß darf mein Postfach sein?"
    python3 ask_rag.py --expand "Mein Mailprogramm meldet, der Speicher ist fast voll – was tun?"
    python3 ask_rag.py --chat            # follow-ups: "Und wie lösche ich sie wieder?"
    python3 ask_rag.py --rate a-3f9c… -1 "Quota stimmt nicht"    # a vote on an answer, by its id
    python3 ask_rag.py --report          # what the wiki lacks, for its authors (--json: one object)

Steps, in the order of the post:
  1. embed    the question, with the same llama-embedding and model as the index
  2. rank     hybrid: German full-text search fused with exact cosine similarity (rag/search/ranking.py)
  3. prompt   the top-k chunks numbered [1]…[n], quoted as data, "Dazu habe ich keine Information."
  4. ask      a running llama-server, tokens printed as they arrive; then the sources and which
              of them the answer cites, and one line in the audit log

When the retrieval evidence is weak, the answer is "Dazu habe ich keine Information." and the
LLM is not called at all. The steps themselves live in rag/core.py, which every front door calls
(this terminal, the web page and API of --serve, the MCP server of --mcp); the flags are in
rag/doors/flags.py, and rag/doors/terminal.py turns the core's events into lines on the terminal.

--expand also searches what the answer model makes of the question (its search phrases, or its
choice among the first results); --chat asks one question after another and rewrites a follow-up
into a standalone question first (both in rag/search/expand.py).

Does not handle: several indexes at once, editing earlier questions of a --chat session.
"""
import signal
import sys

from rag import core
from rag.answer import audit
from rag.doors import flags
from rag.doors import ratings
from rag.doors import terminal
from rag.doors import users


def main():
    args = flags.parse_ask()  # every flag and its environment variable: rag/doors/flags.py
    if args.audit_show is not None:
        print(audit.show(args.audit or audit.default_path(args.db), args.audit_show))
        return
    if args.add_user or args.users or args.as_user or args.trust_proxy_header:
        if users_first(args):  # --add-user: done; else who asks is known now (rag/doors/users.py)
            return
    if args.rate:
        return ratings.rate(args, flags.settings_from(args))  # a vote on an answer (rag/audit/)
    if args.report:
        return ratings.report(args, flags.settings_from(args))  # for the authors (rag/report/)
    if args.serve or args.mcp:
        return serve(args)
    if args.chat:
        return terminal.chat(args)  # one question after another, each through the same four steps
    if not (args.question or "").strip():
        terminal.fail('keine Frage angegeben – so fragen: python3 ask_rag.py "Wie lege ich eine Mailbox an?"', 2)
    events = core.ask(args.question, flags.settings_from(args))
    # 1. embed the question   rag/models (the index's model), inside core.ask -> event "sources"
    # 2. rank the chunks      rag/search/ranking.py: full text + cosine, fused -> event "sources"
    # 3. build the prompt     rag/answer/prompt.py: [1]…[n], context only      -> event "prompt"
    # 4. ask and show         llama-server streams the answer, then sources and checks ("piece" … "done")
    terminal.answer(events, args)


def users_first(args):
    """--add-user (prints the key once, as the last line), else args.reader/args.auth; True when done."""
    try:
        if args.add_user:
            if not args.users:
                raise users.UsersError("--add-user braucht --users FILE (die Benutzerdatei)")
            key = users.add_user(args.users, args.add_user, [g.strip() for g in args.groups.split(",") if g.strip()])
            print(f"Benutzer {args.add_user} in {args.users} angelegt. Schlüssel (wird nur jetzt gezeigt):\n{key}")
            return True
        users.resolve(args)
    except users.UsersError as exc:
        terminal.fail(str(exc))
    return False


def serve(args):
    """The long-running doors: the same core, their own formats (rag/doors/web.py, rag/doors/mcp_server.py)."""
    from rag.doors import mcp_server
    from rag.doors import web
    settings = flags.settings_from(args)
    try:
        if args.serve:
            return web.serve(settings, args.host, args.port, args.serve_key, args.serve_slots, args.serve_queue,
                             args.auth, args.wiki)
        return mcp_server.serve(settings)
    except core.CoreError as exc:
        terminal.fail(str(exc))


if __name__ == "__main__":
    signal.signal(signal.SIGINT, terminal.interrupted)
    try:
        main()
    except BrokenPipeError:
        sys.exit(141)
