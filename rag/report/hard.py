"""Schwer zu finden: sections that their own questions do not find among the first TOP results.

    hard_to_find(index, settings, meta)
    -> ([{"path": "mail/cyrus-imap/mailbox-quota.md", "heading": "Mailbox-Quota › Sonderwerte",
          "questions": ["Mailbox-Quota Sonderwerte"]}, …], 180)      (180: sections looked at)

A section's own questions come from `questions_of` (pluggable). The default, heading_questions,
asks what a reader would type to reach the section from outside its page: the page's title and
the section's own heading (the first and the last part of its heading path). Each question is
searched with the product's own ranking (rag/search/ranking.py retrieve, the index's weights, at
most MAX_PER_FILE sources per page); the section counts as found when one of its chunks is among
the first TOP. A section found by fewer than half its questions is listed: its heading does not
say, in the wiki's words, what it is about, or other sections say it louder. No language model
is needed; generated questions per section (a model writes what a reader would ask) would plug
in as another `questions_of`. The questions' vectors are made when the index is built
(rag/ingest/headings.py), so the report embeds only what a build has not seen.

Rights: it runs on the reader's own store (rag/store/access.py), so a hidden page neither shows
nor pushes a visible section down. The result is kept per index state and reader's groups: in
memory (--serve) and beside the votes (rag/audit/feedback.py; build_index.py --forget drops it),
so only the first report after a change of the index searches every section.

Does not handle: sections without a heading (nothing to ask), more than headings.MAX_SECTIONS
sections (the first by path are looked at; the report says how many).
"""
import hashlib
import json

from rag import core
from rag import store
from rag.audit import feedback
from rag.ingest import headings
from rag.ingest.headings import heading_questions, sections  # noqa: F401 (hard.heading_questions)
from rag.search import ranking as search

TOP = 5  # a section must be among the first TOP results of its own question

kept = {}  # (index state, reader's groups, questions_of) -> result, while the process runs


def state(index, meta):
    """A key that changes with the index, a page, a rule or the model."""
    data = json.dumps([index.label, sorted(index.pages().items()), sorted(index.access().items()),
                       meta.get("embed_model")], sort_keys=True)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def hard_to_find(index, settings, meta, questions_of=heading_questions, embed=core.embed):
    """(the sections their own questions do not find, by path and heading; sections looked at).
    Kept in memory, and with the default questions beside the votes (rag/audit/feedback.py
    remember): the next run on the same index state and groups reads it back."""
    now = state(index, meta)
    groups = getattr(settings.reader, "groups", None)
    key = "hard:" + json.dumps([now, groups, questions_of.__name__])
    if (key, questions_of) in kept:
        return kept[(key, questions_of)]
    default = questions_of is heading_questions
    found = feedback.recall(settings.db, [key]).get(key) if default else None
    if found is None:
        found = measure(index, settings, meta, questions_of, embed)
        if default:
            try:
                feedback.remember(settings.db, "hard:", now, {key: found})
            except (feedback.FeedbackError, *store.database_errors()):
                pass  # not writable here: the next report searches again
    kept.clear()
    kept[(key, questions_of)] = found = (found[0], found[1])
    return found


def measure(index, settings, meta, questions_of, embed=core.embed):
    found = sections(index)
    asked = [(section, q) for section in found for q in questions_of(*section)]
    mode = settings.mode if index.has_lexical() else "vector"
    texts = [q for _, q in asked]
    if mode == "lexical" or not asked:
        vecs = [None] * len(texts)
    else:  # made by build_index.py (rag/ingest/headings.py); what is new is embedded here
        vecs = headings.vectors(settings.db, meta.get("embed_model"), texts,
                                lambda new: embed(new, settings, meta, mode, {}))
    weight, _, _ = search.index_settings(meta, settings.vector_weight)
    hits, counts = {}, {}
    for (section, question), vec in zip(asked, vecs):
        result = search.retrieve(index, question, vec, mode=mode, top_k=TOP,
                                 max_per_file=settings.max_per_file, vector_weight=weight)
        counts[section] = counts.get(section, 0) + 1
        found_it = any((s.path, s.heading) == section for s in result.sources)
        hits[section] = hits.get(section, 0) + found_it
    missed = [{"path": path, "heading": heading, "questions": questions_of(path, heading)}
              for path, heading in counts if 2 * hits[(path, heading)] < counts[(path, heading)]]
    return missed, len(found)
