"""The command-line flags: those several scripts share, one definition each, so a flag means the
same thing in build_index.py, ask_rag.py and evaluate.py; and all of ask_rag.py's (parse_ask,
settings_from).

    parser = argparse.ArgumentParser()
    add_index(parser)                      # --db         (RAG_DB, Standard: knowledge.db)
    add_embedding(parser, side="index")    # --embedding-bin, --model
    add_embed_server(parser, side="index") # --embed-url, --embed-model-name, --api-key
    parser.parse_args(["--db", "x.db"]).db  # -> "x.db"

`side` says who embeds: "question" (ask_rag.py: one question, the answer server is --server) or
"index" (build_index.py: every chunk, no answer server of its own). The flags are the same; a help
text says what the flag does for that script.

--embed-url has one meaning on both sides: RAG_EMBED_URL, else the answer server. ask_rag.py
leaves it empty and rag/core.py then uses --server (which defaults to LLAMA_SERVER_URL);
build_index.py has no --server, so its answer server is LLAMA_SERVER_URL itself.

parse_ask(["Wie?", "--top-k", "2"]) -> Namespace(question="Wie?", top_k=2, …); settings_from(args)
-> core.Settings.

Does not handle: the flags only build_index.py or evaluate.py has (they stay with that script's
parser).
"""
import argparse
import dataclasses
import os
import sys

from rag import config
from rag import core
from rag.doors import asker
from rag.doors import ratings
from rag.privacy import detect
from rag.privacy import mask as privacy
from rag.search import expand
from rag.search import ranking as search

DB_HELP = ("Index: SQLite-Datei oder PostgreSQL-DSN postgresql://… (RAG_DB, Standard: "
           "knowledge.db)")
BIN_HELP = "Pfad zu llama-embedding (LLAMA_EMBEDDING; Standard: PATH, sonst Setup-Cache)"
MODEL_HELP = {
    "question": "GGUF-Modell für die Frage-Embeddings, wie beim Index (RAG_EMBED_MODEL)",
    "index": "GGUF-Modell für die Embeddings (RAG_EMBED_MODEL; Standard: multilingual-e5-small "
             "aus dem Setup)",
}
EMBED_URL_HELP = {
    "question": "URL des Embedding-Servers für --embed-via server (RAG_EMBED_URL; Standard: "
                "--server)",
    "index": "URL des Embedding-Servers für --embed-via server, z. B. http://127.0.0.1:8080 oder "
             "http://127.0.0.1:11434/v1 (RAG_EMBED_URL, sonst LLAMA_SERVER_URL)",
}
EMBED_MODEL_NAME_HELP = ("Modellname, den der Embedding-Server erwartet (RAG_EMBED_MODEL_NAME; "
                         "Ollama und vLLM brauchen ihn)")
API_KEY_HELP = {  # ask_rag.py sends it to both servers, build_index.py only embeds
    "question": "API-Schlüssel, als Bearer-Token an Chat- und Embedding-Server "
                "(RAG_API_KEY; besser als Variable, Flags sieht jeder in ps)",
    "index": "API-Schlüssel des Embedding-Servers, als Bearer-Token (RAG_API_KEY; besser als "
             "Variable, Flags sieht jeder in ps)",
}


def add_index(parser, help=DB_HELP, from_env=True):
    """--db: the index, a SQLite file or a PostgreSQL DSN; default RAG_DB, else knowledge.db.
    from_env=False leaves it None when the flag is not given (evaluate.py then builds one of its
    own)."""
    parser.add_argument("--db", default=config.env_str("RAG_DB", "knowledge.db") if from_env
                        else None, help=help)


def add_embedding(parser, side="question", bin_help=BIN_HELP, model_help=None):
    """--embedding-bin and --model: llama-embedding and the GGUF that embed, the same for index and
    question."""
    parser.add_argument("--embedding-bin", default=config.default_embedding_bin(), help=bin_help)
    parser.add_argument("--model", default=config.default_model(),
                        help=model_help or MODEL_HELP[side])


def embed_url_default(side):
    """RAG_EMBED_URL, else the answer server: for "question" None (rag/core.py falls back to
    --server), for "index" LLAMA_SERVER_URL.
    Example: only LLAMA_SERVER_URL=http://h:8080 set -> None / "http://h:8080"."""
    fallback = None if side == "question" else config.env_str("LLAMA_SERVER_URL", None)
    return config.env_str("RAG_EMBED_URL", fallback)


def add_embed_server(parser, side="question"):
    """--embed-url, --embed-model-name and --api-key: an OpenAI-compatible embedding server
    (--embed-via server)."""
    parser.add_argument("--embed-url", default=embed_url_default(side), help=EMBED_URL_HELP[side])
    parser.add_argument("--embed-model-name", default=config.env_str("RAG_EMBED_MODEL_NAME", None),
                        help=EMBED_MODEL_NAME_HELP)
    parser.add_argument("--api-key", default=config.env_str("RAG_API_KEY", None),
                        help=API_KEY_HELP[side])


# -- ask_rag.py ------------------------------------------------------------------------------------
# --steps / RAG_STEPS: how-to answers verbatim from the source, or written by the model
STEPS = ("source", "model")
DESCRIPTION = "Beantwortet eine Frage aus dem Wiki-Index mit llama-server (RAG ohne Magie)."
EPILOG = ("Umgebungsvariablen: RAG_DB, LLAMA_EMBEDDING, RAG_EMBED_MODEL, LLAMA_SERVER_URL, "
          "RAG_TOP_K, RAG_EMBED_VIA, RAG_EMBED_URL, RAG_EMBED_MODEL_NAME, RAG_API_KEY, "
          "RAG_LLM_MODEL_NAME, RAG_MODE, RAG_VECTOR_WEIGHT, RAG_FLOOR_COSINE, RAG_AUDIT, RAG_PII, "
          "RAG_PII_KINDS, RAG_PII_KEEP, RAG_UNDER, RAG_GUARD, RAG_ANN, RAG_STEPS, RAG_EXPAND, "
          "RAG_EXPAND_METHOD, RAG_REWRITE; für --serve: RAG_SERVE_HOST, RAG_SERVE_PORT, "
          "RAG_SERVE_KEY, RAG_SERVE_SLOTS, RAG_SERVE_QUEUE, RAG_USERS, RAG_TRUST_PROXY_HEADER, "
          "RAG_PROXY_FROM.")


def parse_ask(argv=None):
    """ask_rag.py's flags, checked (a bad value: one German line, exit code 2)."""
    parser = argparse.ArgumentParser(description=DESCRIPTION, epilog=EPILOG)
    for add in (add_ask_models, add_ranking, add_answering, add_output, add_protection, add_doors,
                asker.add_flags, ratings.add_flags):
        add(parser)
    args = parser.parse_args(joined_kinds(sys.argv[1:] if argv is None else argv))
    # an OpenAI base URL (…/v1) works too
    args.server = args.server.rstrip("/").removesuffix("/v1")
    check_ask(args)
    return args


def add_ask_models(parser):
    """The question, the index and the two model servers: embedder and answer model."""
    parser.add_argument("question", nargs="?", help="die Frage (in Anführungszeichen)")
    add_index(parser)
    parser.add_argument("--ann", action="store_true", default=os.environ.get("RAG_ANN") == "1",
                        help="PostgreSQL: Vektorsuche über den HNSW-Index, Kandidaten exakt "
                             "nachgerechnet (RAG_ANN=1; Standard: ab einer gemessenen Größe von "
                             "selbst)")
    parser.add_argument("--wiki", default=config.env_str("RAG_WIKI", "wiki"),
                        help="Wiki-Ordner (RAG_WIKI; nur zur Anzeige, Standard: wiki)")
    add_embedding(parser)
    parser.add_argument("--server",
                        default=config.env_str("LLAMA_SERVER_URL", config.DEFAULT_SERVER_URL),
                        help=f"URL von llama-server (LLAMA_SERVER_URL, "
                             f"Standard: {config.DEFAULT_SERVER_URL})")
    # RAG_EMBED_VIA=auto/spawn (build_index.py): binary
    parser.add_argument("--embed-via", choices=("binary", "server"),
                        default="server" if os.environ.get("RAG_EMBED_VIA") == "server"
                        else "binary",
                        help="Frage einbetten mit llama-embedding (binary, Standard) oder über "
                             "einen laufenden OpenAI-kompatiblen /v1/embeddings-Endpunkt, z. B. "
                             "llama-server mit --embeddings --pooling mean (server: spart ~0,5 s; "
                             "RAG_EMBED_VIA)")
    add_embed_server(parser)
    parser.add_argument("--llm-model-name", default=os.environ.get("RAG_LLM_MODEL_NAME"),
                        help="Modellname für die Antwort, als \"model\" gesendet "
                             "(RAG_LLM_MODEL_NAME; Ollama und vLLM brauchen ihn)")


def add_ranking(parser):
    """How the chunks are ranked and when the evidence counts as too weak
    (rag/search/ranking.py)."""
    parser.add_argument("--top-k", type=int, default=config.env_int("RAG_TOP_K", core.TOP_K),
                        help=f"Anzahl Chunks im Prompt (RAG_TOP_K, Standard: {core.TOP_K})")
    parser.add_argument("--fact-sources", type=int,
                        default=config.env_int("RAG_FACT_SOURCES", core.FACT_SOURCES),
                        help="so viele der gefundenen Quellen liest das Modell für eine "
                             "Faktenfrage (die beste, dann die, deren bester Satz die meisten "
                             "Wörter der Frage enthält); die übrigen "
                             f"stehen unter „Siehe auch“ (RAG_FACT_SOURCES, "
                             f"Standard: {core.FACT_SOURCES})")
    parser.add_argument("--mode", choices=search.MODES,
                        default=config.env_str("RAG_MODE", "hybrid"),
                        help="Suche: hybrid (Standard), vector oder lexical (RAG_MODE)")
    parser.add_argument("--max-per-file", type=int, default=search.MAX_PER_FILE,
                        help=f"höchstens so viele Chunks einer Datei "
                             f"(Standard: {search.MAX_PER_FILE})")
    parser.add_argument("--reject-cosine", type=float,
                        default=config.env_float("RAG_REJECT_COSINE", None),
                        help="unter diesem besten Kosinus gilt die Frage als nicht im Wiki, auch "
                             "wenn Wörter passen (RAG_REJECT_COSINE; Standard: im Index "
                             "gespeichert, sonst je Modell gemessen)")
    parser.add_argument("--floor-cosine", type=float,
                        default=config.env_float("RAG_FLOOR_COSINE", None),
                        help="Kosinus-Schwelle der Relevanzprüfung (RAG_FLOOR_COSINE; Standard: "
                             "im Index gespeichert)")
    parser.add_argument("--vector-weight", type=float,
                        default=config.env_float("RAG_VECTOR_WEIGHT", None),
                        help="Gewicht der Vektorsuche im Hybrid-Modus (RAG_VECTOR_WEIGHT; "
                             "Standard: im Index gespeichert, sonst je Modell gemessen)")
    parser.add_argument("--no-floor", action="store_true",
                        help="Relevanzprüfung aus: immer das LLM fragen")


def add_answering(parser):
    """How the answer is written: prompt, length, answerability, steps, folder, expansion,
    follow-ups."""
    parser.add_argument("--prompt-format", choices=("auto", "chat", "completion"), default="auto",
                        help="auto: Chat-Template, wenn der Server eines meldet; sonst "
                             "Completion-Prompt")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help=f"maximale Länge der Antwort in Tokens "
                             f"(Standard: {core.MAX_TOKENS['fact']} für "
                             f"Faktenfragen, {core.MAX_TOKENS['howto']} für Schritte)")
    parser.add_argument("--answer-threshold", type=float,
                        default=config.env_float("RAG_ANSWER_THRESHOLD", None),
                        help="ablehnen, wenn das Antwortmodell mit weniger als dieser "
                             "Wahrscheinlichkeit „ja, die Quellen beantworten die Frage“ sagt "
                             "(RAG_ANSWER_THRESHOLD; Standard: je Modell gemessen, 0 = Prüfung "
                             "aus)")
    parser.add_argument("--whole-chunks", action="store_true",
                        default=bool(os.environ.get("RAG_WHOLE_CHUNKS")), help="die Quellen ganz "
                             "in den Prompt (wie im Artikel), statt nur der Sätze, Schritte und "
                             "Tabellenzeilen, die zur Frage passen (RAG_WHOLE_CHUNKS=1)")
    parser.add_argument("--steps", choices=STEPS, default=config.env_str("RAG_STEPS", "source"),
                        help="How-to-Fragen: source übernimmt den passenden Abschnitt der Quelle "
                             "wörtlich, das Modell prüft nur, ob die Quellen die Frage "
                             "beantworten (Standard); model lässt das Modell die Schritte "
                             "schreiben (RAG_STEPS)")
    parser.add_argument("--under", default=os.environ.get("RAG_UNDER"), metavar="ORDNER",
                        help="nur Seiten unterhalb dieses Wiki-Ordners durchsuchen, z. B. mail/ "
                             "(RAG_UNDER)")
    parser.add_argument("--expand", action="store_true",
                        default=os.environ.get("RAG_EXPAND") == "1", help="Frage erweitern: das "
                             "Antwortmodell (derselbe llama-server) hilft suchen, siehe "
                             "--expand-method (RAG_EXPAND=1; auch mit --retrieve-only, dann fragt "
                             "es den Server nur danach; rag/search/expand.py)")
    parser.add_argument("--expand-method", choices=expand.METHODS,
                        default=config.env_str("RAG_EXPAND_METHOD", expand.METHOD),
                        help=f"mit --expand: phrases = Suchbegriffe in der Sprache des Wikis, "
                             f"zusätzlich gesucht; choose = das Modell wählt unter den "
                             f"Überschriften der ersten Treffer; both = beides "
                             f"(RAG_EXPAND_METHOD, Standard: {expand.METHOD})")
    parser.add_argument("--chat", action="store_true",
                        help="Gespräch im Terminal: eine Frage nach der anderen; eine Folgefrage "
                             "(„Und wie lösche ich sie wieder?“) wird zusammen mit der Frage "
                             "davor gesucht (→ Gesucht: …); leere Zeile oder Strg-D beendet")
    parser.add_argument("--rewrite", action="store_true",
                        default=os.environ.get("RAG_REWRITE") == "1",
                        help="Folgefragen zusätzlich vom Antwortmodell umschreiben lassen, auch "
                             "in --serve (RAG_REWRITE=1; mit dem 1,5B-Modell gemessen schlechter, "
                             "docs/suche.md)")


def add_output(parser):
    """What the terminal shows and what the audit log keeps."""
    parser.add_argument("--retrieve-only", action="store_true",
                        help="nur suchen und Quellen zeigen, kein LLM")
    parser.add_argument("--json", action="store_true", help="genau ein JSON-Objekt ausgeben")
    parser.add_argument("--explain", action="store_true",
                        help="jede Stufe der Frage zeigen: gefunden, erweitert, gewählt, "
                             "beurteilt, gefragt, geprüft; ohne Frage: die Tabelle der "
                             "abgestimmten Zahlen mit Herkunft (rag/tuned.py)")
    parser.add_argument("--show-prompt", action="store_true",
                        help="den Prompt vor der Antwort zeigen")
    parser.add_argument("--show-context", action="store_true", help="die Chunks im Wortlaut zeigen")
    parser.add_argument("--audit", default=os.environ.get("RAG_AUDIT"),
                        help="Audit-Log (JSON Lines; RAG_AUDIT, Standard: neben dem Index)")
    parser.add_argument("--no-audit", action="store_true", help="nichts ins Audit-Log schreiben")
    parser.add_argument("--audit-show", type=int, metavar="N",
                        help="Eintrag N des Audit-Logs lesbar zeigen (1 = ältester, -1 = "
                             "neuester)")
    parser.add_argument("--audit-days", type=int, default=config.env_int("RAG_AUDIT_DAYS", None),
                        metavar="N", help="Audit-Zeilen älter als N Tage löschen "
                                          "(RAG_AUDIT_DAYS; Standard: behalten)")
    parser.add_argument("--audit-no-text", action="store_true",
                        default=os.environ.get("RAG_AUDIT_NO_TEXT") == "1",
                        help="kein Text von Frage und Antwort ins Audit-Log, nur Hashes und "
                             "Prüfungen (RAG_AUDIT_NO_TEXT=1)")
    # the pseudonym's key: never a flag (ps)
    parser.set_defaults(audit_secret=os.environ.get("RAG_AUDIT_SECRET"))


def add_protection(parser):
    """Personal data and instructions in the wiki text (rag/privacy/mask.py,
    rag/answer/guard.py)."""
    parser.add_argument("--pii", default=config.env_str("RAG_PII", "mask"),
                        help="personenbezogene Daten (IBAN, Telefon, Steuer-ID …) in Prompt, "
                             "Ausgabe und Audit-Log: mask ersetzt sie durch [IBAN 1] usw. "
                             "(Standard), flag markiert die Quellen, off (RAG_PII; "
                             "rag/privacy/mask.py)")
    parser.add_argument("--pii-kinds", default=os.environ.get("RAG_PII_KINDS", ""), metavar="ARTEN",
                        help="welche Arten maskiert werden: \"-ADRESSE,-PLZ-ORT\" alle außer "
                             "diesen, \"IBAN,TELEFON,NAME\" nur diese (RAG_PII_KINDS; Standard: "
                             "alle: "
                             + ", ".join(detect.KINDS) + ")")
    parser.add_argument("--pii-keep", default=os.environ.get("RAG_PII_KEEP", ""), metavar="WERTE",
                        help="Werte oder Muster, die lesbar bleiben, durch Kommas getrennt, z. "
                             "B. \"040 66969*,NAME:Henrik Lorenzen\" (RAG_PII_KEEP; --explain "
                             "zeigt, was behalten wurde)")
    parser.add_argument("--guard", choices=("on", "off"), default=config.env_str("RAG_GUARD", "on"),
                        help="Schutz vor Anweisungen im Wiki-Text (rag/answer/guard.py): on "
                             "entfernt sie aus dem Prompt und prüft Links, Adressen, "
                             "Telefonnummern und Befehle der Antwort (Standard); off nur zum "
                             "Messen (RAG_GUARD)")


def add_doors(parser):
    """The long-running doors instead of one question: --serve (web page and API) and --mcp."""
    parser.add_argument("--serve", action="store_true",
                        help="Web-Seite und OpenAI-kompatible API starten (rag/doors/web.py), "
                             "statt eine Frage zu beantworten")
    parser.add_argument("--host", default=config.env_str("RAG_SERVE_HOST", "127.0.0.1"),
                        help="Adresse für --serve (RAG_SERVE_HOST, Standard: 127.0.0.1; eine "
                             "andere nur mit --serve-key)")
    parser.add_argument("--port", type=int, default=config.env_int("RAG_SERVE_PORT", 8090),
                        help="Port für --serve (RAG_SERVE_PORT, Standard: 8090; 0 = ein freier)")
    parser.add_argument("--serve-key", default=os.environ.get("RAG_SERVE_KEY"),
                        help="Schlüssel, den jede Anfrage an --serve als Bearer-Token braucht "
                             "(RAG_SERVE_KEY; nicht derselbe wie --api-key, der an die "
                             "Modell-Server geht)")
    parser.add_argument("--serve-slots", type=int, default=config.env_int("RAG_SERVE_SLOTS", None),
                        metavar="N", help="höchstens N Fragen gleichzeitig (RAG_SERVE_SLOTS; "
                                          "Standard: Slots des llama-server)")
    parser.add_argument("--serve-queue", type=int, default=config.env_int("RAG_SERVE_QUEUE", None),
                        metavar="N", help="so viele Fragen warten auf einen Platz, weitere "
                             "bekommen sofort „ausgelastet“ (RAG_SERVE_QUEUE; Standard: so "
                             "viele wie --serve-slots)")
    parser.add_argument("--mcp", action="store_true",
                        help="als MCP-Server über stdin/stdout laufen (Werkzeuge search_wiki, "
                             "ask_wiki; rag/doors/mcp_server.py)")


def usage_error(message):
    """A value argparse cannot check (an environment variable, a range): one German line, exit code
    2."""
    print(f"Fehler: {message}", file=sys.stderr)
    sys.exit(2)


def check_ask(args):
    """Check what argparse cannot and turn --expand, --pii-kinds and --pii-keep into what the core
    takes."""
    if args.steps not in STEPS:  # argparse checks the choices of the flag only
        usage_error(f"RAG_STEPS={args.steps!r} gibt es nicht – source oder model angeben")
    # argparse checks the choices of a flag, not of RAG_EXPAND_METHOD
    if args.expand_method not in expand.METHODS:
        usage_error(f"RAG_EXPAND_METHOD={args.expand_method!r} gibt es nicht "
                    f"– {', '.join(expand.METHODS)} angeben")
    # core.Settings.expand: the method, or off
    args.expand = args.expand_method if args.expand else None
    if args.pii not in privacy.MODES:
        usage_error(f"--pii/RAG_PII={args.pii!r} gibt es nicht – mask, flag oder off angeben")
    try:
        args.pii_kinds, args.pii_keep = (privacy.parse_kinds(args.pii_kinds),
                                         tuple(privacy.parse_keep(args.pii_keep)))
    except ValueError as exc:
        usage_error(f"--pii-kinds/RAG_PII_KINDS: {exc} – z. B. -ADRESSE,-PLZ-ORT oder "
                    f"IBAN,TELEFON,NAME")
    if args.top_k < 1 or args.max_per_file < 1:
        usage_error("--top-k und --max-per-file müssen mindestens 1 sein")
    if (args.serve_slots is not None and args.serve_slots < 1) or (args.serve_queue or 0) < 0:
        usage_error("--serve-slots muss mindestens 1 sein, --serve-queue mindestens 0")
    if args.audit_days is not None and args.audit_days < 1:
        usage_error("--audit-days/RAG_AUDIT_DAYS muss mindestens 1 sein")
    if not 0 <= args.port <= 65535:
        usage_error(f"--port {args.port} gibt es nicht – 1 bis 65535 angeben (0 = ein freier)")


def joined_kinds(argv):
    """argparse takes "-ADRESSE" for an option: ["--pii-kinds", "-ADRESSE"]
    -> ["--pii-kinds=-ADRESSE"]"""
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
