#!/usr/bin/env python3
"""Step 2 of the post: embed the question, rank the chunks, build a context-only prompt, ask.

    python3 ask_rag.py "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"
    python3 ask_rag.py --retrieve-only --explain "Kuendigungsfrist Dienstleister"
    python3 ask_rag.py --json "Wie groß darf mein Postfach sein?"
    python3 ask_rag.py --expand "Mein Mailprogramm meldet, der Speicher ist fast voll – was tun?"
    python3 ask_rag.py --chat            # follow-ups: "Und wie lösche ich sie wieder?"

Steps, in the order of the post:
  1. embed    the question, with the same llama-embedding and model as the index
  2. rank     hybrid: German full-text search fused with exact cosine similarity (rag/search/ranking.py)
  3. prompt   the top-k chunks numbered [1]…[n], quoted as data, "Dazu habe ich keine Information."
  4. ask      a running llama-server, tokens printed as they arrive; then the sources and which
              of them the answer cites, and one line in the audit log

When the retrieval evidence is weak, the answer is "Dazu habe ich keine Information." and the
LLM is not called at all. The steps themselves live in rag/core.py, which every front door calls
(this terminal, the web page and API of --serve, the MCP server of --mcp); this script only turns
the core's events into lines on the terminal.

--expand also searches what the answer model makes of the question (its search phrases, or its
choice among the first results); --chat asks one question after another and rewrites a follow-up
into a standalone question first (both in rag/search/expand.py).

Does not handle: several indexes at once, editing earlier questions of a --chat session.
"""
import argparse
import dataclasses
import json
import os
import signal
import sys

from rag import config
from rag import core
from rag.answer import audit
from rag.answer import guard
from rag.answer import prompt as answer
from rag.privacy import mask as privacy
from rag.search import expand
from rag.search import ranking as search


def fail(message, code=1):
    print(f"Fehler: {message}", file=sys.stderr)
    sys.exit(code)


# -- output: the core's events as terminal lines ---------------------------------------------------
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
    for n, s in enumerate(sources, start=1):
        flags = f" ⚠ {', '.join(f['rule'] for f in s.flags)}" if s.flags else ""
        print(f"--- [{n}] {answer.source_label(s)} (Chunk {s.chunk_index}){flags} ---\n{s.content}", file=out)
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
        print(f"  [{n}] {answer.source_label(s)}  (Score {s.score:.4f}{cos}; {ranks})"
              + (f"  – {'; '.join(marks)}" if marks else ""), file=out)
    if citations is not None:
        print("Zitate: " + answer.describe_citations(citations), file=out)


def print_answer(done, out):
    """After the stream: the refusal line (no model asked), the sources, the checks."""
    if done.text is not None and not done.llm_called:
        print(done.text + "  (kein LLM-Aufruf: zu wenig Belege im Wiki; die nächsten Kandidaten:)", file=out)
    elif done.answerable and done.answerable["refused"]:
        print(f"{done.text}  (das Antwortmodell sieht die Frage in den Quellen nicht beantwortet: "
              f"P(ja) {done.answerable['p_yes']:.2f} < {done.answerable['threshold']}; die Kandidaten:)", file=out)
    elif done.grounding and done.grounding["refused"]:
        g = done.grounding
        print(f"→ {done.text}  (zurückgezogen: {', '.join(g['facts'])} steht nur in Stellen, die kaum von der Frage "
              f"handeln – Anteil der Fragewörter {g['coverage']:.2f} < {g['needed']}; die Kandidaten:)", file=out)
    elif done.answered_by == "source":
        print("(Schritte wörtlich aus der Quelle übernommen, nicht vom Modell geschrieben)", file=out)
    if not done.retrieval.sources:
        print("Keine passenden Stellen im Wiki gefunden.", file=out)
        return
    print_sources(done.retrieval, done.citations, out)
    if done.support is not None:
        from rag.answer import support
        for line in support.describe({"evidence": done.evidence, "statements": done.support}):
            print(line, file=out)
    if done.unsupported:
        from rag.answer import factcheck
        print(factcheck.describe(done.unsupported), file=out)
    if done.guard:
        lines = guard.describe(done.guard, colour=out.isatty() and not os.environ.get("NO_COLOR"))
        if lines:
            print(lines, file=out)


def show(events, args, out=sys.stdout):
    """Print one question's events as the terminal shows them; returns the final Answer."""
    streamed = False
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
                if args.explain:
                    print_explain(event.data, out)
                if args.show_context:
                    print_context(event.data.sources, out)
            elif event.kind == "prompt" and args.show_prompt:
                chat = "Chat-Template" if answer.split_chat(event.data)[0]["role"] == "system" else "Completion"
                print(f"--- Prompt ({chat}) ---\n{event.data}\n--- Ende Prompt ---\n", file=out)
            elif event.kind == "piece":
                print(event.data, end="", file=out, flush=True)
                streamed = True
            elif event.kind == "checks" and streamed:
                print(file=out)
                streamed = False
    except core.CoreError as exc:
        if streamed:
            print(file=out)
        fail(str(exc))


# -- flags -----------------------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Beantwortet eine Frage aus dem Wiki-Index mit llama-server (RAG ohne Magie).",
        epilog="Umgebungsvariablen: RAG_DB, LLAMA_EMBEDDING, RAG_EMBED_MODEL, LLAMA_SERVER_URL, RAG_TOP_K, "
               "RAG_EMBED_VIA, RAG_EMBED_URL, RAG_EMBED_MODEL_NAME, RAG_API_KEY, RAG_LLM_MODEL_NAME, "
               "RAG_MODE, RAG_VECTOR_WEIGHT, RAG_FLOOR_COSINE, RAG_AUDIT, RAG_PII, RAG_PII_KINDS, RAG_PII_KEEP, RAG_UNDER, RAG_GUARD, "
               "RAG_ANN, RAG_STEPS, RAG_EXPAND, RAG_EXPAND_METHOD, RAG_REWRITE; für --serve: RAG_SERVE_HOST, RAG_SERVE_PORT, RAG_SERVE_KEY, RAG_SERVE_SLOTS, RAG_SERVE_QUEUE.")
    parser.add_argument("question", nargs="?", help="die Frage (in Anführungszeichen)")
    parser.add_argument("--db", default=config.env_str("RAG_DB", "knowledge.db"),
                        help="Index: SQLite-Datei oder PostgreSQL-DSN postgresql://… (RAG_DB, Standard: knowledge.db)")
    parser.add_argument("--ann", action="store_true", default=os.environ.get("RAG_ANN") == "1",
                        help="PostgreSQL: Vektorsuche über den HNSW-Index, Kandidaten exakt nachgerechnet "
                             "(RAG_ANN=1; Standard: ab einer gemessenen Größe von selbst)")
    parser.add_argument("--wiki", default=config.env_str("RAG_WIKI", "wiki"),
                        help="Wiki-Ordner (RAG_WIKI; nur zur Anzeige, Standard: wiki)")
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(),
                        help="Pfad zu llama-embedding (LLAMA_EMBEDDING; Standard: PATH, sonst Setup-Cache)")
    parser.add_argument("--model", default=config.default_model(),
                        help="GGUF-Modell für die Frage-Embeddings, wie beim Index (RAG_EMBED_MODEL)")
    parser.add_argument("--server", default=config.env_str("LLAMA_SERVER_URL", config.DEFAULT_SERVER_URL),
                        help=f"URL von llama-server (LLAMA_SERVER_URL, Standard: {config.DEFAULT_SERVER_URL})")
    parser.add_argument("--embed-via", choices=("binary", "server"),  # RAG_EMBED_VIA=auto/spawn (build_index.py): binary
                        default="server" if os.environ.get("RAG_EMBED_VIA") == "server" else "binary",
                        help="Frage einbetten mit llama-embedding (binary, Standard) oder über einen laufenden "
                             "OpenAI-kompatiblen /v1/embeddings-Endpunkt, z. B. llama-server mit --embeddings "
                             "--pooling mean (server: spart ~0,5 s; RAG_EMBED_VIA)")
    parser.add_argument("--embed-url", default=os.environ.get("RAG_EMBED_URL"),
                        help="URL des Embedding-Servers für --embed-via server (RAG_EMBED_URL; Standard: --server)")
    parser.add_argument("--embed-model-name", default=os.environ.get("RAG_EMBED_MODEL_NAME"),
                        help="Modellname, den der Embedding-Server erwartet (RAG_EMBED_MODEL_NAME; "
                             "Ollama und vLLM brauchen ihn)")
    parser.add_argument("--api-key", default=os.environ.get("RAG_API_KEY"),
                        help="API-Schlüssel, als Bearer-Token an Chat- und Embedding-Server "
                             "(RAG_API_KEY; besser als Variable, Flags sieht jeder in ps)")
    parser.add_argument("--llm-model-name", default=os.environ.get("RAG_LLM_MODEL_NAME"),
                        help="Modellname für die Antwort, als \"model\" gesendet (RAG_LLM_MODEL_NAME; "
                             "Ollama und vLLM brauchen ihn)")
    parser.add_argument("--top-k", type=int, default=config.env_int("RAG_TOP_K", core.TOP_K),
                        help=f"Anzahl Chunks im Prompt (RAG_TOP_K, Standard: {core.TOP_K})")
    parser.add_argument("--mode", choices=search.MODES, default=config.env_str("RAG_MODE", "hybrid"),
                        help="Suche: hybrid (Standard), vector oder lexical (RAG_MODE)")
    parser.add_argument("--max-per-file", type=int, default=search.MAX_PER_FILE,
                        help=f"höchstens so viele Chunks einer Datei (Standard: {search.MAX_PER_FILE})")
    parser.add_argument("--reject-cosine", type=float, default=config.env_float("RAG_REJECT_COSINE", None),
                        help="unter diesem besten Kosinus gilt die Frage als nicht im Wiki, auch wenn Wörter passen "
                             "(RAG_REJECT_COSINE; Standard: im Index gespeichert, sonst je Modell gemessen)")
    parser.add_argument("--floor-cosine", type=float, default=config.env_float("RAG_FLOOR_COSINE", None),
                        help="Kosinus-Schwelle der Relevanzprüfung (RAG_FLOOR_COSINE; Standard: im Index gespeichert)")
    parser.add_argument("--vector-weight", type=float, default=config.env_float("RAG_VECTOR_WEIGHT", None),
                        help=f"Gewicht der Vektorsuche im Hybrid-Modus (RAG_VECTOR_WEIGHT; Standard: im Index "
                             f"gespeichert, sonst je Modell gemessen)")
    parser.add_argument("--no-floor", action="store_true", help="Relevanzprüfung aus: immer das LLM fragen")
    parser.add_argument("--prompt-format", choices=("auto", "chat", "completion"), default="auto",
                        help="auto: Chat-Template, wenn der Server eines meldet; sonst Completion-Prompt")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help=f"maximale Länge der Antwort in Tokens (Standard: {core.MAX_TOKENS['fact']} für "
                             f"Faktenfragen, {core.MAX_TOKENS['howto']} für Schritte)")
    parser.add_argument("--answer-threshold", type=float, default=config.env_float("RAG_ANSWER_THRESHOLD", None),
                        help="ablehnen, wenn das Antwortmodell mit weniger als dieser Wahrscheinlichkeit „ja, die "
                             "Quellen beantworten die Frage“ sagt (RAG_ANSWER_THRESHOLD; Standard: je Modell gemessen, "
                             "0 = Prüfung aus)")
    parser.add_argument("--whole-chunks", action="store_true", default=bool(os.environ.get("RAG_WHOLE_CHUNKS")),
                        help="die Quellen ganz in den Prompt (wie im Artikel), statt nur der Sätze, Schritte und "
                             "Tabellenzeilen, die zur Frage passen (RAG_WHOLE_CHUNKS=1)")
    parser.add_argument("--steps", choices=("source", "model"), default=config.env_str("RAG_STEPS", "source"),
                        help="How-to-Fragen: source übernimmt den passenden Abschnitt der Quelle wörtlich, das Modell "
                             "prüft nur, ob die Quellen die Frage beantworten (Standard); model lässt das Modell "
                             "die Schritte schreiben (RAG_STEPS)")
    parser.add_argument("--under", default=os.environ.get("RAG_UNDER"), metavar="ORDNER",
                        help="nur Seiten unterhalb dieses Wiki-Ordners durchsuchen, z. B. mail/ (RAG_UNDER)")
    parser.add_argument("--expand", action="store_true", default=os.environ.get("RAG_EXPAND") == "1",
                        help="Frage erweitern: das Antwortmodell (derselbe llama-server) hilft suchen, siehe "
                             "--expand-method (RAG_EXPAND=1; auch mit --retrieve-only, dann fragt es den Server nur "
                             "danach; rag/search/expand.py)")
    parser.add_argument("--expand-method", choices=expand.METHODS,
                        default=config.env_str("RAG_EXPAND_METHOD", expand.METHOD),
                        help=f"mit --expand: phrases = Suchbegriffe in der Sprache des Wikis, zusätzlich gesucht; "
                             f"choose = das Modell wählt unter den Überschriften der ersten Treffer; both = beides "
                             f"(RAG_EXPAND_METHOD, Standard: {expand.METHOD})")
    parser.add_argument("--chat", action="store_true",
                        help="Gespräch im Terminal: eine Frage nach der anderen; eine Folgefrage („Und wie lösche ich "
                             "sie wieder?“) wird zusammen mit der Frage davor gesucht (→ Gesucht: …); "
                             "leere Zeile oder Strg-D beendet")
    parser.add_argument("--rewrite", action="store_true", default=os.environ.get("RAG_REWRITE") == "1",
                        help="Folgefragen zusätzlich vom Antwortmodell umschreiben lassen, auch in --serve "
                             "(RAG_REWRITE=1; mit dem 1,5B-Modell gemessen schlechter, README)")
    parser.add_argument("--retrieve-only", action="store_true", help="nur suchen und Quellen zeigen, kein LLM")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    parser.add_argument("--explain", action="store_true", help="Suchtext, Suchstufe und Ränge je Modus zeigen")
    parser.add_argument("--show-prompt", action="store_true", help="den Prompt vor der Antwort zeigen")
    parser.add_argument("--show-context", action="store_true", help="die Chunks im Wortlaut zeigen")
    parser.add_argument("--audit", default=os.environ.get("RAG_AUDIT"),
                        help="Audit-Log (JSON Lines; RAG_AUDIT, Standard: neben dem Index)")
    parser.add_argument("--no-audit", action="store_true", help="nichts ins Audit-Log schreiben")
    parser.add_argument("--audit-show", type=int, metavar="N",
                        help="Eintrag N des Audit-Logs lesbar zeigen (1 = ältester, -1 = neuester)")
    parser.add_argument("--pii", default=config.env_str("RAG_PII", "mask"),
                        help="personenbezogene Daten (IBAN, Telefon, Steuer-ID …) in Prompt, Ausgabe und Audit-Log: "
                             "mask ersetzt sie durch [IBAN 1] usw. (Standard), flag markiert die Quellen, off "
                             "(RAG_PII; rag/privacy/mask.py)")
    parser.add_argument("--pii-kinds", default=os.environ.get("RAG_PII_KINDS", ""), metavar="ARTEN",
                        help="welche Arten maskiert werden: \"-ADRESSE,-PLZ-ORT\" alle außer diesen, "
                             "\"IBAN,TELEFON,NAME\" nur diese (RAG_PII_KINDS; Standard: alle: "
                             + ", ".join(privacy.KINDS) + ")")
    parser.add_argument("--pii-keep", default=os.environ.get("RAG_PII_KEEP", ""), metavar="WERTE",
                        help="Werte oder Muster, die lesbar bleiben, durch Kommas getrennt, z. B. \"040 66969*,"
                             "NAME:Henrik Lorenzen\" (RAG_PII_KEEP; --explain zeigt, was behalten wurde)")
    parser.add_argument("--guard", choices=("on", "off"), default=config.env_str("RAG_GUARD", "on"),
                        help="Schutz vor Anweisungen im Wiki-Text (rag/answer/guard.py): on entfernt sie aus dem Prompt und "
                             "prüft Links, Adressen, Telefonnummern und Befehle der Antwort (Standard); off nur zum "
                             "Messen (RAG_GUARD)")
    parser.add_argument("--serve", action="store_true",
                        help="Web-Seite und OpenAI-kompatible API starten (rag/doors/web.py), statt eine Frage zu beantworten")
    parser.add_argument("--host", default=config.env_str("RAG_SERVE_HOST", "127.0.0.1"),
                        help="Adresse für --serve (RAG_SERVE_HOST, Standard: 127.0.0.1; eine andere nur mit --serve-key)")
    parser.add_argument("--port", type=int, default=config.env_int("RAG_SERVE_PORT", 8090),
                        help="Port für --serve (RAG_SERVE_PORT, Standard: 8090; 0 = ein freier)")
    parser.add_argument("--serve-key", default=os.environ.get("RAG_SERVE_KEY"),
                        help="Schlüssel, den jede Anfrage an --serve als Bearer-Token braucht (RAG_SERVE_KEY; "
                             "nicht derselbe wie --api-key, der an die Modell-Server geht)")
    parser.add_argument("--serve-slots", type=int, default=config.env_int("RAG_SERVE_SLOTS", None), metavar="N",
                        help="höchstens N Fragen gleichzeitig (RAG_SERVE_SLOTS; Standard: Slots des llama-server)")
    parser.add_argument("--serve-queue", type=int, default=config.env_int("RAG_SERVE_QUEUE", None), metavar="N",
                        help="so viele Fragen warten auf einen Platz, weitere bekommen sofort „ausgelastet“ "
                             "(RAG_SERVE_QUEUE; Standard: so viele wie --serve-slots)")
    parser.add_argument("--mcp", action="store_true",
                        help="als MCP-Server über stdin/stdout laufen (Werkzeuge search_wiki, ask_wiki; rag/doors/mcp_server.py)")
    args = parser.parse_args(joined_kinds(sys.argv[1:] if argv is None else argv))
    args.server = args.server.rstrip("/").removesuffix("/v1")  # an OpenAI base URL (…/v1) works too
    if args.steps not in ("source", "model"):  # argparse checks the choices of the flag only
        fail(f"RAG_STEPS={args.steps!r} gibt es nicht – source oder model angeben", 2)
    if args.expand_method not in expand.METHODS:  # argparse checks the choices of a flag, not of RAG_EXPAND_METHOD
        fail(f"RAG_EXPAND_METHOD={args.expand_method!r} gibt es nicht – {', '.join(expand.METHODS)} angeben", 2)
    args.expand = args.expand_method if args.expand else None  # core.Settings.expand: the method, or off
    if args.pii not in privacy.MODES:
        fail(f"--pii/RAG_PII={args.pii!r} gibt es nicht – mask, flag oder off angeben", 2)
    try:
        args.pii_kinds, args.pii_keep = privacy.parse_kinds(args.pii_kinds), tuple(privacy.parse_keep(args.pii_keep))
    except ValueError as exc:
        fail(f"--pii-kinds/RAG_PII_KINDS: {exc} – z. B. -ADRESSE,-PLZ-ORT oder IBAN,TELEFON,NAME", 2)
    if args.top_k < 1 or args.max_per_file < 1:
        fail("--top-k und --max-per-file müssen mindestens 1 sein", 2)
    if (args.serve_slots is not None and args.serve_slots < 1) or (args.serve_queue or 0) < 0:
        fail("--serve-slots muss mindestens 1 sein, --serve-queue mindestens 0", 2)
    if not 0 <= args.port <= 65535:
        fail(f"--port {args.port} gibt es nicht – 1 bis 65535 angeben (0 = ein freier)", 2)
    return args


def joined_kinds(argv):
    """argparse takes "-ADRESSE" for an option: ["--pii-kinds", "-ADRESSE"] -> ["--pii-kinds=-ADRESSE"]"""
    out = []
    for arg in argv:
        if out and out[-1] == "--pii-kinds" and arg.startswith("-") and not arg.startswith("--"):
            out[-1] = f"--pii-kinds={arg}"
        else:
            out.append(arg)
    return out


def settings_from(args):
    """The core's settings from the flags (rag/core.py Settings has the same names)."""
    names = {f.name for f in dataclasses.fields(core.Settings)} - {"audit"}
    return core.Settings(**{name: getattr(args, name) for name in names},
                         audit="" if args.no_audit else args.audit)


def main():
    args = parse_args()
    if args.audit_show is not None:
        print(audit.show(args.audit or audit.default_path(args.db), args.audit_show))
        return
    if args.serve or args.mcp:  # the long-running doors: the same core, their own formats
        from rag.doors import mcp_server
        from rag.doors import web
        try:
            return (web.serve(settings_from(args), args.host, args.port, args.serve_key, args.serve_slots,
                              args.serve_queue) if args.serve else mcp_server.serve(settings_from(args)))
        except core.CoreError as exc:
            fail(str(exc))
    if args.chat:
        return chat(args)
    if not (args.question or "").strip():
        fail('keine Frage angegeben – so fragen: python3 ask_rag.py "Wie lege ich eine Mailbox an?"', 2)
    answer_one(args.question, args)


def answer_one(question, args, history=()):
    """One question through the core, printed; returns the final Answer."""
    done = show(core.ask(question, settings_from(args), history), args)
    if args.json:
        print(json.dumps(done.as_json(), ensure_ascii=False), flush=True)
    else:
        print_answer(done, sys.stdout)
    return done


def chat(args):
    """--chat: questions from the terminal (or stdin), one after another; the questions and answers so far
    are the history a follow-up is read against (the core uses the last two turns). Ends at an empty line
    or EOF; a question that fails prints its error line and the session goes on (exit code 1 at the end)."""
    if args.question:
        fail("--chat liest die Fragen selbst – ohne Frage aufrufen: python3 ask_rag.py --chat", 2)
    history, prompt, failed = [], "Frage: " if sys.stdin.isatty() else "", False
    while True:
        try:
            question = input(prompt).strip()
        except EOFError:
            break
        if not question:
            break
        try:
            done = answer_one(question, args, history)
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
    os.write(2, "\nAbgebrochen.\n".encode())
    os._exit(130)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, interrupted)
    try:
        main()
    except BrokenPipeError:
        sys.exit(141)
