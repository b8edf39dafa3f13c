"""The report as Markdown, for `ask_rag.py --report` (the JSON is rag/report/build.py's).

    markdown(report)
    -> "# Bericht für die Autorinnen und Autoren des Wikis\\n\\nZeitraum: …\\n\\n## …"

Each line names the page to fix, then what is wrong with it, then its owners.

Does not handle: links into a wiki's web view (the paths are the index's, relative to the wiki).
"""
from rag.report import gaps
from rag.report import hard
from rag.report.owners import describe

TITLE = "# Bericht für die Autorinnen und Autoren des Wikis"


def period(report):
    """Example: {"days": 30, "since": "2026-04-01T…"}
    -> "die letzten 30 Tage (seit 2026-04-01)" """
    if report["days"] is None:
        return "das ganze Audit-Log"
    return f"die letzten {report['days']} Tage (seit {report['since'][:10]})"


def quoted(texts):
    """Example: ["A?", "B?"] -> "„A?“, „B?“" """
    return ", ".join(f"„{t}“" for t in texts)


def where(item):
    """Example: {"path": "a.md", "heading": "A › B"} -> "a.md › A › B" """
    return f"{item['path']} › {item['heading']}" if item.get("heading") else item["path"]


def gap_lines(report):
    lines = ["## Wissenslücken", "",
             f"Fragen ohne Antwort („Dazu habe ich keine Information.“), nach Thema gruppiert; "
             f"gezeigt nur Gruppen, in denen mindestens {gaps.MIN_ASKERS} verschiedene Personen "
             f"gefragt haben.", ""]
    for n, group in enumerate(report["gaps"], start=1):
        lines.append(f"{n}. {group['questions']} Fragen von {group['askers']} Personen: "
                     f"{quoted(group['examples'])}")
        for page in group["pages"]:
            lines.append(f"   - {page} – Owner: {describe(group['owners'].get(page, []))}")
        if group["folders"]:
            lines.append(f"   - Ordner: {', '.join(group['folders'])}")
    if not report["gaps"]:
        lines.append("Keine Gruppe.")
    if report["more_gaps"]:
        lines += ["", f"{report['more_gaps']} kleinere Gruppe(n) nicht gezeigt (nur die "
                      f"{gaps.MAX_GROUPS} größten)."]
    if report["withheld"]:
        lines += ["", f"{report['withheld']} weitere Gruppe(n) mit weniger als {gaps.MIN_ASKERS} "
                      f"Fragenden nicht gezeigt."]
    return lines


def downvote_lines(report):
    lines = ["## Abgelehnte Antworten", "",
             f"Mit 👎 bewertet: {len(report['downvoted'])}, mit 👍: {report['upvotes']}.", ""]
    for vote in report["downvoted"]:
        comment = f"„{vote['comment']}“" if vote["comment"] else "ohne Kommentar"
        lines.append(f"- Antwort {vote['id']} ({vote['time'][:10]}): {comment}")
        for item in vote["cited"]:
            owners = describe(vote["owners"].get(item["path"], []))
            lines.append(f"  - {where(item)} – Owner: {owners}")
    return lines


def hard_lines(report):
    lines = ["## Schwer zu finden", "",
             f"Abschnitte, die ihre eigene Frage (Seitentitel und Überschrift) nicht unter den "
             f"ersten {hard.TOP} Treffern findet – eine bessere Überschrift oder die Wörter "
             f"der Leser helfen; geprüft: {report['sections']} Abschnitte.", ""]
    for item in report["hard_to_find"]:
        lines.append(f"- {where(item)} – Frage: {quoted(item['questions'])} – Owner: "
                     f"{describe(item['owners'])}")
    if not report["hard_to_find"]:
        lines.append("Keiner.")
    return lines


def markdown(report):
    head = [TITLE, "", f"Zeitraum: {period(report)} · {report['answers']} Antworten, davon "
                       f"{report['refused']} ohne Antwort aus dem Wiki.", ""]
    parts = head + gap_lines(report) + [""] + downvote_lines(report) + [""] + hard_lines(report)
    return "\n".join(parts) + "\n"
