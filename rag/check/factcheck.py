"""Fact check of an answer: which of its numbers, dates, amounts, durations, § references and
commands are not in the sources it cites.

    unsupported("Die Frist beträgt 14 Tage [1].", ["… mit einer Frist von 3 Monaten …"], [1])
    -> ["14 Tage"]
    unsupported("Die Frist beträgt drei Monate [1].", ["… mit einer Frist von 3 Monaten …"],
                [1])
    -> []

How: every claim in the answer (rag/check/claims.py) gets the keys it may be found under, folded the
way search folds words: "14 Tage", "zwei Wochen" and "14 Kalendertage" -> "dur:1209600" (seconds);
"3 Monate", "drei Monate", "ein Vierteljahr"… -> "mon:3"; "01.03.2025", "1. März 2025",
"2025-03-01" -> "date:2025-3-1"; "1.000" and "1000" -> "n:1000"; "1,5" and "1.5" -> "n:1.5"; "30 %"
and "30 Prozent" -> "u:%:30"; "§ 7 Abs. 2" -> "par:7:2"; "17 Uhr" and "17:00" -> "time:17:00".
Each looked-up source is read generously (every number in it counts, also inside dates, times,
tables and names); a claim is supported when one looked-up source has one of its keys. Names with
digits ("T14", "mail01", "10.20.10.1") must stand in a source as written; commands in backticks
verbatim, or word by word with neighbouring words side by side (see code_found()).

Looked up: the sources the answer cites ([n], valid numbers only); when it cites none, all
sources of the prompt. The question counts as a source too: repeating its numbers is no claim.

Does not handle: whether the number is said of the right thing ("3 Monate" is found even when
the source says it of another contract); number words above 99 ("zweihundert"); conversions
between storage units (KB/GB) or between months and days ("90 Tage" is not "3 Monate");
facts without a digit, number word, § or backticks (names, host names without digits).
"""
import re
from dataclasses import dataclass, field
from decimal import Decimal

# claims: support.py uses it
from rag.check.claims import (WORD, claims, find_dates,  # noqa: F401
                              find_number_words, find_numbers, find_paragraphs, find_times, squeeze)
from rag.check.quantities import (date_key, norm, number_value,  # noqa: F401 (grounding.py uses it)
                                  unit_of, word_value)
from rag.check.record import Check
from rag.text.german import fold

# + e/en/er/es/em; sources only ("2." ↔ "zweiter")
ORDINALS = {"erst": 1, "zweit": 2, "dritt": 3, "viert": 4, "fuenft": 5, "sechst": 6, "siebt": 7,
            "acht": 8, "neunt": 9, "zehnt": 10, "elft": 11, "zwoelft": 12}
CODE_EDGES = "`\"'„“”‚‘’()[]{},;:.!?"  # stripped from both ends of a command word
PLACEHOLDER = r"…|\.\.\.|<[^>]*>"  # in a command: stands for anything


# -- reading a source ------------------------------------------------------------------------------
@dataclass
class Evidence:
    """What one source offers: its keys; for commands its folded text, words, neighbouring word
    pairs and the single words it shows as `code` on their own (`cm`, `user/vorname.nachname`)."""
    keys: set
    text: str = ""
    words: set = field(default_factory=set)
    pairs: set = field(default_factory=set)
    spans: set = field(default_factory=set)


def source_keys(text):
    """Every key a source text offers, read generously: each finder on the whole text, every digit
    run as a number, every unit word, and working days also as days.

    Example: source_keys("Frist: 3 Monate") >= {"mon:3", "n:3"}
    """
    keys = set()
    for finder in (find_dates, find_times, find_paragraphs, find_numbers):
        for _, _, claim in finder(text):
            for alternative in claim.needs:
                keys.update(k for k in alternative if not k.startswith("unit:"))
    for _, _, claim in find_number_words(text):
        for alternative in claim.needs:
            keys.update(alternative)
    # digits inside names, dates, code: numbers too
    for match in re.finditer(r"\d+(?:[.,]\d+)*", text):
        for part in re.split(r"[^\d]+", match.group()):
            keys.add(f"n:{norm(Decimal(part))}")
        value = number_value(match.group())
        if value is not None:
            keys.add(f"n:{value}")
    for match in WORD.finditer(text):
        word = fold(match.group())
        if word_value(word) is not None:
            keys.add(f"n:{word_value(word)}")
        ordinal = re.fullmatch(r"(\w+?)(e|en|er|es|em)", word)
        if ordinal and ordinal.group(1) in ORDINALS:
            keys.add(f"n:{ORDINALS[ordinal.group(1)]}")
    for match in re.finditer(r"%|€|°C|[^\W\d_]+", text):
        unit = unit_of(match.group())
        if unit:
            keys.add(f"unit:{unit[0]}")
    for key in list(keys):
        if key.startswith("wd:"):  # "2 Arbeitstage" also supports the plainer "2 Tage"
            keys.add(f"dur:{norm(Decimal(key[3:]) * 86400)}")
        if key.startswith("date:") and key.count("-") == 2:
            year, month, day = key[5:].split("-")
            if year and day:  # "1. März 2025" also supports "1. März" and "März 2025"
                keys.update({date_key(None, month, day), date_key(year, month, None)})
        if key.startswith(("par:", "art:")) and key.count(":") == 2:
            keys.add(key.rsplit(":", 1)[0])
    return keys


def read_source(text):
    """Evidence of one source text (heading path and content)."""
    squeezed = squeeze(text)
    words = command_words(squeezed)
    spans = {squeeze(m.group(1)).strip(CODE_EDGES) for m in re.finditer(r"`([^`\n]+)`", text)}
    return Evidence(source_keys(text), squeezed, set(words), set(zip(words, words[1:])), spans)


def command_words(text):
    """Words as commands are compared.
    Example: command_words("Mit `cm` (create)") -> ["mit", "cm", "create"]"""
    return [w for w in (w.strip(CODE_EDGES) for w in squeeze(text).split()) if w]


def found(claim, evidence):
    """Is the claim in this source?"""
    if claim.kind == "code":
        return code_found(claim.literal, evidence)
    if claim.kind == "id":
        return any(re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", evidence.text)
                   for name in id_forms(claim.literal))
    return any(all(key in evidence.keys for key in alternative) for alternative in claim.needs)


def id_forms(name):
    """The name, and its part from the first to the last piece with a digit when that still has a
    letter: "2fa-pflicht" -> ["2fa-pflicht", "2fa"];
    "nl-druck-1og-01" -> ["nl-druck-1og-01", "1og-01"]."""
    pieces = re.split(r"([-./@])", name)
    digits = [i for i, piece in enumerate(pieces) if re.search(r"\d", piece)]
    core = "".join(pieces[digits[0]:digits[-1] + 1]) if digits else name
    return [name, core] if core != name and re.search(r"[^\W\d_]", core) else [name]


def code_found(command, evidence):
    """A command is in a source when it is there verbatim (placeholders "…" and <…> match
    anything between its parts), or when each of its words is a source word and each two neighbours
    stand side by side in the source, unless one of them is shown as `code` on its own: so `cm
    user/vorname.nachname` is found over a text that explains `cm` and `user/vorname.nachname`, `sam
    shared/zoll group:GG-Zoll lrs` is not found over `… group:GG-Zoll lrswipkte`."""
    pieces = re.split(PLACEHOLDER, command)
    if any(p.strip() for p in pieces):
        pattern = r"[^\n]*?".join(re.escape(p.strip()) for p in pieces)
        pattern = ((r"(?<!\w)" if pieces[0].strip() else "") + pattern
                   + (r"(?!\w)" if pieces[-1].strip() else ""))
        if re.search(pattern, evidence.text):
            return True
    segments = [command_words(part) for part in re.split(PLACEHOLDER, command)]
    if not any(segments):
        return False
    for words in segments:
        if not all(w in evidence.words for w in words):
            return False
        for pair in zip(words, words[1:]):
            if pair not in evidence.pairs and not evidence.spans.intersection(pair):
                return False
    return True


# -- the check -------------------------------------------------------------------------------------
def check(answer, sources, cited=(), question=""):
    """Every claim of the answer with whether a looked-up source has it: [(Claim, found)].

    sources: the source texts in prompt order (heading path and content); cited: the valid [n].
    """
    numbers = sorted({n for n in cited if 1 <= n <= len(sources)})
    looked = [sources[n - 1] for n in numbers] if numbers else list(sources)
    evidence = [read_source(text) for text in looked + ([question] if question else [])]
    # A command's words may be explained in different sources (`cm` in one, `user/…` in another).
    evidence.append(Evidence(set(), "", *(set().union(*(getattr(e, f) for e in evidence))
                                          for f in ("words", "pairs", "spans"))))
    return [(claim, any(found(claim, e) for e in evidence)) for claim in claims(answer)]


def unsupported(answer, sources, cited=(), question=""):
    """The claims of the answer that no looked-up source has, as written, in order, each once.

    Example: unsupported("14 Tage [1]", ["Kündigungsfrist: 3 Monate"], [1]) -> ["14 Tage"]
    """
    out, seen = [], set()
    for claim, ok in check(answer, sources, cited, question):
        if ok:
            continue
        identity = (claim.kind, claim.needs, claim.literal)
        if identity not in seen:
            seen.add(identity)
            out.append(claim.text)
    return out


def unsupported_in(answer, sources, cited=(), question=""):
    """unsupported() over retrieved sources (rag/search/ranking.py Source): each read as the prompt
    shows it, label (path › heading path) and content."""
    from rag.answer.prompt import source_label
    return unsupported(answer, [source_text(source_label(s), s.content) for s in sources], cited,
                       question)


def run(case):
    """The check (rag/check/record.py): the numbers, dates, §, commands of the answer that no cited
    source has, masked like the answer ("warn"); the cited sources are those rag/check/citations.py
    found valid."""
    cited = case.found["citations"].evidence["valid"]
    found = unsupported_in(case.text, case.sources, cited, case.question)
    missing = [case.masker.mask(claim) for claim in found]
    return Check("facts", "warn" if missing else "ok", missing)


def describe(missing):
    """The line for the reader, or "" when everything was found.

    Example: describe(["14 Tage", "§ 9"]) -> "Nicht in den Quellen: 14 Tage, § 9"
    """
    return "Nicht in den Quellen: " + ", ".join(missing) if missing else ""


def source_text(label, content):
    """One source as the check reads it: its label (path › heading path), a blank line, the
    text."""
    return f"{label}\n\n{content}" if label else content


# -- measuring it on labelled answers (evaluate.py --factcheck) ------------------------------------
def measure(cases):
    """Rates over labelled cases {"sources": [{"path", "heading", "content"}], "answer",
    "question"?, "wrong": [claims that must be flagged; [] = a correct answer]}.

    Returns {"wrong": n, "wrong_flagged": share, "correct": n, "correct_flagged": share, "misses":
    [...]}; a wrong answer counts as flagged when each of its wrong claims is among the unsupported
    ones.
    """
    from rag.check.citations import check_citations
    results = {"wrong": [], "correct": []}
    misses = []
    for case in cases:
        texts = [source_text(f"{s['path']} › {s['heading']}" if s.get("heading") else s["path"],
                             s["content"])
                 for s in case["sources"]]
        cited = check_citations(case["answer"], len(texts))["valid"]
        flagged = unsupported(case["answer"], texts, cited, case.get("question", ""))
        if case["wrong"]:
            missed = [w for w in case["wrong"] if not any(same(w, f) for f in flagged)]
            results["wrong"].append(not missed)
            if missed:
                misses.append({"id": case.get("id"), "kind": "nicht erkannt",
                               "answer": case["answer"], "expected": case["wrong"],
                               "flagged": flagged})
        else:
            results["correct"].append(bool(flagged))
            if flagged:
                misses.append({"id": case.get("id"), "kind": "fälschlich markiert",
                               "answer": case["answer"], "expected": [], "flagged": flagged})
    share = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    return {"wrong": len(results["wrong"]), "wrong_flagged": share(results["wrong"]),
            "correct": len(results["correct"]), "correct_flagged": share(results["correct"]),
            "misses": misses}


def same(gold, flagged):
    """Gold claim and flagged claim are the same text, give or take case and spaces."""
    return squeeze(gold) == squeeze(flagged)
