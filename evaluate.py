#!/usr/bin/env python3
"""Measure retrieval quality on a question set: Recall@1, Recall@5, MRR@10, honest refusals.

    python3 evaluate.py                                  # eval/questions.jsonl over knowledge.db
    python3 evaluate.py --json --modes hybrid,lexical
    python3 evaluate.py --expand --questions eval/questions_layperson.jsonl   # without and with --expand
    python3 evaluate.py --followups                     # follow-ups alone, rewritten, written by hand

Question file: JSON Lines, {"question": "...", "expected": [{"file": "mail/x.md", "heading": "Quota"}]};
an empty "expected" means "not in the wiki". A retrieved chunk matches an expected entry when its
path is the file and the heading is one of the chunk's heading path parts (or is empty).

Refused = the relevance floor said "weak evidence" (ask_rag.py would not call the LLM).
All questions are embedded in one llama-embedding call; times per mode exclude that call.

The measurements live in eval/measure/ (one module each); this script parses the flags and dispatches.

Does not handle: judging answers (only retrieval is measured here).
"""
import argparse
import os
import signal
import sys

from rag import config
from rag.doors import flags
from rag.search import expand
from rag.search import ranking as search

from eval.measure import answerable, answers, factcheck, finalists, followups, injections, judge, pii, retrieval
from eval.measure import sections
from eval.measure.answers import ANSWER_OUT, ANSWER_QUESTIONS
from eval.measure.followups import FOLLOWUPS
from eval.measure.injections import INJECTION_OUT, INJECTIONS


# -- flags ------------------------------------------------------------------------------------------
def add_search_flags(parser):
    """The question set, the index, the embedder and how the search ranks (the default measurement)."""
    parser.add_argument("--questions", default="eval/questions.jsonl", help="JSON-Lines-Datei mit Fragen")
    flags.add_index(parser, help="Index (RAG_DB, Standard: knowledge.db; mit --answers: frisch gebaut)",
                    from_env=False)
    flags.add_embedding(parser, bin_help="llama-embedding (LLAMA_EMBEDDING)", model_help="Embedding-Modell (RAG_EMBED_MODEL)")
    parser.add_argument("--modes", help="Modi, kommagetrennt (Standard: hybrid,vector,lexical; mit --expand und "
                                        "--followups: hybrid)")
    parser.add_argument("--reject-cosine", type=float, default=config.env_float("RAG_REJECT_COSINE", None),
                        help="Kosinus, unter dem eine Frage abgelehnt wird (Standard: im Index gespeichert)")
    parser.add_argument("--floor-cosine", type=float, default=config.env_float("RAG_FLOOR_COSINE", None),
                        help="Kosinus-Schwelle (Standard: im Index gespeichert)")
    parser.add_argument("--vector-weight", type=float, default=config.env_float("RAG_VECTOR_WEIGHT", None),
                        help="Gewicht der Vektor-Rangliste im Hybrid-Modus (RAG_VECTOR_WEIGHT; Standard: im Index "
                             "gespeichert, sonst je Modell gemessen)")
    parser.add_argument("--max-per-file", type=int, default=search.MAX_PER_FILE,
                        help=f"höchstens so viele Chunks einer Datei (Standard: {search.MAX_PER_FILE}) …")
    parser.add_argument("--comparable", type=float, default=search.COMPARABLE,
                        help=f"… solange eine andere Datei einen Kandidaten mit mindestens diesem Anteil des "
                             f"Scores hat (Standard: {search.COMPARABLE}; 0 = feste Grenze)")
    parser.add_argument("--misses", action="store_true", help="Fragen ohne Treffer auf Rang 1 auflisten")
    parser.add_argument("--tune", action="store_true",
                        help="Vektor-Gewicht und Kosinus-Schwelle für dieses Modell messen")
    parser.add_argument("--store", action="store_true",
                        help="mit --tune: die gemessenen Werte im Index speichern (ask_rag.py nutzt sie)")
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")


def add_check_flags(parser):
    """--pii and --factcheck: no index, no model."""
    parser.add_argument("--pii", nargs="?", const="eval/pii.jsonl", metavar="DATEI",
                        help="statt der Suche die Erkennung personenbezogener Daten messen (rag/privacy/mask.py): "
                             "Präzision und Recall je Art über Zeilen {\"text\", \"entities\": [{\"kind\", \"value\"}], "
                             "\"off\": [Arten, die für diesen Text abgeschaltet sind]}; Standard-Datei eval/pii.jsonl, "
                             "kein Index nötig")
    parser.add_argument("--factcheck", nargs="?", const="eval/factcheck.jsonl", metavar="DATEI",
                        help="statt der Suche den Faktencheck messen (rag/check/factcheck.py): "
                             "Anteil erkannter falscher und fälschlich markierter richtiger "
                             "Antworten; Standard-Datei eval/factcheck.jsonl, kein Index nötig")
    parser.add_argument("--sections", action="store_true",
                        help="statt der Suche messen, welchen Abschnitt eine How-to-Antwort wörtlich zeigt "
                             "(rag/answer/choose.py gegen bisher): je How-to-Zeile eines Antwort-Satzes richtig, unter "
                             "den Quellen überhaupt, mit „Siehe auch“; mehrere Sätze: --questions a,b --db a.db,b.db; "
                             "mit --tune die Gewichte per Raster über alle Sätze wählen; kein Antwortmodell nötig")
    parser.add_argument("--finalists", action="store_true",
                        help="die zweite Stufe messen (rag/search/finalists.py): je How-to- und Faktenzeile, ob "
                             "der richtige Abschnitt unter den 4 Quellen ist, vorher und nachher, Decke unter 10/20, "
                             "je Satz mit Gewichten, die ohne diesen Satz gefittet sind; --questions a,b --db a.db,b.db")
    parser.add_argument("--judge", action="store_true",
                        help="messen, wie das Antwortmodell die Finalisten einer How-to-Antwort beurteilt "
                             "(rag/answer/judge.py): richtig gedruckt, fälschlich und richtig abgelehnt, Tokens, je "
                             "Satz; --questions a,b --db a.db,b.db; mit --tune Schwelle und Finalisten über alle Sätze")


def add_answer_flags(parser):
    """--answers and --answerable: the real answer model over a freshly built index."""
    parser.add_argument("--answers", action="store_true",
                        help="Antworten messen: jede Frage aus --answer-questions mit ask_rag.py --json gegen einen "
                             "echten llama-server mit dem Antwortmodell (2 Kerne: ~15 s je Frage)")
    parser.add_argument("--answerable", action="store_true",
                        help="nur die Beantwortbarkeits-Prüfung messen (P(ja) des Antwortmodells je Frage, AUC, "
                             "Ablehnungen je Schwelle); mit --tune die Schwelle wählen, mit --store speichern")
    parser.add_argument("--answer-threshold", type=float, help="mit --answerable: diese Schwelle auswerten")
    parser.add_argument("--llm-model-name", help="mit --answerable: Name des Antwortmodells (Standard: vom Server)")
    parser.add_argument("--wiki", default=config.env_str("RAG_WIKI", "wiki"),
                        help="mit --answers/--answerable: Ordner, über den der frische Index gebaut wird "
                             "(Standard: wiki; z. B. ../shared/corpora/iobroker-de)")
    parser.add_argument("--answer-questions", default=ANSWER_QUESTIONS,
                        help=f"mit --answers: Fragen mit Schlüsselfakten (Standard: {ANSWER_QUESTIONS}); mit "
                             f"--answerable auch mehrere, durch Kommas getrennt, mit je einem Index in --db")
    parser.add_argument("--limit", type=int, help="mit --answers/--injections: nur N Fragen, gleichmäßig verteilt")
    parser.add_argument("--out", help=f"mit --answers/--injections: jede Antwort als JSON Lines (Standard: "
                                      f"{ANSWER_OUT} bzw. {INJECTION_OUT})")
    parser.add_argument("--server", help="mit --answers/--injections/--expand/--followups: laufenden llama-server "
                                         "nutzen statt einen zu starten")
    parser.add_argument("--llm-model", help="mit --answers/--injections/--expand/--followups: GGUF-Antwortmodell "
                                            "(Standard: RAG_LLM_MODEL, sonst Setup)")
    parser.add_argument("--top-k", type=int, help="mit --answers: an ask_rag.py weitergeben")


def add_model_flags(parser):
    """--injections, --expand, --followups and what they share with --answers."""
    parser.add_argument("--injections", nargs="?", const=INJECTIONS, metavar="DATEI",
                        help=f"Angriffe messen (Standard-Datei {INJECTIONS}): jeder Fall auf einer eigenen Kopie des "
                             f"Wikis, inkrementell aus einem Basis-Index gebaut, gefragt über ask_rag.py --json gegen "
                             f"einen echten llama-server; Erfolgsquote der Angriffe und beantwortete Fakten je Kategorie")
    parser.add_argument("--expand", action="store_true",
                        help="jede Frage ohne und mit Erweiterung messen (rag/search/expand.py, --expand-method); startet "
                             "llama-server mit dem Antwortmodell (oder --server)")
    parser.add_argument("--expand-method", choices=expand.METHODS, default=expand.METHOD,
                        help=f"mit --expand: phrases, choose oder both, wie ask_rag.py (Standard: {expand.METHOD})")
    parser.add_argument("--followups", nargs="?", const=FOLLOWUPS, metavar="DATEI",
                        help=f"Folgefragen messen: allein, umgeschrieben (mit der ersten Frage als Verlauf) und von "
                             f"Hand eigenständig; mit --expand auch umgeschrieben und erweitert; zeigt jede "
                             f"umgeschriebene Frage (Standard-Datei {FOLLOWUPS})")
    parser.add_argument("--ids", help="mit --injections: nur diese Fälle, kommagetrennt (inj-01,inj-14)")
    parser.add_argument("--rescore", metavar="DATEI",
                        help="mit --answers/--injections: keine Fragen stellen, die Antworten einer früheren "
                             "--out-Datei neu bewerten")


def parse_args():
    parser = argparse.ArgumentParser(description="Misst die Suchqualität auf einem Fragenkatalog.")
    for add in (add_search_flags, add_check_flags, add_answer_flags, add_model_flags):
        add(parser)
    args = parser.parse_args()
    args.db_given = args.db is not None or bool(os.environ.get("RAG_DB"))
    args.db = args.db or config.env_str("RAG_DB", "knowledge.db")
    return args


# -- dispatch ---------------------------------------------------------------------------------------
def main():
    # SIGTERM (kill, a CI timeout) unwinds like Ctrl-C: the finally blocks stop the llama-server this run started
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    args = parse_args()
    if args.answerable:
        return answerable.run_answerable(args, args.db_given)
    if args.answers:
        args.out = args.out or ANSWER_OUT
        return answers.run_answers(args, args.db_given)
    if args.injections:
        return injections.run_injections(args, args.db_given)
    if args.factcheck:
        return factcheck.run_factcheck(args.factcheck, args.json)
    if args.pii:
        return pii.run_pii(args)
    if args.sections:
        return sections.run_sections(args)
    if args.finalists:
        return finalists.run_finalists(args)
    if args.judge:
        return judge.run_judge(args)
    modes = retrieval.parse_modes(args.modes, "hybrid" if args.expand or args.followups else "hybrid,vector,lexical")
    items = retrieval.load_questions(args.questions)
    conn, meta, floor, reject = retrieval.open_index(args)
    if args.followups:
        return followups.run_followups(args, conn, meta, modes, floor, reject)
    if args.expand:
        return followups.run_expand(args, conn, meta, items, modes, floor, reject)
    return retrieval.run_retrieval(args, conn, meta, items, modes, floor, reject)


if __name__ == "__main__":
    main()
