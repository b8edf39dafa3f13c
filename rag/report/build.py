"""The report for the wiki's authors, as one JSON object: what was not found, what was voted down,
what is hard to find; each line with the page to fix and its owners.

    build(settings, wiki="wiki", days=30, reader=Reader("jana", ("it",)))
    -> {"since": "2026-…", "days": 30, "answers": 120, "refused": 14,
        "gaps": [{"questions": 4, "askers": 3, "examples": […], "pages": […], "folders": […],
                  "owners": {"netzwerk/vpn-windows.md": ["team-netz"]}}],
        "withheld": 1, "more_gaps": 0,
        "downvoted": [{"id": "a-…", "time": "…", "comment": "…",
                       "cited": [{"path", "heading"}], "owners": {…}}], "upvotes": 7,
        "hard_to_find": [{"path", "heading", "questions", "owners"}], "sections": 180}

The parts: rag/report/gaps.py (refused questions by topic), the votes of rag/audit/feedback.py,
rag/report/hard.py; owners from rag/report/owners.py. The period: `days` back from now (None: the
whole audit log and every vote; the doors pass --audit-days, the retention, unless --since says
otherwise).

Rights: a reader sees a question group only when they may read its nearest page (the pages they
may not read are left out of it), a vote only when they may read every page it cited;
hard_to_find runs on the reader's own view of the index. Privacy: rag/report/gaps.py (at least
3 askers, counts only); nobody is named; examples and comments are masked again.

Does not handle: the audit logs of several servers (one log: beside the index, or --audit).
"""
import contextlib
import dataclasses
import json

from rag import core
from rag.audit import log as audit
from rag.audit import feedback
from rag.report import gaps as gap_report
from rag.report import hard
from rag.report.owners import Owners
from rag.store import access


def audit_lines(path, since):
    """(the refusals since that ISO time (None: all), how many answers the period holds). A line is
    parsed only when it can be a refusal; broken lines are skipped.

    Example: -> ([{"question": "VPN am Mac?", "answer": "Dazu habe ich keine Information."}], 120)
    """
    found, answers = [], 0
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        return [], 0
    with f:
        for line in f:
            if not line.strip() or (since and time_of(line) < since):
                continue
            answers += 1
            if gap_report.NO_INFO in line or gap_report.NO_INFO_SHA in line:
                entry = feedback.parsed(line)
                if entry is not None and gap_report.refused(entry):
                    found.append(entry)
    return found, answers


def time_of(line):
    """The "time" of an audit line, without parsing it.

    Example: '{"id": "a-1", "time": "2026-05-01T08:00:00+00:00"}' -> "2026-05-01T08:00:00+00:00"
    """
    at = line.find('"time": "')
    return line[at + 9:line.find('"', at + 9)] if at >= 0 else ""


def readable(index, reader):
    """may(path): may this reader read the page? Only pages in the index, every one for a reader
    of everything."""
    groups = access.groups_of(reader)
    if groups is None:
        return lambda path: True
    pages, rules = set(index.pages()), index.access()

    def may(path):
        return path in pages and (path not in rules or bool(set(rules[path]) & set(groups)))
    return may


class OnDemand:
    """core.embed that first enters `warm(settings)` (a warm embedding server, rag/doors/common.py
    warm_embedder) at the first call with texts: a report that finds everything kept starts none.
    Example: with OnDemand(settings, warm) as embed: embed(["Kantine?"], settings, meta, "hybrid",
    {}) -> [[0.01, …]], the server started first."""

    def __init__(self, settings, warm=None):
        self.settings, self.warm, self.stack = settings, warm, contextlib.ExitStack()
        self.started = warm is None

    def __call__(self, texts, settings, meta, mode, timings):
        if texts and not self.started:
            self.stack.enter_context(self.warm(self.settings))  # it points self.settings at it
            self.started = True
        return core.embed(texts, self.settings, meta, mode, timings)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stack.close()


def build(settings, wiki, days=None, reader=None, warm=None):
    """The report as one JSON object (module docstring); core.CoreError without an index. warm: a
    context manager for settings that warms the embedder (started only when something is new)."""
    with OnDemand(dataclasses.replace(settings), warm) as embed:
        return parts(settings, wiki, days, reader, embed)


def parts(settings, wiki, days, reader, embed):
    since = feedback.days_ago(days)
    path = settings.audit or audit.default_path(settings.db)
    refusals, answers = audit_lines(path, since) if settings.audit != "" else ([], 0)
    index, meta, _ = core.open_index(dataclasses.replace(settings, reader=None))  # all pages
    try:
        refused = gap_report.refused_questions(refusals)
        shown, withheld, more = gap_report.gaps(refused, settings, meta, index, embed)
        may = readable(index, reader)
    finally:
        index.close()
    mine = dataclasses.replace(settings, reader=reader)
    own = core.open_index(mine)[0]  # the reader's view: hidden pages neither listed nor ranked
    try:
        missed, sections = hard.hard_to_find(own, mine, meta, embed=embed)
    finally:
        own.close()
    owners = Owners(wiki)
    voted = [v for v in feedback.votes(settings.db, since)
             if all(may(c["path"]) for c in v["cited"])]
    return {"since": since, "days": days, "answers": answers, "refused": len(refusals),
            "gaps": [group(g, may, owners) for g in shown if not g["pages"] or may(g["pages"][0])],
            "withheld": withheld, "more_gaps": more,
            "downvoted": [downvote(v, owners, settings) for v in voted if v["vote"] < 0],
            "upvotes": sum(v["vote"] > 0 for v in voted),
            "hard_to_find": [dict(h, owners=list(owners(h["path"]))) for h in missed],
            "sections": sections}


def group(found, may, owners):
    """A question group as a reader sees it: only the pages they may read, their folders, owners."""
    pages = [p for p in found["pages"] if may(p)]
    return dict(found, pages=pages, folders=gap_report.folders_of(pages),
                owners={p: list(owners(p)) for p in pages})


def downvote(vote, owners, settings):
    """One down-voted answer: id, time, comment (masked again), the cited pages and their owners."""
    return {"id": vote["id"], "time": vote["time"],
            "comment": gap_report.masked(vote["comment"], settings), "cited": vote["cited"],
            "owners": {c["path"]: list(owners(c["path"])) for c in vote["cited"]}}


def dumps(report):
    return json.dumps(report, ensure_ascii=False, indent=1)
