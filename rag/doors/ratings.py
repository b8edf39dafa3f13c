"""Votes and the authors' report at every door: the terminal's --rate and --report, the web's
POST /v1/feedback and /bericht, MCP's rate_answer. The work is in rag/audit/feedback.py and
rag/report/; here only the formats.

    python3 ask_rag.py --rate a-3f9c0e5d7b1a2c4e -1 "Die Quota ist seit März 5 GB"
    -> Bewertung gespeichert: a-3f9c0e5d7b1a2c4e 👎 (zitiert: mail/quota.md › Mail › Quota)
    python3 ask_rag.py --report --since 30d          # Markdown; --json: one JSON object

    vote_reply(settings, {"id": "a-…", "vote": -1, "comment": "…"})
    -> (200, {"id": "a-…", "vote": -1, "comment": "…", "stored": true})
    report_reply(settings, "wiki", "/api/bericht?since=30d") -> (200, {"gaps": […], …})

Who votes: the door's reader (--as, a --serve user); the answer's audit line must name the same
asker. The comment is masked as the audit log masks a question (--pii). --audit-days drops older
votes too.

Does not handle: votes on answers given with --no-audit (no line to find), a report per folder.
"""
import json
import re
import sys
from urllib.parse import parse_qs, urlsplit

from rag import core
from rag import store
from rag.audit import log as audit
from rag.audit import feedback
from rag.doors import common as doors
from rag.doors import openai_api
from rag.privacy import mask as privacy
from rag.report import build
from rag.report.markdown import markdown

SINCE = re.compile(r"(\d{1,5})\s*d?")  # --since 30d (or 30): days


def add_flags(parser):
    """--rate, --report, --since (ask_rag.py)."""
    parser.add_argument("--rate", nargs="+", metavar=("ID", "+1|-1 [KOMMENTAR]"),
                        help="eine Antwort bewerten: ihre Id (steht unter der Antwort), +1 oder "
                             "-1, optional ein Kommentar in Anführungszeichen")
    parser.add_argument("--report", action="store_true",
                        help="Bericht für die Autorinnen und Autoren: Wissenslücken, abgelehnte "
                             "Antworten, schwer zu findende Abschnitte (Markdown; mit --json ein "
                             "JSON-Objekt)")
    parser.add_argument("--since", metavar="TAGE",
                        help="mit --report: nur die letzten TAGE, z. B. 30d (Standard: "
                             "--audit-days, sonst alles)")


def since_days(text, default):
    """Example: since_days("30d", None) -> 30; since_days(None, 90) -> 90; ("alle", 90) -> None"""
    if text is None or not str(text).strip():
        return default
    if str(text).strip().lower() in ("alle", "all"):
        return None
    found = SINCE.fullmatch(str(text).strip().lower())
    if not found or int(found.group(1)) < 1:
        raise feedback.FeedbackError(f"Zeitraum {text!r} gibt es nicht – Tage angeben, z. B. "
                                     f"30d, oder alle")
    return int(found.group(1))


# -- voting -----------------------------------------------------------------------------------
def vote(settings, answer_id, value, comment=""):
    """Store one vote of settings.reader on the answer `answer_id`; returns the stored row
    (FeedbackError when it cannot be stored)."""
    if settings.audit == "":
        raise feedback.FeedbackError("ohne Audit-Log (--no-audit) gibt es keine Antwort, die sich "
                                     "bewerten lässt – ohne --no-audit fragen", 404)
    value, comment = feedback.check(value, comment)
    comment = privacy.Masker(active=settings.pii == "mask", kinds=settings.pii_kinds,
                             keep=settings.pii_keep).mask(comment)
    path = settings.audit or audit.default_path(settings.db)
    known = isinstance(answer_id, str) and len(answer_id) < 100
    entry = feedback.find(path, answer_id) if known else None
    voter = audit.pseudonym(getattr(settings.reader, "name", None), settings.audit_secret)
    return feedback.rate(settings.db, entry, value, comment, voter, settings.audit_days)


def vote_reply(settings, body):
    """POST /v1/feedback: (HTTP status, JSON body); errors in the API's error format."""
    try:
        row = vote(settings, body.get("id"), body.get("vote"), body.get("comment"))
    except feedback.FeedbackError as exc:
        kind = {404: "not_found_error", 403: "permission_error"}.get(exc.status,
                                                                    "invalid_request_error")
        return exc.status, openai_api.error(str(exc), kind)
    except (store.StoreError, *store.database_errors()) as exc:
        return 500, openai_api.error(f"Bewertung nicht gespeichert: {exc}", "server_error")
    return 200, {"id": row["id"], "vote": row["vote"], "comment": row["comment"], "stored": True}


def id_line(answer_id):
    """The terminal's last line after an answer.

    Example: "a-1" -> 'Antwort-Id: a-1 · bewerten: python3 ask_rag.py --rate a-1 +1 (oder -1 …)'
    """
    return (f"Antwort-Id: {answer_id} · bewerten: python3 ask_rag.py --rate {answer_id} +1 "
            f'(oder -1 "Kommentar")')


def rate(args, settings):
    """ask_rag.py --rate ID +1|-1 [KOMMENTAR]: one line, or one German error line."""
    if not 2 <= len(args.rate) <= 3:
        print('Fehler: --rate braucht ID und +1 oder -1, optional einen Kommentar: '
              '--rate a-… -1 "Die Quota stimmt nicht"', file=sys.stderr)
        raise SystemExit(2)
    try:
        row = vote(settings, *args.rate)
    except (feedback.FeedbackError, store.StoreError) as exc:
        raise SystemExit(f"Fehler: {exc}")
    if args.json:
        return print(json.dumps(row, ensure_ascii=False))
    cited = ", ".join(f"{c['path']} › {c['heading']}" if c["heading"] else c["path"]
                      for c in row["cited"])
    print(f"Bewertung gespeichert: {row['id']} {'👍' if row['vote'] > 0 else '👎'}"
          + (f" (zitiert: {cited})" if cited else ""))


# -- the report -------------------------------------------------------------------------------
def report(args, settings):
    """ask_rag.py --report [--json] [--since 30d]: Markdown or one JSON object on stdout. What is
    new to embed goes to one warm llama-server --embeddings, as --serve does (rag/doors/common.py
    warm_embedder), started only then: one llama-embedding process per batch took ~0.14 s a
    question (bench/feedback.py --embedder real)."""
    try:
        days = since_days(args.since, settings.audit_days)
        found = build.build(settings, args.wiki, days, settings.reader, doors.warm_embedder)
    except (feedback.FeedbackError, core.CoreError, store.StoreError) as exc:
        raise SystemExit(f"Fehler: {exc}")
    sys.stdout.write(build.dumps(found) + "\n" if args.json else markdown(found))


def report_reply(settings, wiki, path):
    """GET /api/bericht?since=30d: (HTTP status, the report for the request's reader or
    {"error": …})."""
    try:
        since = parse_qs(urlsplit(path).query).get("since") or [None]
        days = since_days(since[0], settings.audit_days)
        return 200, build.build(settings, wiki, days, settings.reader)
    except (feedback.FeedbackError, core.CoreError, store.StoreError) as exc:
        return 400, {"error": str(exc)}
