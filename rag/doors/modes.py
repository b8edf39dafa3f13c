"""ask_rag.py's modes besides one question, one call each: an audit entry, a vote, the authors'
report, the long-running doors, the table of tuned numbers. (The users file is rag/doors/asker.py
first(), --chat is rag/doors/terminal.py chat().)

    audit(args)   # --audit-show N: one entry of the audit log, readable (rag/doors/audit_show.py)
    rate(args)    # --rate ID VOTE [COMMENT]: a vote on an answer (rag/doors/ratings.py)
    report(args)  # --report: what the wiki lacks, for its authors (rag/report/)
    serve(args)   # --serve: the web page and the API (rag/doors/web.py); --mcp: MCP over stdio
    table()       # --explain without a question: every tuned number, where it comes from

Does not handle: one question (ask_rag.py main runs the post's steps itself).
"""
import sys

from rag import core
from rag.audit import log
from rag.doors import audit_show, explain, flags, ratings, terminal


def audit(args):
    """--audit-show N: entry N of the audit log (1 the oldest, -1 the newest)."""
    print(audit_show.show(args.audit or log.default_path(args.db), args.audit_show))


def rate(args):
    """--rate ID VOTE [COMMENT]: one vote on an answer, kept beside the index (rag/audit/)."""
    return ratings.rate(args, flags.settings_from(args))


def report(args):
    """--report: gaps, down-voted answers, sections hard to find (rag/report/)."""
    return ratings.report(args, flags.settings_from(args))


def serve(args):
    """The long-running doors: the same core, their own formats (rag/doors/web.py,
    rag/doors/mcp_server.py)."""
    from rag.doors import mcp_server
    from rag.doors import web
    settings = flags.settings_from(args)
    try:
        if args.serve:
            return web.serve(settings, args.host, args.port, args.serve_key, args.serve_slots,
                             args.serve_queue, args.auth, args.wiki)
        return mcp_server.serve(settings)
    except core.CoreError as exc:
        terminal.fail(str(exc))


def table():
    """--explain without a question: the table of rag/tuned.py."""
    explain.table(sys.stdout)
