"""The injection guard, answer side: the answer is checked against what the prompt removed before it
is trusted.

While the answer streams (Screen.screen) and at the end (Screen.check): a link, e-mail address or
phone number of the answer that is in no kept source sentence is flagged, and so is a `command` that
stands only in a removed sentence (a command in no source at all is the fact check's,
rag/check/factcheck.py); a link or contact from a removed sentence, and a login-style link from
nowhere, never reaches the reader ("[Link aus einer markierten Quelle entfernt]"); an answer that
copies a removed sentence or the fixed prompt is replaced by NO_INFO.

    shield = guard.Shield(sources)          # rag/answer/guard.py: the prompt copies, the removed
    screen = Screen(shield)
    text = "".join(screen.screen(pieces))   # withheld links replaced on the fly
    text, report = screen.check(text)       # report: {"removed", "flagged", "withheld", "replaced"}

Does not handle: an answer that follows an instruction without copying it or its payload (it answers
in English, it leaves out a fact), homoglyphs; the prompt side's limits are in rag/answer/guard.py.
"""
import re

from rag import tuned
from rag.answer import prompt as answer
from rag.answer.guard import REMOVED, plain
from rag.check.record import Check

LINK_FROM_FLAGGED = "[Link aus einer markierten Quelle entfernt]"
LINK_FROM_NOWHERE = "[Link entfernt: steht in keiner Quelle]"
CONTACT_FROM_FLAGGED = "[Kontaktangabe aus einer markierten Quelle entfernt]"
BLOCK_REMOVED = "[Codeblock entfernt: nur anweisungsähnlicher Text]"  # for a code block left empty
EMPTY_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(?:[ \t]*\n)*[ \t]*\1[ \t]*$", re.M)  # ```sh ```
# "ˆ": the datamark of rag/answer/prompt.py (experiment RAG_SPOTLIGHT=datamark), never shown to the
# reader
MARK = "\u02c6"
COPY_WORDS = tuned.value("guard.COPY_WORDS")  # this many words in a row of a removed one: a copy
# … of the fixed prompt (system message, task): a leak
LEAK_WORDS = tuned.value("guard.LEAK_WORDS")
URL = re.compile(r"(?i)\b(?:https?://|www\.)[^\s<>\"'`)\]]+|\b(?:[a-z0-9-]+\.)+(?:example|com|de|"
                 r"net|org|io|info|eu|biz|app|online|site|local|intern|ru|cn|xyz|"
                 r"top)\b(?:/[^\s<>\"'`)\]]*)?")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
# +49 …, 0800 …
PHONE = re.compile(r"(?<![\w.+])(?:\+\d{1,3}|\(?0\d{1,5}\)?)[ /-]?\d[\d /-]{4,}\d(?![\w.]\d)")
COMMAND = re.compile(r"`([^`\n]+)`")
LOGIN_LIKE = re.compile(r"(?i)log-?in|sign-?in|anmeld|verif|bestaetig|bestätig|konto|account|"
                        r"passw|kennwort|reset|entsperr|unlock|credential|token|\.exe\b|\.ps1\b|"
                        r"\.sh\b|download|upload|register|aktivier|activate")


def words(text):
    """Example: words("Dazu, habe ICH") -> ["dazu", "habe", "ich"]"""
    return re.findall(r"\w+", plain(text).casefold())


def shares_words(text, other, n):
    """Do `text` and `other` share n consecutive words?"""
    a, b = words(text), words(other)
    grams = {tuple(a[i:i + n]) for i in range(len(a) - n + 1)}
    return any(tuple(b[i:i + n]) in grams for i in range(len(b) - n + 1))


def host(url):
    """Example: host("https://www.a.example/x?y") -> "a.example" """
    return re.sub(r"(?i)^(?:https?://)?(?:www\.)?", "", url).split("/")[0].rstrip(".,;:!?").lower()


def digits(text):
    return re.sub(r"\D", "", text)


class Screen:
    """One answer's guard, answer side: the stream screen and the final check against a Shield's
    sources."""

    def __init__(self, shield):
        self.shield, self.active = shield, shield.active
        self.withheld = []  # [{"kind", "value"}]: what screen() replaced, reported by check()

    # where a value of the answer stands: "kept" (an unflagged sentence), "removed" or None
    # (nowhere)
    def origin(self, kind, value):
        value, kept, untrusted = plain(value).casefold(), self.shield.kept, self.shield.untrusted
        if kind == "url":
            key = host(value)
            return "kept" if key in kept else ("removed" if key in untrusted else None)
        if kind == "phone":
            key = digits(value)
            runs = lambda text: {digits(m) for m in PHONE.findall(text)}  # noqa: E731
            return "kept" if key in runs(kept) else ("removed" if key in runs(untrusted) else None)
        squeezed = " ".join(value.split())
        return ("kept" if squeezed in " ".join(kept.split()) else
                "removed" if squeezed in " ".join(untrusted.split()) else None)

    def replacement(self, kind, value):
        """The text shown instead of a withheld value, or None to keep it."""
        if not self.active:
            return None
        where = self.origin(kind, value)
        if where == "removed":
            return LINK_FROM_FLAGGED if kind == "url" else CONTACT_FROM_FLAGGED
        if where is None and kind == "url" and LOGIN_LIKE.search(value):
            return LINK_FROM_NOWHERE
        return None

    def clean(self, text):
        """Withheld links and contacts of a finished piece of text replaced (see replacement())."""
        text = text.replace(MARK, " ")  # a datamark the model copied
        for kind, pattern in (("url", URL), ("email", EMAIL), ("phone", PHONE)):
            def swap(m, kind=kind):
                if kind == "url" and "@" in text[max(0, m.start() - 1):m.start()]:
                    return m.group(0)  # the domain of an e-mail address: the address decides
                new = self.replacement(kind, m.group(0).rstrip(".,;:!?"))
                if new is None:
                    return m.group(0)
                self.withheld.append({"kind": kind, "value": m.group(0).rstrip(".,;:!?")})
                return new + m.group(0)[len(m.group(0).rstrip(".,;:!?")):]
            text = pattern.sub(swap, text)
        return text

    def screen(self, pieces):
        """The answer's pieces with withheld values replaced; a word (or a number that may go on) is
        held back until it is complete, so a withheld link never reaches the reader."""
        held = ""
        for piece in pieces:
            held += piece
            cut = max(held.rfind(" "), held.rfind("\n")) + 1
            number = re.search(r"\+?\(?\d[\d ()/-]*$", held[:cut])
            if number:
                cut = number.start()
            if cut:
                yield self.clean(held[:cut])
                held = held[cut:]
        if held:
            yield self.clean(held)

    def check(self, text, prompts=None, mask=str):
        """(text to show, report) after the answer: flagged values, withheld ones, a replaced
        answer.

        report: {"removed": [{"source", "rule", "text"}], "flagged": [{"kind", "value", "where"}],
                 "withheld": [{"kind", "value"}],
                 "replaced": None | "kopiert entfernten Text" | …}
        mask: applied to every value of the answer in the report (the core passes
        rag/privacy/mask.py's masker).
        """
        prompts = prompts if prompts is not None else (answer.SYSTEM, answer.INSTRUCTIONS,
                                                       *answer.TASKS.values())
        neutral = self.shield.neutral  # per source: what the prompt copy removed
        report = {"removed": [{"source": n, **r} for n, copy in enumerate(neutral, start=1)
                              for r in copy.removed],
                  "flagged": [], "withheld": list(self.withheld), "replaced": None}
        if not self.active or text is None:
            return text, report
        for kind, pattern in (("url", URL), ("email", EMAIL), ("phone", PHONE),
                              ("command", COMMAND)):
            for m in pattern.finditer(text):
                value = (m.group(1) if kind == "command" else m.group(0)).rstrip(".,;:!?")
                if kind == "url" and "@" in text[max(0, m.start() - 1):m.start()]:
                    continue
                where = self.origin(kind, value)
                if where != "kept" and (kind != "command" or where == "removed"):
                    report["flagged"].append({"kind": kind, "value": value,
                                              "where": "nur in markiertem Text" if where
                                              else "in keiner Quelle"})
        if any(shares_words(text, r["text"], COPY_WORDS) for n in neutral for r in n.removed):
            report["replaced"] = "kopiert entfernten Text"
        elif any(shares_words(text, p, LEAK_WORDS) for p in prompts):
            report["replaced"] = "gibt die Anweisungen wieder"
        elif REMOVED in text:
            text = without_removed(text)
        if report["replaced"]:
            text = answer.NO_INFO
        # the model's values, masked like the answer (rag/privacy/mask.py)
        for item in report["flagged"] + report["withheld"]:
            item["value"] = mask(item["value"])
        return text, report


def without_removed(text):
    """The answer without REMOVED, line by line; a code block left empty: one BLOCK_REMOVED line.

    Example: "Laut Quelle [1]:\n1. Anmelden. " + REMOVED + "\n```text\n" + REMOVED + "\n```"
             -> "Laut Quelle [1]:\n1. Anmelden.\n" + BLOCK_REMOVED
    """
    lines = (" ".join(line.replace(REMOVED, " ").split()) if REMOVED in line else line.rstrip()
             for line in text.split("\n"))  # the lines it does not touch keep their indentation
    text = "\n".join(line for line in lines if line)
    return EMPTY_FENCE.sub(BLOCK_REMOVED, text) or answer.NO_INFO


def run(case):
    """The check (rag/check/record.py): case.screen's final check. "withdrawn": the answer copied a
    removed sentence or the fixed prompt; "changed": a removed sentence's mark taken out; "warn": a
    value flagged or withheld. Evidence: the report, its values masked like the answer."""
    text, report = case.screen.check(case.text, mask=case.masker.mask)
    if report["replaced"]:
        return Check("guard", "withdrawn", report, text=text)
    if text != case.text:
        return Check("guard", "changed", report, text=text)
    return Check("guard", "warn" if report["flagged"] or report["withheld"] else "ok", report)


def describe(report, colour=False):
    """The reader's lines for a guard report ("" when there is nothing to say); red with
    colour=True.

    Example: {"flagged": [{"kind": "url", "value": "https://x.example",
                           "where": "in keiner Quelle"}], …}
    -> "Prüfung: nicht in den Quellen: https://x.example (in keiner Quelle)"
    """
    if not report:
        return ""
    red = (lambda s: f"\033[31m{s}\033[0m") if colour else (lambda s: s)  # noqa: E731
    out = []
    if report.get("replaced"):
        out.append(red(f"Antwort ersetzt ({report['replaced']}): {answer.NO_INFO}"))
    # the value itself stays out of the terminal (it is in --json and the audit log)
    if report.get("withheld"):
        out.append(red(f"Zurückgehalten: {len(report['withheld'])} Link(s)/Kontaktangabe(n) aus "
                         f"markiertem Text oder aus keiner Quelle"))
    if report.get("flagged"):
        out.append(red("Prüfung: nicht in den Quellen: "
                         + ", ".join(f"{f['value']} ({f['where']})" for f in report["flagged"])))
    if report.get("removed"):
        out.append(f"Im Prompt entfernt: {len(report['removed'])} anweisungsähnliche Stelle(n) in "
                     + ", ".join(sorted({f"[{r['source']}]" for r in report["removed"]})))
    return "\n".join(out)
