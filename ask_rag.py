#!/usr/bin/env python3
"""Step 2 of the post: embed the question, rank the chunks, build a context-only prompt, ask.

    python3 ask_rag.py "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"
    python3 ask_rag.py --retrieve-only --explain "Kuendigungsfrist Dienstleister"
    python3 ask_rag.py --json "Wie groß darf mein Postfach sein?"

Steps, in the order of the post:
  1. embed    the question, with the same llama-embedding and model as the index
  2. rank     hybrid: German full-text search fused with exact cosine similarity (rag/search.py)
  3. prompt   the top-k chunks numbered [1]…[n], quoted as data, "Dazu habe ich keine Information."
  4. ask      a running llama-server, tokens printed as they arrive; then the sources and which
              of them the answer cites, and one line in the audit log

When the retrieval evidence is weak, the answer is "Dazu habe ich keine Information." and the
LLM is not called at all.

Does not handle: conversations (each question stands alone), several indexes at once.
"""
import argparse
import json
import os
import signal
import sys
import time
from datetime import datetime, timezone

from rag import answer, audit, config, embedder, search, store

TOP_K = 4  # chunks in the prompt (as in the post)
MAX_TOKENS = 160  # answer length limit; a one-line answer of the plain prompt needs 20–50


def fail(message, code=1):
    print(f"Fehler: {message}", file=sys.stderr)
    sys.exit(code)


# -- 1. embed --------------------------------------------------------------------------------------
def embed_question(question, args, meta):
    if not os.path.isfile(args.model):
        fail(f"Embedding-Modell {args.model} nicht gefunden – einrichten mit: python3 scripts/setup_llama.py "
             f"(oder --model / RAG_EMBED_MODEL)")
    name, size = os.path.basename(args.model), str(os.path.getsize(args.model))
    built, built_size = meta.get("embed_model"), meta.get("embed_model_size")
    if built and (built, built_size) != (name, size):
        if built == name:  # same name, another file: show the sizes, or the message names one model twice
            built, name = f"{built} ({built_size} Bytes)", f"{name} ({size} Bytes)"
        fail(f"der Index wurde mit {built} (Dimension {meta.get('dim')}) gebaut, eingestellt ist "
             f"{name} – dasselbe Modell angeben (--model/RAG_EMBED_MODEL) oder neu bauen: "
             f"python3 build_index.py --rebuild")
    if args.embed_via == "server":
        from rag import llm
        try:
            vec, served = llm.server_embedding(args.server, question)
        except llm.LLMError as exc:
            fail(str(exc))
        if built and served != built:
            fail(f"llama-server rechnet mit {served}, der Index wurde mit {built} gebaut – Server mit demselben "
                 f"Modell starten oder --embed-via binary verwenden")
    else:
        try:
            vec = embedder.embed_texts([question], args.embedding_bin, args.model)[0]
        except embedder.EmbeddingError as exc:
            fail(str(exc))
    if meta.get("dim") and str(len(vec)) != meta["dim"]:
        fail(f"Frage-Vektor hat Dimension {len(vec)}, der Index {meta['dim']} – gleiches Modell verwenden "
             f"oder neu bauen: python3 build_index.py --rebuild")
    return vec


# -- 4. ask ----------------------------------------------------------------------------------------
def trimmed(pieces):
    """The streamed pieces without the answer's leading and trailing whitespace.

    Example: [" Mit", " cm", "\n"] -> "Mit", " cm"
    """
    held, started = "", False  # held: whitespace, shown only if more text follows
    for piece in pieces:
        text = piece.rstrip()
        if text:
            yield held + text if started else text.lstrip()
            held, started = piece[len(text):], True
        else:
            held += piece


def ask_server(question, sources, args, out):
    """Stream the answer to `out` (None = silent); returns (answer, info, prompt, timings)."""
    from rag import llm  # imported here: --retrieve-only needs no HTTP library
    pieces = []
    try:
        info = llm.server_info(args.server)
        chat = info["chat_template"] if args.prompt_format == "auto" else args.prompt_format == "chat"
        prompt = answer.build_prompt(question, sources, chat=chat)
        if args.show_prompt and out:
            print(f"--- Prompt ({'Chat-Template' if chat else 'Completion'}) ---\n{prompt}\n--- Ende Prompt ---\n",
                  file=out)
        timings = {}
        started = time.monotonic()
        for piece in trimmed(llm.stream_answer(args.server, prompt, chat, args.max_tokens, timings)):
            if not pieces:
                timings["first_token_s"] = round(time.monotonic() - started, 3)
            pieces.append(piece)
            if out:
                print(piece, end="", file=out, flush=True)
    except llm.LLMError as exc:
        if out and pieces:
            print(file=out)
        fail(str(exc))
    if out:
        print(file=out)
    return "".join(pieces), info, prompt, timings


# -- output ----------------------------------------------------------------------------------------
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


def print_explain(result, out):
    print(f"Suchtext:  {result.query_text}", file=out)
    print(f"Modus:     {result.mode}; Suchstufe: {result.strategy or 'keine'}; "
          f"Abdeckung {result.coverage:.0%}; bester Kosinus "
          f"{'-' if result.best_cosine is None else f'{result.best_cosine:.3f}'}", file=out)
    if result.weak:
        print(f"Belege zu schwach: {result.weak_reason}", file=out)


def print_context(sources, out):
    for n, s in enumerate(sources, start=1):
        print(f"--- [{n}] {answer.source_label(s)} (Chunk {s.chunk_index}) ---\n{s.content}", file=out)
    print("--- Ende Kontext ---", file=out)


def write_audit(path, entry):
    try:
        audit.append(path, entry)
    except OSError as exc:
        fail(f"Audit-Log {path} nicht schreibbar ({exc.strerror}) – Pfad mit --audit/RAG_AUDIT ändern "
             f"oder --no-audit")


def main():
    parser = argparse.ArgumentParser(
        description="Beantwortet eine Frage aus dem Wiki-Index mit llama-server (RAG ohne Magie).",
        epilog="Umgebungsvariablen: RAG_DB, LLAMA_EMBEDDING, RAG_EMBED_MODEL, LLAMA_SERVER_URL, RAG_TOP_K, "
               "RAG_EMBED_VIA, RAG_MODE, RAG_VECTOR_WEIGHT, RAG_FLOOR_COSINE, RAG_AUDIT.")
    parser.add_argument("question", nargs="?", help="die Frage (in Anführungszeichen)")
    parser.add_argument("--db", default=config.env_str("RAG_DB", "knowledge.db"),
                        help="SQLite-Datei des Index (RAG_DB, Standard: knowledge.db)")
    parser.add_argument("--wiki", default=config.env_str("RAG_WIKI", "wiki"),
                        help="Wiki-Ordner (RAG_WIKI; nur zur Anzeige, Standard: wiki)")
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(),
                        help="Pfad zu llama-embedding (LLAMA_EMBEDDING; Standard: PATH, sonst Setup-Cache)")
    parser.add_argument("--model", default=config.default_model(),
                        help="GGUF-Modell für die Frage-Embeddings, wie beim Index (RAG_EMBED_MODEL)")
    parser.add_argument("--server", default=config.env_str("LLAMA_SERVER_URL", config.DEFAULT_SERVER_URL),
                        help=f"URL von llama-server (LLAMA_SERVER_URL, Standard: {config.DEFAULT_SERVER_URL})")
    parser.add_argument("--embed-via", choices=("binary", "server"), default=config.env_str("RAG_EMBED_VIA", "binary"),
                        help="Frage einbetten mit llama-embedding (binary, Standard) oder mit dem laufenden "
                             "llama-server, gestartet mit --embeddings --pooling mean (server: spart ~1 s; RAG_EMBED_VIA)")
    parser.add_argument("--top-k", type=int, default=config.env_int("RAG_TOP_K", TOP_K),
                        help=f"Anzahl Chunks im Prompt (RAG_TOP_K, Standard: {TOP_K})")
    parser.add_argument("--mode", choices=search.MODES, default=config.env_str("RAG_MODE", "hybrid"),
                        help="Suche: hybrid (Standard), vector oder lexical (RAG_MODE)")
    parser.add_argument("--max-per-file", type=int, default=search.MAX_PER_FILE,
                        help=f"höchstens so viele Chunks einer Datei (Standard: {search.MAX_PER_FILE})")
    parser.add_argument("--floor-cosine", type=float, default=config.env_float("RAG_FLOOR_COSINE", None),
                        help="Kosinus-Schwelle der Relevanzprüfung (RAG_FLOOR_COSINE; Standard: im Index gespeichert)")
    parser.add_argument("--vector-weight", type=float, default=config.env_float("RAG_VECTOR_WEIGHT", None),
                        help=f"Gewicht der Vektorsuche im Hybrid-Modus (RAG_VECTOR_WEIGHT; Standard: im Index "
                             f"gespeichert, sonst {search.VECTOR_WEIGHT})")
    parser.add_argument("--no-floor", action="store_true", help="Relevanzprüfung aus: immer das LLM fragen")
    parser.add_argument("--prompt-format", choices=("auto", "chat", "completion"), default="auto",
                        help="auto: Chat-Template, wenn der Server eines meldet; sonst Completion-Prompt")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS,
                        help=f"maximale Länge der Antwort in Tokens (Standard: {MAX_TOKENS})")
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
    args = parser.parse_args()
    audit_path = args.audit or audit.default_path(args.db)
    if args.audit_show is not None:
        print(audit.show(audit_path, args.audit_show))
        return
    question = (args.question or "").strip()
    if not question:
        fail('keine Frage angegeben – so fragen: python3 ask_rag.py "Wie lege ich eine Mailbox an?"', 2)
    if args.top_k < 1 or args.max_per_file < 1:
        fail("--top-k und --max-per-file müssen mindestens 1 sein", 2)

    try:
        conn = store.connect(args.db)
        meta = store.read_meta(conn)
    except store.StoreError as exc:
        fail(str(exc))
    if not meta.get("dim"):
        fail(f"Index {args.db} ist leer – zuerst bauen mit: python3 build_index.py")
    if args.mode != "vector" and not store.fts_available(conn):
        if args.mode == "lexical":
            fail("der Index hat keine Volltextsuche (SQLite ohne FTS5) – --mode vector verwenden")
        args.mode = "vector"
    timings = {}
    t0 = time.monotonic()
    qvec = embed_question(question, args, meta) if args.mode != "lexical" else None
    timings["embed_s"] = round(time.monotonic() - t0, 3)
    t1 = time.monotonic()
    vector_weight, floor = search.index_settings(meta, args.vector_weight, args.floor_cosine)
    result = search.retrieve(conn, question, qvec, mode=args.mode, top_k=args.top_k,
                             max_per_file=args.max_per_file, floor_cosine=floor, vector_weight=vector_weight)
    timings["retrieve_s"] = round(time.monotonic() - t1, 3)
    if args.no_floor:
        result.weak = False

    out = None if args.json else sys.stdout
    if out and args.explain:
        print_explain(result, out)
    if out and args.show_context:
        print_context(result.sources, out)
    text, info, prompt, citations = None, {}, None, None
    llm_skipped = args.retrieve_only or result.weak or not result.sources
    if not args.retrieve_only and llm_skipped:
        text = answer.NO_INFO
        if out:
            print(text + "  (kein LLM-Aufruf: zu wenig Belege im Wiki; die nächsten Kandidaten:)")
    elif not args.retrieve_only:
        text, info, prompt, llm_timings = ask_server(question, result.sources, args, out)
        timings.update(llm_timings)
        citations = answer.check_citations(text, len(result.sources))

    if args.json:
        print(json.dumps({
            "question": question, "answer": text, "llm_called": not llm_skipped,
            "weak_evidence": result.weak, "mode": result.mode, "strategy": result.strategy,
            "query_text": result.query_text, "coverage": round(result.coverage, 3),
            "best_cosine": None if result.best_cosine is None else round(result.best_cosine, 6),
            "citations": citations, "sources": [s.as_json() for s in result.sources],
            "timings": timings}, ensure_ascii=False))
    else:
        if not result.sources:
            print("Keine passenden Stellen im Wiki gefunden.")
        else:
            print_sources(result, citations, out)
    if text is not None and not args.no_audit:
        write_audit(audit_path, {
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"), "question": question,
            "server": args.server if not llm_skipped else None, "model": info.get("model"),
            "embed_model": meta.get("embed_model"), "mode": result.mode, "strategy": result.strategy,
            "llm_called": not llm_skipped,
            "chunks": [{"path": s.path, "heading": s.heading, "chunk_index": s.chunk_index,
                        "sha256": audit.sha256(s.content), "flags": [f["rule"] for f in s.flags]}
                       for s in result.sources],
            "prompt_sha256": audit.sha256(prompt) if prompt else None, "answer": text,
            "citations": citations, "timings": timings})


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
