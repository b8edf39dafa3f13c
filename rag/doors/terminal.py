"""The terminal door of ask_rag.py: the core's events as lines on the terminal, one question or a
--chat.

    done = show(core.ask("Wie lege ich eine Mailbox an?", settings), args)
    # prints the answer as it streams
    print_answer(done, sys.stdout)
    # -> "Quellen:\n  [1] mail/mailbox-anlegen.md › Anlegen  (Score 0.0323; …)"

`args` are ask_rag.py's flags (rag/doors/flags.py): --json, --explain, --show-prompt, --show-context
decide what is printed. Expected failures print one German line "Fehler: …" on stderr and exit.

While the model is asked, one status line on stderr says what the wait is for (not with --json):
    4 Quellen gefunden · prüfe, ob sie die Frage beantworten …
On a terminal it counts the seconds ("… 3 s") and the first answer byte replaces it; into a pipe
it is printed once, as a plain line.

Does not handle: colours other than the guard's (NO_COLOR switches those off), terminal width,
paging.
"""
import json
import os
import sys
import threading
import time

from rag import core
from rag.answer import prompt
from rag.check import citations as citations_check
from rag.check import guard
from rag.check import see_also
from rag.doors import explain
from rag.doors import flags
from rag.doors import ratings
from rag.search import expand


TICK = 1.0  # seconds between two updates of the status line's running count (terminal only)
# core's "asking" events
WAITING = {"check": "prüfe, ob sie die Frage beantworten …",
           "answer": "warte auf die Antwort des Modells …",
           "section": "prüfe, ob der beste Abschnitt die Frage beantwortet …"}
CLEAR = "\r\033[K"  # back to the line's start, erase it


def status_line(found, asking):
    """Example: status_line(4, "check")
    -> "4 Quellen gefunden · prüfe, ob sie die Frage beantworten …" """
    return f"{found} {'Quelle' if found == 1 else 'Quellen'} gefunden · {WAITING[asking]}"


class Status:
    """The status line on stderr while the model is asked. Into a pipe: printed once. On a terminal:
    rewritten about once a second by a small thread with the seconds waited ("… 3 s"), erased by
    clear()."""
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
        """Stop the count and erase the line (before the first answer byte, an error line, the
        end)."""
        if self.text is None:
            return
        self.stopped.set()
        with self.lock:
            self.write("")
        self.text, Status.shown = None, None


def fail(message, code=1):
    """One German error line on stderr, then exit.
    Example: fail("x", 2) -> stderr "Fehler: x", exit code 2"""
    print(f"Fehler: {message}", file=sys.stderr)
    sys.exit(code)


def print_searched(searched, args, out):
    """The rewritten follow-up (always), what --expand added (--explain)."""
    if searched.rewritten or searched.previous:
        print(f"→ Gesucht: "
              f"{expand.searched_line(searched.question, searched.rewritten, searched.previous)}",
              file=out)
    if args.explain and searched.expansions:
        weights = ", ".join(f"{w:g}" for w in searched.weights[1:])
        print(f"Erweitert: {' · '.join(searched.expansions)}  (Gewicht {weights}; "
              f"Frage {searched.weights[0]:g})",
              file=out)
    if args.explain and searched.chosen:
        print(f"Gewählt:   {' · '.join(searched.chosen)}  (vom Modell unter den ersten Treffern)",
              file=out)
    if args.explain and searched.feedback:
        print(f"Rückkopplung: {' · '.join(searched.feedback)}  (Wörter der ersten Treffer, "
              f"Gewicht {expand.PRF_WEIGHT:g})", file=out)


def print_context(sources, out):
    """--show-context: each chunk as the prompt quotes it, numbered, with the guard's marks."""
    for n, s in enumerate(sources, start=1):
        marked = f" ⚠ {', '.join(f['rule'] for f in s.flags)}" if s.flags else ""
        print(f"--- [{n}] {prompt.source_label(s)} (Chunk {s.chunk_index}){marked} "
              f"---\n{s.content}", file=out)
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
        print("Zitate: " + citations_check.describe_citations(citations), file=out)


def print_answer(done, out, shown=False):
    """After the stream: why the answer is what it is (rag/check/why.py; after the answer when the
    stream did not show it, after "→" when a check replaced what it showed), the sources, the
    checks."""
    if done.why:
        said = (f"{'→ ' if done.replaced else ''}{done.text}  " if done.replaced or not shown
                else "")
        print(f"{said}({done.why})", file=out)
    if not done.retrieval.sources:
        print("Keine passenden Stellen im Wiki gefunden.", file=out)
        return
    refused = done.refused  # the core's: then no citation, evidence or fact lines, only the guard's
    # "Siehe auch: [2] … › …, [3] …"; after the refusal "Vielleicht hilft: …"
    if done.see_also:
        print(see_also.line(done.see_also, refused=refused), file=out)
    print_sources(done.retrieval, None if refused else done.citations, out)
    if refused:
        print_guard(done, out)
        return
    if done.support is not None:
        from rag.check import support
        for line in support.describe({"evidence": done.evidence, "statements": done.support}):
            print(line, file=out)
    if done.unsupported:
        from rag.check import factcheck
        print(factcheck.describe(done.unsupported), file=out)
    print_guard(done, out)


def print_guard(done, out):
    """The injection guard's lines (rag/check/guard.py describe), red in a terminal."""
    if done.guard:
        lines = guard.describe(done.guard, colour=out.isatty() and not os.environ.get("NO_COLOR"))
        if lines:
            print(lines, file=out)


def show(events, args, out=sys.stdout):
    """Print one question's events as the terminal shows them; returns (the final Answer, whether a
    piece of the answer was shown)."""
    streamed, shown, found, status = False, False, 0, Status()
    try:
        for event in events:
            if event.kind == "done":
                return event.data, shown
            # with --json too: one line on stderr
            if event.kind == "searched" and event.data.warning:
                print(f"Warnung: {event.data.warning}", file=sys.stderr)
            if args.json:
                continue
            if event.kind == "searched":
                print_searched(event.data, args, out)
            elif event.kind == "sources":
                found = len(event.data.sources)  # what the status line counts
                if args.explain:  # stages 1 and 2 (rag/doors/explain.py)
                    explain.found(event.data, out)
                    explain.widened(event.data, out)
                if args.show_context:
                    print_context(event.data.sources, out)
            elif event.kind == "chosen" and args.explain:  # stage 3
                explain.chosen(event.data, out)
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
                streamed = shown = True
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
    """One question's events as they stream, then --json's object or the sources and checks; returns
    the Answer."""
    done, shown = show(events, args)
    if args.json:
        print(json.dumps(done.as_json(), ensure_ascii=False), flush=True)
    else:
        print_answer(done, sys.stdout, shown)
        if args.explain:  # stages 4 to 6
            explain.after(done, sys.stdout)
        if done.text is not None and not args.no_audit:  # what --rate names (rag/doors/ratings.py)
            print(ratings.id_line(done.id), flush=True)
    return done


def chat(args):
    """--chat: questions from the terminal (or stdin), one after another; the questions and answers
    so far are the history a follow-up is read against (the core uses the last two turns). Ends at
    an empty line or EOF; a question that fails prints its error line and the session goes on (exit
    code 1 at the end)."""
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
        # the standalone form helps the next one
        asked = done.searched.question if done.searched else question
        history += [{"role": "user", "content": asked},
                    {"role": "assistant", "content": done.text or ""}]
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
