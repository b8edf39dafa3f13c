"""Wissenslücken: what the wiki could not answer, grouped by topic, with the nearest pages.

    refused_questions(audit_lines)
    -> {"Wie richte ich das VPN am Mac ein?": {"count": 2, "askers": {"p-1…", "p-2…"}}, …}
    gaps(refused, settings, meta, index)
    -> ([{"questions": 4, "askers": 3, "examples": ["Gibt es einen VPN-Client für macOS?", …],
          "pages": ["netzwerk/vpn-windows.md", "netzwerk/vpn-linux.md"],
          "folders": ["netzwerk/"]}], 1, 0)           (1 group withheld, 0 beyond MAX_GROUPS)

A question counts as refused when its answer was "Dazu habe ich keine Information." (also with
--audit-no-text: the line keeps the answer's hash). Its text is the audit log's, masked as the
core masked it; with --audit-no-text there is no text, so such a question is counted, not grouped.

1. embed    every distinct question, with the index's embedder and query prefix (core.embed)
2. group    by cosine, average linkage (rag/report/clusters.py); the threshold is the model's
3. privacy  a group with fewer than MIN_ASKERS different askers (pseudonyms; a line without one
            names nobody and counts as no asker) is not shown, only counted ("withheld")
4. order    the most asked groups first; the first MAX_GROUPS are shown, the others counted
5. nearest  up to NEAREST_QUESTIONS of a shown group's questions, most asked first, searched with
            the product's own ranking (rag/search/ranking.py retrieve, the index's weights); a page
            scores 1/rank per question; the best NEAREST_PAGES pages and their folders

Does not handle: questions asked while the audit log was off, questions in a language the embedder
does not know, a topic that the threshold splits in two (each half is its own group).
"""

from rag import core
from rag import store
from rag.audit import log as audit
from rag.answer.prompt import NO_INFO
from rag.audit import feedback
from rag.privacy import mask as privacy
from rag.report import clusters
from rag.search import ranking as search

MIN_ASKERS = 3  # a group is shown only with this many different askers: never one person's
EXAMPLES = 3  # example questions per group
NEAREST_QUESTIONS = 5  # questions of a group searched for its nearest pages
NEAREST_PAGES = 3  # pages named per group
SEARCH_K = 5  # results per question looked at
MAX_GROUPS = 20  # the largest groups are shown (and searched); the report counts the others
CACHE_MAX = 50_000  # question vectors kept in memory (--serve makes the report again and again)
NO_INFO_SHA = audit.sha256(NO_INFO)

cache = {}  # (embedding model, question) -> vector


def refused(entry):
    """Was this audit line the refusal?

    Example: {"answer": "Dazu habe ich keine Information."} -> True; {"answer": "So [1]."} -> False
    """
    answer = entry.get("answer")
    if answer is not None:
        return answer.strip() == NO_INFO
    return entry.get("answer_sha256") == NO_INFO_SHA


def refused_questions(entries):
    """{question: {"count", "askers"}} of the refused lines that keep their question's text."""
    found = {}
    for entry in entries:
        question = entry.get("question")
        if not refused(entry) or not isinstance(question, str) or entry.get("forgotten"):
            continue
        item = found.setdefault(question.strip(), {"count": 0, "askers": set()})
        item["count"] += 1
        if entry.get("user"):
            item["askers"].add(entry["user"])
    return found


def vectors(texts, settings, meta, embed=core.embed):
    """The question vectors: from memory, else from beside the votes (rag/audit/feedback.py
    remember, float32 as base64), else embedded (one call for all new ones). What is kept beside
    the votes is exactly the questions of this report: a question whose audit line is gone
    (--audit-days, --forget) loses its vector at the next report."""
    model = meta.get("embed_model")
    keys = {t: feedback.vector_key(model, t) for t in texts}
    stored = feedback.recall(settings.db, [keys[t] for t in texts if (model, t) not in cache])
    cache.update(((model, t), feedback.decoded(stored[keys[t]]))
                 for t in texts if keys[t] in stored)
    new = [t for t in texts if (model, t) not in cache]
    if len(cache) + len(new) > CACHE_MAX:
        cache.clear()
    found = embed(new, settings, meta, "hybrid", {}) if new else []
    cache.update(((model, t), v) for t, v in zip(new, found))
    packed = {keys[t]: feedback.encoded(v) for t, v in zip(new, found)}
    try:
        feedback.remember(settings.db, "vectors:", model, packed, only=set(keys.values()))
    except (feedback.FeedbackError, *store.database_errors()):
        pass  # not writable here: the next report embeds again
    return [cache[(model, t)] for t in texts]


def nearest(index, texts, vecs, settings, meta):
    """(pages, folders) nearest to these questions.

    Example: two VPN questions -> (["netzwerk/vpn-windows.md", "netzwerk/vpn-linux.md"],
                                   ["netzwerk/"])
    """
    weight, _, _ = search.index_settings(meta, settings.vector_weight)
    mode = settings.mode if index.has_lexical() else "vector"
    scores = {}
    for text, vec in zip(texts, vecs):
        found = search.retrieve(index, text, vec, mode=mode, top_k=SEARCH_K,
                                max_per_file=settings.max_per_file, vector_weight=weight)
        pages = list(dict.fromkeys(s.path for s in found.sources))
        for rank, path in enumerate(pages, start=1):
            scores[path] = scores.get(path, 0.0) + 1.0 / rank
    pages = sorted(scores, key=lambda p: (-scores[p], p))[:NEAREST_PAGES]
    return pages, folders_of(pages)


def folders_of(pages):
    """Example: ["netzwerk/vpn.md", "netzwerk/wlan.md", "drucker.md"] -> ["netzwerk/"]"""
    return list(dict.fromkeys(p.rpartition("/")[0] + "/" for p in pages if "/" in p))


def masked(text, settings):
    """The text masked again, each on its own (no placeholder links two questions), whatever --pii
    was when it was asked. Example: "IBAN DE89 3704 0044 0532 0130 00?" -> "IBAN [IBAN 1]?" """
    return privacy.Masker(kinds=settings.pii_kinds, keep=settings.pii_keep).mask(text)


def gaps(refused_, settings, meta, index, embed=core.embed, min_askers=MIN_ASKERS, most=MAX_GROUPS):
    """(the `most` largest groups, with their pages; how many were withheld for too few askers;
    how many more groups there were). `index` is a store that reads everything; `embed` is
    core.embed or one like it (rag/report/build.py OnDemand)."""
    texts = sorted(refused_)
    if not texts:
        return [], 0, 0
    vecs = vectors(texts, settings, meta, embed)
    found, withheld = [], 0
    for members in clusters.groups(vecs, clusters.threshold_for(meta.get("embed_model"))):
        askers = set().union(*(refused_[texts[i]]["askers"] for i in members))
        if len(askers) < min_askers:
            withheld += 1
            continue
        ordered = sorted(members, key=lambda i: (-refused_[texts[i]]["count"], texts[i]))
        found.append((sum(refused_[texts[i]]["count"] for i in members), len(askers), ordered))
    found.sort(key=lambda g: (-g[0], -g[1], [texts[i] for i in g[2]]))
    shown = []
    for questions, askers, ordered in found[:most]:
        top = ordered[:NEAREST_QUESTIONS]
        pages, folders = nearest(index, [texts[i] for i in top], [vecs[i] for i in top], settings,
                                 meta)
        shown.append({"questions": questions, "askers": askers, "pages": pages, "folders": folders,
                      "examples": [masked(texts[i], settings) for i in ordered[:EXAMPLES]]})
    return shown, withheld, len(found) - len(shown)
