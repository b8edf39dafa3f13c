"""ask_rag.py --explain: the stages of one question in order, with what each decided; without a
question, the table of tuned numbers (rag/tuned.py).

    1. gefunden   Suchtext: mailbox anleg …
                  Modus: hybrid; Suchstufe: strict; Abdeckung 100%; bester Kosinus 0.919
                  Quelle [2] gefunden über die Frage: „Wie lege ich ein Postfach an?“
    2. erweitert  [2] Chunks 3, 4 (der ganze Abschnitt, seine Schritte darunter)
    3. gewählt    Rang Kosinus Überschrift Form Substanz Einleitung Verweis Rolle = Punkte
                  → [2] 0.50 0.00 0.67 1 1.00 0 0 0 = 1.0735
    4. beurteilt  am Abschnitt [2]: P(ja) 0.99 ≥ 0.55 (rag/answer/judge.py)
    5. gefragt    Abschnitt [2] wörtlich, nicht vom Modell geschrieben
    6. geprüft    grounding ok · echo ok · support ok · citations ok · facts ok · guard ok ·
                  …

Stages 1 to 3 come before the answer (the core's "sources" and "chosen" events), 4 to 6 after it
(its Answer). Each line reads what the core decided; nothing is worked out again here. A fact
question has no stage 3 (the model writes its answer), and only a how-to question's sources are
widened.

Does not handle: the prompt itself (--show-prompt), the context (--show-context).
"""
from rag import tuned
from rag.answer import choose
from rag.privacy import mask as privacy

SIGNAL_NAMES = {"rank": "Rang", "cosine": "Kosinus", "heading": "Überschrift", "shape": "Form",
                "substance": "Substanz", "intro": "Einleitung", "pointer": "Verweis",
                "role": "Rolle"}  # the header of stage 3, one per choose.Signals
PAD = " " * 14  # the lines under a stage's first one


def found(result, out):
    """1. gefunden: the search text, mode, stage, coverage, cosine, what the floor said, and which
    question written at index time found a source (rag/search/questions.py) (a Retrieval)."""
    cosine = "-" if result.best_cosine is None else f"{result.best_cosine:.3f}"
    print(f"1. gefunden   Suchtext: {result.query_text}", file=out)
    print(f"{PAD}Modus: {result.mode}; Suchstufe: {result.strategy or 'keine'}; "
          f"Abdeckung {result.coverage:.0%}; bester Kosinus {cosine}", file=out)
    if result.under:
        print(f"{PAD}Ordner: nur {result.under}", file=out)
    if result.scan:  # which way rag/store/vectors.py scanned the vectors
        many = (result.scan_processes or 1) > 1
        processes = f", {result.scan_processes} Prozesse" if many else ""
        how = (f"HNSW: {result.scan_candidates} Kandidaten vorausgewählt, exakt nachgerechnet"
               if result.scan_candidates else "exakt, alle Vektoren")
        print(f"{PAD}Vektorsuche: {result.scan}{processes} ({how})", file=out)
    if result.weak:
        print(f"{PAD}Belege zu schwach: {result.weak_reason}", file=out)
    if result.query_prefix is not None:
        print(f'{PAD}Präfix: "{result.query_prefix}" (vor der Frage, nur fürs Embedding)',
              file=out)
    for kept in result.pii_kept:  # business contacts and RAG_PII_KEEP values (rag/privacy/mask.py)
        print(PAD + privacy.describe_kept(kept), file=out)
    for n, source in enumerate(result.sources, start=1):  # questions of build_index.py --questions
        question = result.found_by.get(source.doc_id)
        if question:
            print(f"{PAD}Quelle [{n}] gefunden über die Frage: „{question}“", file=out)


def widened(result, out):
    """2. erweitert: the sources that are more than the chunk found (rag/search/ranking.py
    whole_sections, rag/search/solutions.py, rag/search/subsections.py); only a how-to question's
    are widened."""
    wide = [f"[{n}] Chunks {', '.join(map(str, s.chunks))}"
            for n, s in enumerate(result.sources, start=1) if len(s.chunks) > 1]
    print("2. erweitert  " + (" · ".join(wide) + " (der ganze Abschnitt, seine Schritte darunter)"
                             if wide else "nichts (jede Quelle ein Chunk)"), file=out)


def chosen(choice, out):
    """3. gewählt: the signals the one chooser weighs per source, its first finalist marked
    "→"."""
    first = choice.order[0] if choice.order else None
    header = " ".join(SIGNAL_NAMES[f] for f in choose.Signals._fields)
    print(f"3. gewählt    {header} = Punkte", file=out)
    for n, row in enumerate(choice.rows):
        values = " ".join(f"{x:.2f}" if isinstance(x, float) else str(x) for x in row)
        mark = "→" if n == first else " "
        print(f"{PAD}{mark} [{n + 1}] {values} = {choose.score(row):.4f}", file=out)


def after(done, out):
    """4. beurteilt, 5. gefragt, 6. geprüft: what the answer's stages decided (a core Answer)."""
    if done.choice is None:
        print("3. gewählt    nichts (keine How-to-Frage, oder keine Quelle)", file=out)
    print("4. beurteilt  " + judged(done), file=out)
    print("5. gefragt    " + asked(done), file=out)
    verdicts = " · ".join(f"{c.name} {c.verdict}" for c in done.checks)
    print("6. geprüft    " + (verdicts or "nichts (keine Antwort des Modells)"), file=out)


def judged(done):
    """What the model judged before the answer.

    Example: {"p_yes": 0.99, "threshold": 0.55, "judged": [{"n": 2, …}], …}
             -> "am Abschnitt [2]: P(ja) 0.99 ≥ 0.55 (rag/answer/judge.py)"
    """
    a = done.answerable
    if done.text is None:
        return "nicht gefragt (--retrieve-only)"
    if not done.llm_called:
        return "nicht gefragt (zu wenig Belege im Wiki)"
    if not a:
        return "nicht gefragt (für dieses Antwortmodell ist keine Schwelle gemessen)"
    p = "–" if a["p_yes"] is None else f"{a['p_yes']:.2f}"
    where = f"am Abschnitt [{a['judged'][0]['n']}]" if a.get("judged") else "an den Quellen"
    module = "rag/answer/judge.py" if a.get("judged") else "rag/answer/answerable.py"
    return f"{where}: P(ja) {p} {'<' if a['refused'] else '≥'} {a['threshold']} ({module})"


def asked(done):
    """Who gave the answer.

    Example: answered_by "source", citations [2] -> "Abschnitt [2] wörtlich, nicht vom Modell …"
    """
    if done.text is None:
        return "niemand (--retrieve-only)"
    if not done.llm_called or (done.answerable or {}).get("refused"):
        return "niemand: die Antwort ist „Dazu habe ich keine Information.“"
    if done.answered_by == "source":
        n = (done.citations or {}).get("valid") or ["?"]
        return f"Abschnitt [{n[0]}] wörtlich, nicht vom Modell geschrieben"
    read = done.timings.get("read_before_first_token")
    return f"das Modell {done.model or '?'} schreibt die Antwort ({read} Prompt-Tokens gelesen)"


def table(out):
    """Every tuned number, how it was set and where it comes from (rag/tuned.py)."""
    print("Die abgestimmten Zahlen (rag/tuned.py): Name = Wert [wie gesetzt], woher", file=out)
    for name, value, how, number in tuned.rows():
        print(f"{name} = {value}  [{tuned.HOW[how]}]", file=out)
        for label, said in (("Befehl", number.command), ("Sätze", number.sets),
                            ("Commit", number.commit), ("Ergebnis", number.figures),
                            ("Grund", number.why)):
            if said:
                print(f"    {label}: {said}", file=out)
