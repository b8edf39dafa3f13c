"""The terminal door of ask_rag.py: the core's events as lines on the terminal, one question or a --chat.

    done = show(core.ask("Wie lege ich eine Mailbox an?", settings), args)   # prints the answer as it streams
    print_answer(done, sys.stdout)   # -> "Quellen:\n  [1] mail/mailbox-anlegen.md › Anlegen  (Score 0.0323; …)"

`args` are ask_rag.py's flags (rag/doors/flags.py): --json, --explain, --show-prompt, --show-context
decide what is printed. Expected failures print one German line "Fehler: …" on stderr and exit.

While the model is asked, one status line on stderr says what the wait is for (not with --json):
    4 Quellen gefunden · prüfe, ob sie die Frage beantworten …
On a terminal it counts the seconds ("… 3 s") and the first answer byte replaces it; into a pipe it is
printed once, as a plain line.

Does not handle: colours other than the guard's (NO_COLOR switches those off), terminal width, paging.
"""
import json
import os
import sys
import threading
import time

from rag import core
from rag.answer import choose
from rag.answer import guard
from rag.answer import prompt
from rag.answer import see_also
from rag.doors import flags
from rag.doors import ratings
from rag.privacy import mask as privacy
from rag.search import expand


TICK = 1.0  # seconds between two updates of the status line's running count (terminal only)
WAITING = {"check": "prüfe, ob sie die Frage beantworten …", "answer": "warte auf die Antwort des Modells …",
           "section": "prüfe, ob der beste Abschnitt die Frage beantwortet …"}  # core's "asking" events
CLEAR = "\r\033[K"  # back to the line's start, erase it


def status_line(found, asking):
    """Example: status_line(4, "check") -> "4 Quellen gefunden · prüfe, ob sie die Frage beantworten …" """
    return f"{found} {'Quelle' if found == 1 else 'Quellen'} gefunden · {WAITING[asking]}"


class Status:
    """The status line on stderr while the model is asked. Into a pipe: printed once. On a terminal:
    rewritten about once a second by a small thread with the seconds waited ("… 3 s"), erased by clear()."""
    shown = None  # the Status on the terminal now, for interrupted()

    def __init__(self, err=None):
        self.err = err or sys.stderr
        self.tty, self.text, self.started = self.err.isatty(), None, 0.0
        self.stopped, self.lock = threading.Event(), threading.Lock()

    def show(self, text):
        if not self.tty:
            print(text, file=self.err, flush=True)
            return
        self.text, self.started, Status.shown = text, time.monotonic(), self
        self.write(text)
        threading.Thread(target=self.tick, daemon=True).start()

    def write(self, line):
        self.err.write(CLEAR + line)
        self.err.flush()

    def tick(self):
        while not self.stopped.wait(TICK):
            with self.lock:
                if not self.stopped.is_set():
                    self.write(f"{self.text} {int(time.monotonic() - self.started)} s")

    def clear(self):
        """Stop the count and erase the line (before the first answer byte, an error line, the end)."""
        if self.text is None:
            return
        self.stopped.set()
        with self.lock:
            self.write("")
        self.text, Status.shown = None, None


def fail(message, code=1):
    """One German error line on stderr, then exit. Example: fail("x", 2) -> stderr "Fehler: x", exit code 2"""
    print(f"Fehler: {message}", file=sys.stderr)
    sys.exit(code)


def print_explain(result, out):
    print(f"Suchtext:  {result.query_text}", file=out)
    print(f"Modus:     {result.mode}; Suchstufe: {result.strategy or 'keine'}; "
          f"Abdeckung {result.coverage:.0%}; bester Kosinus "
          f"{'-' if result.best_cosine is None else f'{result.best_cosine:.3f}'}", file=out)
    if result.under:
        print(f"Ordner:    nur {result.under}", file=out)
    if result.scan:  # which way rag/store/vectors.py scanned the vectors
        processes = f", {result.scan_processes} Prozesse" if (result.scan_processes or 1) > 1 else ""
        how = (f"HNSW: {result.scan_candidates} Kandidaten vorausgewählt, exakt nachgerechnet" if result.scan_candidates
               else "exakt, alle Vektoren")
        print(f"Vektorsuche: {result.scan}{processes} ({how})", file=out)
    if result.weak:
        print(f"Belege zu schwach: {result.weak_reason}", file=out)
    if result.query_prefix is not None:
        print(f'Präfix:    "{result.query_prefix}" (vor der Frage, nur fürs Embedding)', file=out)
    for kept in result.pii_kept:  # business contacts and RAG_PII_KEEP values (rag/privacy/mask.py)
        print(privacy.describe_kept(kept), file=out)
    print_choice(result, out)


SIGNAL_NAMES = {"rank": "Rang", "cosine": "Kosinus", "heading": "Überschrift", "shape": "Form", "substance": "Substanz",
                "intro": "Einleitung", "pointer": "Verweis", "role": "Rolle"}  # --explain's header, one per choose.Signals


def print_choice(result, out):
    """The signals rag/answer/choose.py weighs per source, the section a how-to answer shows marked with "→"
    (from the sources as retrieved; the core weighs their prompt copies, which differ only after the guard)."""
    rows = choose.table(result.sources, result.terms, result.weights, result.vocab)
    if not rows:
        return
    chosen = choose.pick(rows)
    print(f"Abschnittswahl (How-to): {' '.join(SIGNAL_NAMES[f] for f in choose.Signals._fields)} = Punkte", file=out)
    for n, row in enumerate(rows):
        values = " ".join(f"{x:.2f}" if isinstance(x, float) else str(x) for x in row)
        print(f"  {'→' if n == chosen else ' '} [{n + 1}] {values} = {choose.score(row):.4f}", file=out)


def print_searched(searched, args, out):
    """The rewritten follow-up (always), what --expand added (--explain)."""
    if searched.rewritten or searched.previous:
        print(f"→ Gesucht: {expand.searched_line(searched.question, searched.rewritten, searched.previous)}", file=out)
    if args.explain and searched.expansions:
        weights = ", ".join(f"{w:g}" for w in searched.weights[1:])
        print(f"Erweitert: {' · '.join(searched.expansions)}  (Gewicht {weights}; Frage {searched.weights[0]:g})",
              file=out)
    if args.explain and searched.chosen:
        print(f"Gewählt:   {' · '.join(searched.chosen)}  (vom Modell unter den ersten Treffern)", file=out)
    if args.explain and searched.feedback:
        print(f"Rückkopplung: {' · '.join(searched.feedback)}  (Wörter der ersten Treffer, Gewicht "
              f"{expand.PRF_WEIGHT:g})", file=out)


def print_context(sources, out):
    """--show-context: each chunk as the prompt quotes it, numbered, with the guard's marks."""
    for n, s in enumerate(sources, start=1):
        marked = f" ⚠ {', '.join(f['rule'] for f in s.flags)}" if s.flags else ""
        print(f"--- [{n}] {prompt.source_label(s)} (Chunk {s.chunk_index}){marked} ---\n{s.content}", file=out)
    print("--- Ende Kontext ---", file=out)


def print_sources(result, citations, out):
    cited = set(citations["valid"]) if citations else set()
    print("\nQuellen:", file=out)
    for n, s in enumerate(result.sources, start=1):
        marks = []
        if n in cited:
            marks.append("zitiert")
        if s.flags:
            marks.append("⚠ markiert: " + ", ".join(f["rule"] for f in s.flags))
        ranks = " ".join(f"{m}#{r}" for m, r in sorted(s.ranks.items()))
        cos = f", Kosinus {s.cosine:.3f}" if s.cosine is not None else ""
        print(f"  [{n}] {prompt.source_label(s)}  (Score {s.score:.4f}{cos}; {ranks})"
              + (f"  – {'; '.join(marks)}" if marks else ""), file=out)
    if citations is not None:
        print("Zitate: " + prompt.describe_citations(citations), file=out)


def judged_line(answerable):
    """Example: {"judged": [{"n": 2, "p_yes": 0.12}, {"n": 1, "p_yes": 0.91}]} -> "[2] P(ja) 0.12, [1] P(ja) 0.91" """
    return ", ".join(f"[{j['n']}] P(ja) " + ("–" if j["p_yes"] is None else f"{j['p_yes']:.2f}")
                     for j in answerable["judged"])


def print_answer(done, out):
    """After the stream: the refusal line (no model asked), the sources, the checks."""
    if done.text is not None and not done.llm_called:
        print(done.text + "  (kein LLM-Aufruf: zu wenig Belege im Wiki; die nächsten Kandidaten:)", file=out)
    elif done.answerable and done.answerable["refused"] and done.answerable.get("judged"):
        print(f"{done.text}  (das Antwortmodell sieht die Frage in keinem geprüften Abschnitt beantwortet: "
              f"{judged_line(done.answerable)} < {done.answerable['threshold']}; die Kandidaten:)", file=out)
    elif done.answerable and done.answerable["refused"]:
        print(f"{done.text}  (das Antwortmodell sieht die Frage in den Quellen nicht beantwortet: "
              f"P(ja) {done.answerable['p_yes']:.2f} < {done.answerable['threshold']}; die Kandidaten:)", file=out)
    elif done.grounding and done.grounding.get("echo"):  # rag/answer/echo.py
        print(f"→ {done.text}  ({done.grounding['why']}; " + ("Zeile wörtlich aus der Quelle, nicht vom Modell geschrieben)"
              if done.answered_by == "line" else "keine Stelle der Quellen beantwortet sie; die Kandidaten:)"), file=out)
    elif done.grounding and done.grounding["refused"]:
        g = done.grounding
        print(f"→ {done.text}  (zurückgezogen: {', '.join(g['facts'])} steht nur in Stellen, die kaum von der Frage "
              f"handeln – {g['why']}; die Kandidaten:)", file=out)
    elif done.answered_by == "source":
        judged = f"; geprüft: {judged_line(done.answerable)}" if done.answerable and done.answerable.get("judged") else ""
        print(f"(Schritte wörtlich aus der Quelle übernommen, nicht vom Modell geschrieben{judged})", file=out)
    if not done.retrieval.sources:
        print("Keine passenden Stellen im Wiki gefunden.", file=out)
        return
    refused = (done.text or "").strip() == prompt.NO_INFO  # then no citation, evidence, fact lines
    if done.see_also:  # "Siehe auch: [2] … › …, [3] …"; after the refusal "Vielleicht hilft: …"
        print(see_also.line(done.see_also, refused=refused), file=out)
    print_sources(done.retrieval, None if refused else done.citations, out)
    if refused:
        print_guard(done, out)
        return
    if done.support is not None:
        from rag.answer import support
        for line in support.describe({"evidence": done.evidence, "statements": done.support}):
            print(line, file=out)
    if done.unsupported:
        from rag.answer import factcheck
        print(factcheck.describe(done.unsupported), file=out)
    print_guard(done, out)


def print_guard(done, out):
    """The injection guard's lines (rag/answer/guard.py describe), red in a terminal."""
    if done.guard:
        lines = guard.describe(done.guard, colour=out.isatty() and not os.environ.get("NO_COLOR"))
        if lines:
            print(lines, file=out)


def show(events, args, out=sys.stdout):
    """Print one question's events as the terminal shows them; returns the final Answer."""
    streamed, found, status = False, 0, Status()
    try:
        for event in events:
            if event.kind == "done":
                return event.data
            if event.kind == "searched" and event.data.warning:  # with --json too: one line on stderr
                print(f"Warnung: {event.data.warning}", file=sys.stderr)
            if args.json:
                continue
            if event.kind == "searched":
                print_searched(event.data, args, out)
            elif event.kind == "sources":
                found = len(event.data.sources)  # what the status line counts
                if args.explain:
                    print_explain(event.data, out)
                if args.show_context:
                    print_context(event.data.sources, out)
            elif event.kind == "asking":
                status.show(status_line(found, event.data))
            elif event.kind == "prompt" and args.show_prompt:
                status.clear()
                system = prompt.split_chat(event.data, prompt.SYSTEM)[0]["role"] == "system"
                chat = "Chat-Template" if system else "Completion"
                print(f"--- Prompt ({chat}) ---\n{event.data}\n--- Ende Prompt ---\n", file=out)
            elif event.kind == "piece":
                status.clear()
                print(event.data, end="", file=out, flush=True)
                streamed = True
            elif event.kind == "checks" and streamed:
                print(file=out)
                streamed = False
    except core.CoreError as exc:
        status.clear()
        if streamed:
            print(file=out)
        fail(str(exc))
    finally:
        status.clear()


def answer(events, args):
    """One question's events as they stream, then --json's object or the sources and checks; returns the Answer."""
    done = show(events, args)
    if args.json:
        print(json.dumps(done.as_json(), ensure_ascii=False), flush=True)
    else:
        print_answer(done, sys.stdout)
        if done.text is not None and not args.no_audit:  # what --rate names (rag/doors/ratings.py)
            print(ratings.id_line(done.id), flush=True)
    return done


def chat(args):
    """--chat: questions from the terminal (or stdin), one after another; the questions and answers so far
    are the history a follow-up is read against (the core uses the last two turns). Ends at an empty line
    or EOF; a question that fails prints its error line and the session goes on (exit code 1 at the end)."""
    if args.question:
        fail("--chat liest die Fragen selbst – ohne Frage aufrufen: python3 ask_rag.py --chat", 2)
    history, cue, failed = [], "Frage: " if sys.stdin.isatty() else "", False
    while True:
        try:
            question = input(cue).strip()
        except EOFError:
            break
        if not question:
            break
        try:
            done = answer(core.ask(question, flags.settings_from(args), history), args)
        except SystemExit:  # the error line is out; the session goes on
            failed = True
            continue
        asked = done.searched.question if done.searched else question  # the standalone form helps the next one
        history += [{"role": "user", "content": asked}, {"role": "assistant", "content": done.text or ""}]
        if not args.json:
            print(flush=True)
    if failed:
        sys.exit(1)


def interrupted(signum, frame):
    """Ctrl-C: stop at once with exit code 130. No cleanup can block here (a stalled stream's
    close once did); ask_rag.py writes nothing but the audit line, after the answer."""
    try:
        sys.stdout.flush()
    except (OSError, RuntimeError):  # RuntimeError: the signal came in the middle of a print
        pass
    status = Status.shown
    if status is not None:  # the status line is erased, its count stopped
        status.stopped.set()
        status.lock.acquire(timeout=0.2)  # the count may be writing; this thread may hold it itself
    os.write(2, (CLEAR if status is not None else "\n").encode() + "Abgebrochen.\n".encode())
    os._exit(130)
