"""Which source supports which statement of an answer, and the verbatim evidence shown under it.

    check("1. Die Mailbox mit `cm` anlegen [4].", sources, vocab)
    -> {"statements": [{"text": "1. Die Mailbox mit `cm` anlegen", "cited": [4],
                        "supported_by": [2],
                        "verdict": "anderes Zitat"}],
        "evidence": [{"n": 2, "text": "3. Die Mailbox mit `cm` (create mailbox) anlegen."}]}

How: the answer is cut into statements (list items, else sentences); a "Laut Quelle [2]:" line
passes its citation to the list below it. A statement's words (folded, stems, no stopwords; the
[n] markers dropped) are looked up in every unit (sentence, list item, table row, code block;
rag/text/units.py) of every source, each read under its source's heading path, with the search's
German matching (compound parts, stems). A source supports the statement when one of its units holds
at least SUPPORT of the statement's words (its numbers, dates and § weigh FACT_WEIGHT on top, so
the unit that holds them wins), a `command` of the statement stands in that unit, and so does at
least SUBJECT_SHARE of the question's nouns that the statement repeats (a sentence about an e-mail
does not support "Ein Postfach darf 25 MB groß sein"). Like RAGFlow's insert_citations, the model's
own [n] is not trusted but checked against this, and with correct=True replaced: a statement cited
wrongly or not at all gets the [n] of its best supporting source (rewrite()). Verdicts:
    gestützt        a cited source supports it
    anderes Zitat   it cites [n], but only other sources support it
    ohne Zitat      it cites nothing, a source supports it
    nicht gestützt  no source supports it (like an unsupported number in the fact check)
    nur Verweis     it only says where the answer stands ("steht in § 7", rag/text/pointers.py):
                    never supported
The evidence is the best supporting unit of each statement, verbatim, in the order of the answer,
each unit once, at most EVIDENCE_MAX, leaving out units the answer copied word for word (unless
that leaves none); the model never writes it.

Does not handle: paraphrase without shared words (a statement in other words than the source is
"nicht gestützt"), negation ("nicht" is a stopword), support spread over two sources.
"""
import functools
import math
import re

from rag import tuned
from rag.check import factcheck
from rag.answer.prompt import NO_INFO
from rag.check.citations import CITATION
from rag.check.record import Check
from rag.text import german, pointers, sentences
from rag.text.units import units

SUPPORT = tuned.value("support.SUPPORT")  # share of a statement's words one unit must hold
MIN_WORDS = tuned.value("support.MIN_WORDS")  # statements with fewer content words are not checked
EVIDENCE_MAX = tuned.value("support.EVIDENCE_MAX")  # evidence lines under an answer
FACT_WEIGHT = tuned.value("support.FACT_WEIGHT")  # its numbers, dates, §, against its words (1.0)
# best_unit(): a unit holds at least this share of the question's nouns that a statement repeats
SUBJECT_SHARE = tuned.value("support.SUBJECT_SHARE")
# asked(): a capitalised word, not the first
NOUN = re.compile(r"(?<=[\s(„\"'])[A-ZÄÖÜ][\w-]*[a-zäöüß][\w-]*")
CODE = re.compile(r"`([^`\n]+)`")
STEP = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
MARKER = re.compile(r"\s*" + CITATION.pattern)  # a [n] with the space before it
# what is left of "[QUELLE [3]]" without its [n]
BARE = re.compile(r"[^\w]*(?:quellen?)?[^\w]*", re.I)
HEADER = re.compile(r"^\s*(?:laut|nach|gemäß|siehe)?\s*(?:quelle|"
                    r"quellen)\s*\[\d+(?:\s*[,;]\s*\d+)*\]\s*:?\s*$", re.I)


def run(case):
    """The check (rag/check/record.py): which source supports each statement, the evidence under it;
    the model's [n] corrected to the source that supports it ("changed"). Evidence: {"evidence",
    "statements"}, the statements masked, no evidence unit that the guard removed from the prompt.
    """
    found = check(case.text, case.sources, case.vocab, correct=case.by_model,
                  question=case.question)
    removed = case.screen.shield.removed  # never an injection as evidence
    evidence = [e for e in found["evidence"] if not removed(e["text"])]
    # the model's words, masked like the sources
    statements = [{**s, "text": case.masker.mask(s["text"])} for s in found["statements"]]
    record = {"evidence": evidence, "statements": statements}
    if case.by_model and found["answer"] != case.text:
        return Check("support", "changed", record, text=found["answer"])
    held = all(s["verdict"] == "gestützt" for s in statements)
    return Check("support", "ok" if held else "warn", record)


def statements(answer):
    """(text, cited numbers) per statement, in order, the [n] markers taken out of the text. A line
    "Laut Quelle [2]:" gives [2] to the lines after it that cite nothing, up to the next blank line.

    Example: "Laut Quelle [2]:\n1. SSH.\n2. `cm` [3]."
             -> [("Laut Quelle [2]:", [2]), ("1. SSH", [2]), ("2. `cm`", [3])]
             "Die Hotline ist 0421 555 3090. [3]" -> [("Die Hotline ist 0421 555 3090", [3])]
    """
    return [(s["text"], s["cited"]) for s in located(answer)]


def located(answer):
    """statements() with where each one stands: {"text", "cited", "line", "spans", "own"}; spans are
    (start, end) in answer line number `line`: the sentence and a citation that trails it ("…
    E-Mail. [3]"); own: its [n] stand in those spans (not inherited from a "Laut Quelle [n]:" line
    or its list item)."""
    out, inherited = [], []
    for line_no, line in enumerate(answer.split("\n")):
        if not line.strip():
            inherited = []  # a source line covers the lines below it up to the next blank line
            continue
        step = bool(STEP.match(line))
        own = numbers(line) if step else []  # an item's [n] covers each of its sentences
        pos, parts = 0, sentences.split(line.strip())
        for part in parts:
            start = line.find(part.strip(), pos)
            span = (start, start + len(part.strip()))
            pos = span[1]
            cited = numbers(part)
            if HEADER.match(part):
                inherited = cited
                out.append({"text": part.strip(), "cited": cited, "line": line_no, "spans": [span],
                            "own": True})
                continue
            text = CITATION.sub("", part).strip().rstrip(".").strip()
            # "… E-Mail. [3]" or "[QUELLE [3]]": a citation after the full stop belongs to the
            # sentence before it
            if not text or BARE.fullmatch(text):
                if cited and out and not out[-1]["cited"]:
                    out[-1] = {**out[-1], "cited": cited, "spans": out[-1]["spans"] + [span],
                               "own": True}
                continue
            # an item's [n] is the item's
            out.append({"text": text, "cited": cited or own or inherited, "line": line_no,
                        "spans": [span], "own": bool(cited) and not (step and len(parts) > 1)})
    return out


def numbers(text):
    """The [n] of a text, sorted. Example: numbers("A [2], B [1; 3]") -> [1, 2, 3]"""
    return sorted({int(x) for group in CITATION.findall(text)
                   for x in re.split(r"\s*[,;]\s*", group)})


def content_words(text):
    """The words that carry a statement: folded, once each; stopwords, [n] and list numbers dropped.

    Example: content_words("3. Die Mailbox mit `cm` anlegen [2].") -> ["mailbox", "cm", "anlegen"]
    """
    words = german.words(STEP.sub("", CITATION.sub("", text)))
    return [w for w in dict.fromkeys(words) if w not in german.STOPWORDS and len(w) > 1]


def covers(words, tokens, weight):
    """Weighted share of the words found in a unit's search tokens (a word matches by itself or its
    stem).

    Example: covers(["cm", "mailbox"], {"cm"}, {"cm": 2.0, "mailbox": 0.5}) -> 0.8
    """
    total = sum(weight.get(w, 1.0) for w in words)
    found = sum(weight.get(w, 1.0) for w in words if w in tokens or german.stem(w) in tokens)
    return found / total if total else 0.0


def commands_in(text):
    """The `commands` of a text, folded.
    Example: commands_in("Mit `cm` und `sq` [2]") -> ["cm", "sq"]"""
    return [" ".join(german.words(c)) for c in CODE.findall(text) if german.words(c)]


def unit_tokens(sources, vocab):
    """Per source: [(unit text, its search tokens with stems, its folded words)]. A unit is read
    with its source's heading path, as a reader reads it: "3 Monaten" under "Rahmenvertrag … ›
    § 7 Kündigung"."""
    out = []
    for source in sources:
        rows = []
        for unit in units(source.content):
            tokens = set(german.index_text(f"{source.heading or ''}\n{unit.text}", vocab).split())
            rows.append((unit.text, tokens | {german.stem(t) for t in tokens},
                         " ".join(german.words(unit.text))))
        out.append(rows)
    return out


def rarity(units):
    """IDF of each token over all units of the sources: a word every unit has says little about
    which one supports a statement.
    Example: 4 units, "mailbox" in 4, "cyradm" in 1 -> 0.22 and 0.92"""
    counts, total = {}, sum(len(rows) for rows in units) or 1
    for rows in units:
        for _, tokens, _ in rows:
            for t in tokens:
                counts[t] = counts.get(t, 0) + 1
    return {t: math.log(1 + total / c) for t, c in counts.items()}


def best_unit(statement, rows, weight, facts=(), subject=()):
    """(weighted share of the statement's words, unit text) of the unit that holds most of them.

    facts: the statement's numbers, dates, § and names with digits (facts_of()); they weigh as
    much as half its words together, so the unit that holds them wins over one that only shares the
    wording ("1 Monat zum Monatsende" in a table row, not "3 Monaten" in a sentence worded like the
    answer). subject: the question's nouns the statement repeats (asked()); a unit that holds fewer
    than SUBJECT_SHARE of them speaks of something else ("Ein Postfach darf 25 MB groß sein" is not
    supported by "Eine einzelne E-Mail darf … 25 MB").
    """
    words, commands = content_words(statement), commands_in(statement)
    weight = {w: weight.get(w, weight.get(german.stem(w), max(weight.values(), default=1.0)))
              for w in words}
    best = (0.0, "")
    for text, tokens, folded in rows:
        if any(c not in folded for c in commands):
            continue  # a statement with a command is supported only where that command stands
        if sum(term.found_in(tokens) for term in subject) < SUBJECT_SHARE * len(subject):
            continue
        share = covers(words, tokens, weight)
        if facts:
            evidence = evidence_of(text)
            share = (share + FACT_WEIGHT * all(factcheck.found(c, evidence)
                                               for c in facts)) / (1 + FACT_WEIGHT)
        if share > best[0]:
            best = (share, text)
    return best


def asked(question, statement, vocab):
    """The nouns of the question that the statement repeats (german.Term, matched loosely: stems,
    compound parts). German writes nouns with a capital letter; the question's first word is left
    out (any word starts a sentence with one). Verbs and adjectives are left to SUPPORT: a statement
    may say them otherwise.

    Example: asked("Wie groß darf mein Postfach sein?", "Ein Postfach darf 25 MB groß sein",
                   vocab)
             -> [Term("postfach", …)]
    """
    return repeated(nouns_of(question, vocab), statement, vocab)


def nouns_of(question, vocab):
    """The question's capitalised words (but its first) as german.Term, once per answer
    (asked())."""
    return german.query_terms(" ".join(NOUN.findall(question or "")), vocab)


def repeated(nouns, statement, vocab):
    """Those of `nouns` (nouns_of()) that the statement says too."""
    said = set(german.index_text(statement, vocab).split())
    return [t for t in nouns if not said.isdisjoint(t.exact)]


def check(answer, sources, vocab=frozenset(), correct=False, question=None):
    """Per statement: cited, supported_by, verdict, best (the best supporting source or None); and
    the evidence lines (see the module docstring). correct=True: also "answer", the answer with its
    citations corrected (rewrite() below), and "corrected" on each statement it changed. question: a
    source supports a statement only where it names the question's nouns that the statement repeats
    (asked())."""
    result = {"statements": [], "evidence": []}
    if not answer or answer.strip().startswith(NO_INFO):
        return {**result, "answer": answer} if correct else result
    units, nouns = unit_tokens(sources, vocab), nouns_of(question, vocab)
    weight = rarity(units)
    seen, found = set(), []
    for at in located(answer):
        text, cited = at["text"], at["cited"]
        if HEADER.match(text) or len(content_words(text)) < MIN_WORDS:
            continue
        facts = facts_of(text)  # once per statement, not once per source
        subject = repeated(nouns, text, vocab)
        scored = [(best_unit(text, rows, weight, facts, subject), n)
                  for n, rows in enumerate(units, start=1)]
        supported = [n for (share, _), n in scored if share >= SUPPORT]
        (share, unit), best = (max(scored, key=lambda t: (t[0][0], -t[1])) if scored
                               else ((0.0, ""), None))
        # it says where the answer stands, not what it is: never "gestützt"
        if pointers.is_pointer(text):
            verdict, supported, share = "nur Verweis", [], 0.0
        elif any(n in supported for n in cited):
            verdict, best = "gestützt", max(
                (t for t in scored if t[1] in cited and t[1] in supported),
                key=lambda t: t[0][0])[1]
            share, unit = scored[best - 1][0]
        elif supported:
            verdict = "anderes Zitat" if cited else "ohne Zitat"
        else:
            verdict = "nicht gestützt"
        result["statements"].append({"text": text, "cited": cited, "supported_by": supported,
                                     "verdict": verdict, "best": best if supported else None,
                                     "where": {"line": at["line"], "spans": at["spans"],
                                               "own": at["own"]}})
        if share >= SUPPORT and (best, unit) not in seen:
            seen.add((best, unit))
            found.append((share, {"n": best, "text": unit}, verbatim(unit, answer)))
    # evidence: what the answer did not copy word for word (a copied step is its own evidence), at
    # least one: of a verbatim answer its best step (list item), not a note or prose before it
    shown = [e for _, e, copied in found if not copied]
    if found and not shown:
        shown = [max(found, key=lambda t: (bool(STEP.match(t[1]["text"])), t[0]))[1]]
    result["evidence"] = shown[:EVIDENCE_MAX]
    if correct:
        result["answer"] = rewrite(answer, result["statements"])
    for statement in result["statements"]:
        del statement["where"]
    return result


def rewrite(answer, statements):
    """The answer with each statement's citation pointing at the source that supports it,
    RAGFlow-style: a statement that cites [n] which does not support it ("anderes Zitat") gets the
    [n] of its best supporting source instead, one that cites nothing ("ohne Zitat") gets it added.
    Only a statement's own [n] are changed (not one it inherits from a "Laut Quelle [n]:" line or
    its list item). Each changed statement gets "corrected": the numbers it cited before.

    Example: "Das Passwort steht im Tresor der IT [2]." with [1] supporting it
             -> "Das Passwort steht im Tresor der IT [1]." and the statement gets "corrected": [2]
    """
    lines = answer.split("\n")
    edits = {}  # line -> [(start, end, new text)]
    for s in statements:
        where = s["where"]
        if s["best"] is None or s["verdict"] not in ("anderes Zitat", "ohne Zitat"):
            continue
        if s["verdict"] == "anderes Zitat" and not where["own"]:
            continue  # inherited: the source line is right for the other lines it covers
        line, marker = lines[where["line"]], f"[{s['best']}]"
        # the first [n] becomes the supporting one, further ones go
        if s["verdict"] == "anderes Zitat":
            replacement = iter([marker])

            def swap(match):
                new = next(replacement, "")
                return match.group(0).replace(match.group(0).strip(), new) if new else ""
            for start, end in where["spans"]:
                edits.setdefault(where["line"], []).append((start, end,
                                                            MARKER.sub(swap, line[start:end])))
        else:
            start, end = where["spans"][-1]
            part = line[start:end]
            # "… im Tresor der IT." -> "… im Tresor der IT [1]."
            cut = len(part.rstrip().rstrip(".!?"))
            edits.setdefault(where["line"], []).append((start, end, part[:cut] + f" {marker}"
                                                        + part[cut:]))
        s["corrected"] = s["cited"]
    for n, changes in edits.items():
        line = lines[n]
        for start, end, text in sorted(changes, reverse=True):
            line = line[:start] + text + line[end:]
        lines[n] = line
    return "\n".join(lines)


def facts_of(text):
    """The numbers, dates, amounts, § and names with digits of a text (factcheck.claims without
    commands, which best_unit() requires verbatim anyway)."""
    return [c for c in factcheck.claims(text) if c.kind != "code"]


@functools.lru_cache(maxsize=4096)
def evidence_of(unit):
    """factcheck's reading of one unit's text; the same units are read for every statement of an
    answer."""
    return factcheck.read_source(unit)


def verbatim(unit, answer):
    """Does the answer contain the unit word for word (folded, [n] and list numbers aside)?"""
    return (" ".join(german.words(STEP.sub("", unit)))
            in " ".join(german.words(CITATION.sub("", answer))))


def describe(result):
    """The reader's lines: evidence first, then every statement whose citation does not hold.

    Example:
    -> ["Beleg [2]: „3. Die Mailbox mit `cm` (create mailbox) anlegen.“",
        "Zitat [4] passt nicht zu „1. Die Mailbox mit `cm` anlegen“ – gestützt von [2]"]
    """
    lines = [f"Beleg [{e['n']}]: „{' '.join(e['text'].split())}“" for e in result["evidence"]]
    for s in result["statements"]:
        cited = ", ".join(f"[{n}]" for n in s["cited"])
        by = ", ".join(f"[{n}]" for n in s["supported_by"])
        fixed = (f"; in der Antwort durch [{s['best']}] ersetzt"
                 if s.get("corrected") is not None else "")
        if s["verdict"] == "anderes Zitat":
            lines.append(f"Zitat {cited} passt nicht zu „{s['text']}“ – gestützt "
                         f"von {by}{fixed}")
        elif s["verdict"] == "ohne Zitat":
            lines.append(f"Ohne Zitat: „{s['text']}“ – gestützt von {by}"
                         + (f"; in der Antwort [{s['best']}] ergänzt" if fixed else ""))
        elif s["verdict"] == "nur Verweis":
            lines.append(f"Nur ein Verweis: „{s['text']}“ – sagt, wo die Antwort steht, "
                         f"nicht was sie ist")
        elif s["verdict"] == "nicht gestützt":
            lines.append(f"Nicht gestützt: „{s['text']}“ – steht so in keiner Quelle")
    return lines
