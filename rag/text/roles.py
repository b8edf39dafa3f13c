"""What a section's own heading says it is, in pages of the kind "Problem / Ursache / Lösung"
(knowledge-base and troubleshooting pages): the solution, the problem, or neither.

    role("Kein Login nach Änderung des Session Timeouts › Lösung")   -> 1
    role("Kein Login nach Änderung des Session Timeouts › Problem")  -> -1
    role("Mailbox anlegen")                                           -> 0
    solution_headings("Kein Login … › Problem")
    -> ["Kein Login … › Lösung", "Kein Login … › Lösungen", …]

Only the heading's last part counts ("Probleme mit dem WLAN" is a problem, "WLAN › Einrichten"
neither). A how-to question wants the solution: rag/answer/choose.py weighs role(), and
rag/search/solutions.py puts a problem's solution section in its place when the search found only
the problem.

Does not handle: a solution under another name ("So geht's", "Vorgehen"), a problem and its solution
in one section, English headings.
"""
import re

SOLUTIONS = ("Lösung", "Lösungen", "Lösungsansatz", "Lösungsansätze", "Mögliche Lösung",
             "Mögliche Lösungen", "Möglicher Lösungsansatz", "Mögliche Lösungsansätze",
             "Behebung", "Abhilfe", "Workaround", "Fehlerbehebung")
SOLUTION = re.compile(r"^(?:m(?:ö|oe)gliche[rn]?\s+)?(?:lösung|loesung|behebung|abhilfe|"
                      r"workaround|fehlerbehebung)", re.I)
PROBLEM = re.compile(r"^(?:problem|symptom|fehlermeldung|fehlerbild|ursache)", re.I)


def own(heading):
    """The last part of a heading path. Example: "A › B › Lösung" -> "Lösung" """
    return (heading or "").split(" › ")[-1].strip()


def role(heading):
    """1 for a solution's heading, -1 for a problem's, 0 else (see the module docstring)."""
    last = own(heading)
    return 1 if SOLUTION.match(last) else -1 if PROBLEM.match(last) else 0


def solution_headings(heading):
    """The heading paths a problem's solution would have next to it, in SOLUTIONS order; [] for a
    page's top heading (it has no siblings).
    Example: "A › Problem" -> ["A › Lösung", "A › Lösungen", …]"""
    parent, sep, _ = (heading or "").rpartition(" › ")
    return [f"{parent} › {name}" for name in SOLUTIONS] if sep else []
