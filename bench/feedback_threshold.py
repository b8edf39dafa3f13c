"""bench/feedback.py --threshold: which cosine separates topics when the report groups refused
questions. TOPICS (six topics the sample wiki does not answer, five wordings each) are embedded
with the real model and grouped at thresholds 0.80 … 0.96; pair precision, recall and F1 against
the topics. The best F1 (ties: the higher threshold) goes into rag/tuned.toml
(clusters.THRESHOLDS).

Does not handle: other embedding models than the set-up one.
"""
import os

import common
from common import ROOT

from rag import config, core  # noqa: E402  (common puts ROOT on sys.path)
from rag.report import clusters

TOPICS = {  # questions the sample wiki does not answer, five wordings per topic
    "vpn-mac": ["Wie richte ich das VPN auf meinem MacBook ein?",
                "Gibt es einen VPN-Client für macOS?",
                "Das VPN verbindet sich unter macOS nicht, was tun?",
                "Wie bekomme ich das Firmen-VPN auf das iPad?",
                "VPN auf dem Mac installieren"],
    "kantine": ["Was gibt es heute in der Kantine?",
                "Bis wann hat die Kantine geöffnet?",
                "Wie lade ich Guthaben auf meine Kantinenkarte?",
                "Gibt es in der Kantine vegane Gerichte?",
                "Wo finde ich den Speiseplan der Kantine?"],
    "parken": ["Wo darf ich auf dem Firmengelände parken?",
               "Wie beantrage ich einen Parkplatz in der Tiefgarage?",
               "Gibt es Ladesäulen für Elektroautos auf dem Parkplatz?",
               "Kostet der Mitarbeiterparkplatz etwas?",
               "Wo parken Besucher?"],
    "reise": ["Wie rechne ich eine Dienstreise ab?",
              "Welche Hotelkosten werden bei Dienstreisen erstattet?",
              "Wie hoch ist die Verpflegungspauschale?",
              "Wer genehmigt meine Dienstreise?",
              "Darf ich für die Dienstreise die Bahn erste Klasse buchen?"],
    "gehalt": ["Wann wird das Gehalt überwiesen?",
               "Wo finde ich meine Lohnabrechnung?",
               "Wie ändere ich meine Bankverbindung für das Gehalt?",
               "Wann gibt es das Weihnachtsgeld?",
               "Wie beantrage ich eine Gehaltserhöhung?"],
    "feier": ["Wann ist die Weihnachtsfeier?",
              "Wer organisiert den Betriebsausflug?",
              "Darf ich zur Sommerfeier jemanden mitbringen?",
              "Gibt es dieses Jahr ein Firmenfest?",
              "Wo findet der Betriebsausflug statt?"],
}


def pair_scores(found, labels):
    """Pair precision, recall, F1 of a grouping against topic labels.

    Example: groups [[0, 1], [2]] with labels a, a, b -> (1.0, 1.0, 1.0)
    """
    same_group = {(i, j) for g in found for i in g for j in g if i < j}
    same_topic = {(i, j) for i in range(len(labels)) for j in range(i + 1, len(labels))
                  if labels[i] == labels[j]}
    hits = len(same_group & same_topic)
    precision = hits / len(same_group) if same_group else 1.0
    recall = hits / len(same_topic) if same_topic else 1.0
    return precision, recall, 2 * precision * recall / ((precision + recall) or 1)


def thresholds(tmp, db=None):
    """Embed TOPICS with the real model (an index of wiki/ for its query prefix; built here unless
    `db` names one), group them at each threshold."""
    binary, model = config.default_embedding_bin(), config.default_model()
    common.require((binary, "llama-embedding"), (model, "Modell"))
    if db is None:
        db = os.path.join(tmp, "knowledge.db")
        common.build_quietly({**os.environ, "LLAMA_EMBEDDING": binary, "RAG_EMBED_MODEL": model,
                              "RAG_WIKI": str(ROOT / "wiki"), "RAG_DB": db})
    settings = core.Settings(db=db, model=model, embedding_bin=binary)
    index, meta, _ = core.open_index(settings)
    index.close()
    texts = [q for qs in TOPICS.values() for q in qs]
    labels = [t for t, qs in TOPICS.items() for _ in qs]
    vecs = core.embed(texts, settings, meta, "hybrid", {})
    sims = clusters.similarities(vecs)
    pairs = [(i, j) for i in range(len(texts)) for j in range(i + 1, len(texts))]
    inside = [sims[i][j] for i, j in pairs if labels[i] == labels[j]]
    across = [sims[i][j] for i, j in pairs if labels[i] != labels[j]]
    rows = []
    for step in range(80, 97):
        found = clusters.groups(vecs, step / 100)
        precision, recall, f1 = pair_scores(found, labels)
        rows.append({"threshold": step / 100, "groups": len(found),
                     "precision": round(precision, 3), "recall": round(recall, 3),
                     "f1": round(f1, 3)})
    stats = {"model": meta.get("embed_model"), "questions": len(texts), "topics": len(TOPICS),
             "cosine_same_topic_median": round(common.median(inside), 3),
             "cosine_other_topic_median": round(common.median(across), 3),
             "cosine_other_topic_max": round(max(across), 3)}
    return rows, stats


def emit(args, info, rows, stats):
    best = max(rows, key=lambda r: (r["f1"], r["threshold"]))
    report = {"benchmark": "feedback-threshold", "command": common.command_line(), "machine": info,
              "stats": stats, "results": rows, "best": best}
    cols = [("threshold", "Schwelle"), ("groups", "Gruppen"), ("precision", "Präzision (Paare)"),
            ("recall", "Recall (Paare)"), ("f1", "F1")]
    text = "\n".join([common.header(f"Schwelle der Gruppierung: {stats['questions']} Fragen, "
                                    f"{stats['topics']} Themen, {stats['model']}", info),
                      f"Befehl: {report['command']}",
                      f"Kosinus im selben Thema (Median) {stats['cosine_same_topic_median']}, "
                      f"zwischen Themen (Median) {stats['cosine_other_topic_median']}, "
                      f"höchstens {stats['cosine_other_topic_max']}", "",
                      common.table(cols, rows), "",
                      f"Beste Schwelle (F1, bei Gleichstand die höhere): {best['threshold']}"])
    common.emit(args, report, text)
