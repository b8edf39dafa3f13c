"""Step 6 of build_index.py: each section's own question, embedded once, when the index is built.

    heading_questions("mail/quota.md", "Quota › Sonderwerte") -> ["Quota Sonderwerte"]
    attach(index, args) -> 201   (the questions of the wiki's sections; new ones embedded)
    vectors(db, model, ["Mailbox-Quota Sonderwerte"], embed) -> [[0.01, …]]

The authors' report (rag/report/hard.py) searches every section with what a reader would type to
reach it from outside its page: the page's title and the section's own heading. Embedding those
questions is most of the report's work (wiki/: 201 questions, a warm embedding server started for
them, about 7 s of 11); made here, while the build's embedder runs anyway, the report embeds none.

They are kept beside the votes (rag/audit/feedback.py remember), as the refused questions' vectors
are: under the model and a SHA-256 of the question, float32 as base64, never the text. A build keeps
exactly the questions of the sections still there (a changed heading embeds one question, a removed
page takes its questions along); `build_index.py --forget` drops all of them with everything else
the report kept, and the next build makes them again.

Does not handle: sections without a heading (nothing to ask) and spreadsheet rows (their heading is a
row number); more than MAX_SECTIONS sections (the first by path, as the report looks at).
"""
import argparse
import sys

from rag import store
from rag.audit import feedback
from rag.ingest import embed_chunks
from rag.ingest.formats import base
from rag.models import embed_binary

MAX_SECTIONS = 2000  # sections the report looks at, at most (the first by path), so it stays quick
KIND = "headings:"  # their keys beside the votes


def heading_questions(path, heading):
    """The title and the section's own heading; none for a spreadsheet row, whose heading is its
    number (a reader finds a row by its cells, not by "Zeile 17").

    Example: "Quota › Sonderwerte" -> ["Quota Sonderwerte"]; "Quota" -> ["Quota"];
             "A › B › C" -> ["A C"]; "t.xlsx › Telefon › Zeile 17" -> []
    """
    parts = [p.strip() for p in heading.split("›") if p.strip()]
    if not parts or base.is_row(path, parts[-1]):
        return []
    return [" ".join(dict.fromkeys([parts[0], parts[-1]]))]


def sections(index):
    """[(path, heading)] of the sections the store shows this reader that have a question, in path
    and chunk order, the first MAX_SECTIONS."""
    ids = [doc_id for doc_id, _, _ in index.texts()]
    rows = sorted(index.sources(ids).values(), key=lambda r: (r.path, r.chunk_index))
    found = dict.fromkeys((r.path, r.heading) for r in rows if r.heading)
    return [s for s in found if heading_questions(*s)][:MAX_SECTIONS]


def key(model, question):
    """Example: ("e5.gguf", "Quota") -> "headings:e5.gguf:" + SHA-256 of "Quota" """
    return feedback.vector_key(model, question, KIND)


def kept(db, model, questions):
    """{question: vector} of those kept beside the votes."""
    keys = {key(model, q): q for q in questions}
    found = feedback.recall(db, keys)
    return {keys[k]: feedback.decoded(v) for k, v in found.items()}


def keep(db, model, new, only=None):
    """Keep {question: vector}; with `only` (questions), every other one of this kind goes."""
    feedback.remember(db, KIND, model, {key(model, q): feedback.encoded(v) for q, v in new.items()},
                      only=None if only is None else {key(model, q) for q in only})


def vectors(db, model, questions, embed):
    """The questions' vectors, in order: kept ones read back, the others from embed(texts) (and
    kept, if the store beside the votes can be written)."""
    have = kept(db, model, questions)
    new = list(dict.fromkeys(q for q in questions if q not in have))
    if new:
        made = dict(zip(new, embed(new)))
        have.update(made)
        try:
            keep(db, model, made)
        except (feedback.FeedbackError, OSError, *store.database_errors()):
            pass  # not writable here: the next report embeds them again
    return [have[q] for q in questions]


def attach(index, args):
    """Embed the questions of the index's sections that are not kept yet, with the build's
    embedder, and keep exactly those of the sections there are. Returns how many there are."""
    meta = index.meta()
    model = meta.get("embed_model")
    asked = list(dict.fromkeys(q for section in sections(index)
                               for q in heading_questions(*section)))
    prefix = embed_binary.stored_query_prefix(meta, model or "")
    have = kept(args.db, model, asked)
    new = [q for q in asked if q not in have]
    made, quiet = {}, argparse.Namespace(**{**vars(args), "quiet": True})  # no second start line
    for start, batch in embed_chunks.embed_all([prefix + q for q in new], quiet) if new else ():
        made.update(zip(new[start:start + len(batch)], batch))
    try:
        keep(args.db, model, made, only=asked)
    except (feedback.FeedbackError, *store.database_errors()) as exc:
        print(f"Warnung: Fragen der Abschnitte für den Bericht nicht gespeichert ({exc}) – "
              f"ask_rag.py --report bettet sie selbst ein", file=sys.stderr)
    return len(asked)
