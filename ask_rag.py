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

from rag import answer, audit, config, embedder, german, privacy, search, store

TOP_K = 4  # chunks in the prompt (as in the post)
MAX_TOKENS = 160  # answer length limit; a one-line answer of the plain prompt needs 20–50


def fail(message, code=1):
    print(f"Fehler: {message}", file=sys.stderr)
    sys.exit(code)


# -- 1. embed --------------------------------------------------------------------------------------
def embed_question(question, args, meta):
    built, built_size = meta.get("embed_model"), meta.get("embed_model_size")
    question = embedder.stored_query_prefix(meta, args.model) + question  # e5: "query: …"
    if args.embed_via == "server":  # any OpenAI-compatible /v1/embeddings (rag/embed_client.py)
        from rag import embed_client
        url = args.embed_url or args.server
        try:
            [vec], served = embed_client.embed_texts([question], url, args.embed_model_name, args.api_key)
        except embedder.EmbeddingError as exc:
            fail(str(exc))
        if built and served != built:
            fail(f"der Embedding-Server unter {url} rechnet mit {served or 'unbekanntem Modell'}, der Index wurde mit "
                 f"{built} gebaut – Server mit demselben Modell starten (--embed-model-name) oder neu bauen: "
                 f"python3 build_index.py --rebuild --embed-via server")
        return check_dim(vec, meta)
    if not os.path.isfile(args.model):
        fail(f"Embedding-Modell {args.model} nicht gefunden – einrichten mit: python3 scripts/setup_llama.py "
             f"(oder --model / RAG_EMBED_MODEL)")
    name, size = os.path.basename(args.model), str(os.path.getsize(args.model))
    if built and (built != name or (built_size and built_size != size)):  # size unknown: index built by a server
        if built == name:  # same name, another file: show the sizes, or the message names one model twice
            built, name = f"{built} ({built_size} Bytes)", f"{name} ({size} Bytes)"
        fail(f"der Index wurde mit {built} (Dimension {meta.get('dim')}) gebaut, eingestellt ist "
             f"{name} – dasselbe Modell angeben (--model/RAG_EMBED_MODEL) oder neu bauen: "
             f"python3 build_index.py --rebuild")
    else:
        try:
            vec = embedder.embed_texts([question], args.embedding_bin, args.model)[0]
        except embedder.EmbeddingError as exc:
            fail(str(exc))
    return check_dim(vec, meta)


def check_dim(vec, meta):
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
        info = llm.server_info(args.server, args.api_key, args.llm_model_name)
        chat = info["chat_template"] if args.prompt_format == "auto" else args.prompt_format == "chat"
        prompt = answer.build_prompt(question, sources, chat=chat)
        if args.show_prompt and out:
            print(f"--- Prompt ({'Chat-Template' if chat else 'Completion'}) ---\n{prompt}\n--- Ende Prompt ---\n",
                  file=out)
        timings = {}
        started = time.monotonic()
        for piece in trimmed(llm.stream_answer(args.server, prompt, chat, args.max_tokens, timings,
                                               api_key=args.api_key, model_name=args.llm_model_name)):
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
    if result.scan:  # which way rag/vectors.py scanned the vectors
        processes = f", {result.scan_processes} Prozesse" if (result.scan_processes or 1) > 1 else ""
        print(f"Vektorsuche: {result.scan}{processes} (exakt, alle Vektoren)", file=out)
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
               "RAG_EMBED_VIA, RAG_EMBED_URL, RAG_EMBED_MODEL_NAME, RAG_API_KEY, RAG_LLM_MODEL_NAME, "
               "RAG_MODE, RAG_VECTOR_WEIGHT, RAG_FLOOR_COSINE, RAG_AUDIT, RAG_PII.")
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
    parser.add_argument("--top-k", type=int, default=config.env_int("RAG_TOP_K", TOP_K),
                        help=f"Anzahl Chunks im Prompt (RAG_TOP_K, Standard: {TOP_K})")
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
    parser.add_argument("--pii", default=config.env_str("RAG_PII", "mask"),
                        help="personenbezogene Daten (IBAN, Telefon, Steuer-ID …) in Prompt, Ausgabe und Audit-Log: "
                             "mask ersetzt sie durch [IBAN 1] usw. (Standard), flag markiert die Quellen, off "
                             "(RAG_PII; rag/privacy.py)")
    args = parser.parse_args()
    args.server = args.server.rstrip("/").removesuffix("/v1")  # an OpenAI base URL (…/v1) works too
    if args.pii not in privacy.MODES:
        fail(f"--pii/RAG_PII={args.pii!r} gibt es nicht – mask, flag oder off angeben", 2)
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
    vector_weight, floor, reject = search.index_settings(meta, args.vector_weight, args.floor_cosine,
                                                         args.reject_cosine)
    result = search.retrieve(conn, question, qvec, mode=args.mode, top_k=args.top_k,
                             max_per_file=args.max_per_file, floor_cosine=floor, vector_weight=vector_weight,
                             reject_cosine=reject)
    timings["retrieve_s"] = round(time.monotonic() - t1, 3)
    if args.no_floor:
        result.weak = False
    raw_sources = result.sources  # the audit log hashes the wiki text as it is
    question, result.sources, masker = privacy.protect(question, result.sources, args.pii)  # copies
    if args.pii == "mask":  # the search text for --explain/--json, from the masked question
        result.query_text = " ".join(german.index_text(question, store.load_vocab(conn)).split())

    out = None if args.json else sys.stdout
    if out and args.explain:
        print_explain(result, out)
        if args.mode != "lexical":
            prefix = embedder.stored_query_prefix(meta, args.model)
            print(f'Präfix:    "{prefix}" (vor der Frage, nur fürs Embedding)', file=out)
    if out and args.show_context:
        print_context(result.sources, out)
    text, info, prompt, citations = None, {}, None, None
    unsupported = None  # a list once the LLM answered (rag/factcheck.py)
    llm_skipped = args.retrieve_only or result.weak or not result.sources
    if not args.retrieve_only and llm_skipped:
        text = answer.NO_INFO
        if out:
            print(text + "  (kein LLM-Aufruf: zu wenig Belege im Wiki; die nächsten Kandidaten:)")
    elif not args.retrieve_only:
        text, info, prompt, llm_timings = ask_server(question, result.sources, args, out)
        timings.update(llm_timings)
        citations = answer.check_citations(text, len(result.sources))
        from rag import factcheck  # only after an answer: --retrieve-only does not load it
        unsupported = [masker.mask(claim) for claim in  # numbers, dates, §, commands no cited source has
                       factcheck.unsupported_in(text, result.sources, citations["valid"], question)]
    text = masker.mask(text)  # mask mode: a value the model wrote itself stays out of --json and the log

    if args.json:
        print(json.dumps({
            "question": question, "answer": text, "llm_called": not llm_skipped,
            "weak_evidence": result.weak, "mode": result.mode, "strategy": result.strategy,
            "query_text": result.query_text, "coverage": round(result.coverage, 3),
            "best_cosine": None if result.best_cosine is None else round(result.best_cosine, 6),
            "scan": result.scan, "scan_processes": result.scan_processes,
            "citations": citations, "unsupported": unsupported, "sources": [s.as_json() for s in result.sources],
            "timings": timings}, ensure_ascii=False))
    else:
        if not result.sources:
            print("Keine passenden Stellen im Wiki gefunden.")
        else:
            print_sources(result, citations, out)
            if unsupported:
                print(factcheck.describe(unsupported), file=out)
    if text is not None and not args.no_audit:
        write_audit(audit_path, {
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"), "question": question,
            "server": args.server if not llm_skipped else None, "model": info.get("model"),
            "embed_model": meta.get("embed_model"), "mode": result.mode, "strategy": result.strategy,
            "llm_called": not llm_skipped,
            "chunks": [{"path": s.path, "heading": s.heading, "chunk_index": s.chunk_index,
                        "sha256": audit.sha256(raw.content), "flags": [f["rule"] for f in s.flags]}
                       for s, raw in zip(result.sources, raw_sources)],
            "prompt_sha256": audit.sha256(prompt) if prompt else None, "answer": text,
            "citations": citations, "unsupported": unsupported, "timings": timings})


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
