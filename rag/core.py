"""The question pipeline, once for every front door: the post's steps in order (Run), as events.

    for event in ask("Wie lege ich eine Mailbox an?", Settings(db="knowledge.db")):
        if event.kind == "piece":
            print(event.data, end="")

The stages (`ask_rag.py --explain` prints what each decided), and the events a door gets:
    1. found    embed the question, rank, the floor (embed, rank)
                -> searched (a follow-up's search), sources (the Retrieval)
    2. widened  a how-to source as its whole section, its steps below (rank; rag/search/)
       protect  personal data masked in the question and the sources (protect)
    3. chosen   the section a how-to answer shows (rag/answer/choose.py)  -> chosen (the Choice)
    4. judged   do the sources, or the chosen section, answer it? (stream)
                -> asking: "check", "section" or "answer" (what the wait is for)
    5. asked    the section verbatim, or the model writes (stream)  -> prompt, piece (trimmed)
    6. checked  the answer's checks in their order (check; rag/check/)  -> checks
    then why the answer is what it is (rag/check/why.py) and one audit line (write_audit)
                -> done (the Answer)
A door turns each event into its own format and adds nothing else.

The core never prints, never reads sys.argv and knows nothing of terminals or HTTP. Expected
failures raise CoreError with one German line that names the fix; the door shows it.

Does not handle: several indexes at once. (Follow-ups and query expansion: rag/search/expand.py.)
"""
import itertools
import time

from rag.audit import feedback
from rag.audit import log as audit
from rag.answer import choose
from rag.answer import context
from rag.answer import guard
from rag.check import guard as answer_guard
from rag.check import why
from rag.records import FACT_SOURCES, TOP_K, Answer, CoreError, Event, Settings  # noqa: F401
from rag.answer import prompt as answer
from rag.check import see_also
from rag.models import embed_binary as embedder
from rag.models import embed_query
from rag.privacy import mask as privacy
from rag.search import expand
from rag.search import ranking as search
from rag.search import solutions
from rag.search import subsections
from rag import store
from rag.text import german

# by question type: a sentence 20–50 tokens, 8 steps ~350
MAX_TOKENS = {"fact": 160, "howto": 400}


# -- open the index --------------------------------------------------------------------------------
def open_index(settings):
    """(store, meta, mode): the index (SQLite file or PostgreSQL, rag/store/sqlite.py) must exist
    and be built; without FTS5, vector mode."""
    try:
        # the store hides what the reader may not see
        conn = store.open_store(settings.db, reader=settings.reader)
        meta = conn.meta()
    except store.StoreError as exc:
        raise CoreError(str(exc))
    if not meta.get("dim"):
        raise CoreError(f"Index {conn.label} ist leer – zuerst bauen mit: python3 build_index.py")
    mode = settings.mode
    if mode != "vector" and not conn.has_lexical():
        if mode == "lexical":
            raise CoreError("der Index hat keine Volltextsuche (SQLite ohne FTS5) – --mode "
                            "vector verwenden")
        mode = "vector"
    return conn, meta, mode


# -- 1. found: the question embedded ---------------------------------------------------------------
def embed(texts, settings, meta, mode, timings):
    """The vectors of the question and its expansions (one call), from the same model as the index
    (else CoreError naming the rebuild); [None, …] in lexical mode."""
    started = time.monotonic()
    if mode == "lexical":
        qvecs = [None] * len(texts)
    else:
        try:
            qvecs = embed_query.query_vectors(texts, meta, settings.model, settings.embedding_bin,
                                              settings.embed_via,
                                              settings.embed_url or settings.server,
                                              settings.embed_model_name, settings.api_key)
        except embed_query.EmbeddingError as exc:
            raise CoreError(str(exc))
    timings["embed_s"] = round(time.monotonic() - started, 3)
    return qvecs


def embedded(question, settings, timings, searched=None):
    """The open index and the question's vectors: (store, meta, mode, texts, vectors); the texts are
    the question, then its expansions. On an error the index is closed again."""
    conn, meta, mode = open_index(settings)
    try:
        under = search.folder(settings.under)
        if under and not search.folder_ids(conn, under):
            raise CoreError(f"unter {under} liegt keine Seite im Index – Ordner wie im Wiki "
                            f"angeben, z. B. --under mail/")
        texts = expand.texts(question, searched)  # the question, then its expansions
        return conn, meta, mode, texts, embed(texts, settings, meta, mode, timings)
    except BaseException:
        conn.close()
        raise


# -- 1. found, 2. widened: rank --------------------------------------------------------------------
def rank(conn, texts, qvecs, searched, settings, meta, mode, question_kind, timings):
    """The Retrieval of the question and what `searched` adds (rag/search/expand.py), the rankings
    fused."""
    started = time.monotonic()
    weight, floor, reject = search.index_settings(meta, settings.vector_weight,
                                                  settings.floor_cosine, settings.reject_cosine)
    try:
        result = expand.retrieve(conn, list(zip(texts, qvecs)), searched, settings, mode=mode,
                                 top_k=settings.top_k, max_per_file=settings.max_per_file,
                                 floor_cosine=floor, vector_weight=weight, reject_cosine=reject,
                                 under=settings.under, ann=settings.ann or None)
    except store.StoreError as exc:  # e.g. --ann without an HNSW index
        raise CoreError(str(exc))
    timings["retrieve_s"] = round(time.monotonic() - started, 3)
    if settings.no_floor:
        result.weak = False
    # whole sections, a problem's solution in its place, a parent with its steps below
    if question_kind == "howto":
        result.sources = subsections.join(
            conn, solutions.follow(conn, search.whole_sections(conn, result.sources)))
    if qvecs[0] is not None:
        result.query_prefix = embedder.stored_query_prefix(meta, settings.model)
    return result


# -- protect: personal data masked -----------------------------------------------------------------
def protect(question, result, settings, conn):
    """(masked question, masker, raw sources): personal data in the question and the sources masked
    (rag/privacy/mask.py protect, on copies); the raw sources stay for the audit log's hashes."""
    raw_sources = result.sources  # the audit log hashes the wiki text as it is
    # copies
    question, result.sources, masker = privacy.protect(question, result.sources, settings.pii,
                                                       settings.pii_kinds, settings.pii_keep)
    result.pii_kept = masker.readable()
    if settings.pii == "mask":  # the search text for --explain/--json, from the masked question
        result.query_text = " ".join(german.index_text(question, conn.vocab()).split())
    return question, masker, raw_sources


# -- 3. what the model sees ---------------------------------------------------------------------
def prepare(question, retrieval, settings, result, screen):
    """What the model sees, as the answer server reads it (chat template or plain); sets
    result.model and result.prompt. Returns (server info, chat?, the prompt copies of the
    sources, the prefix the answerability check shares, the procedure's source number or None)."""
    from rag.models import llm  # imported here: --retrieve-only needs no HTTP library
    try:
        info = llm.server_info(settings.server, settings.api_key, settings.llm_model_name)
    except llm.LLMError as exc:
        raise CoreError(str(exc))
    chat = (info["chat_template"] if settings.prompt_format == "auto"
            else settings.prompt_format == "chat")
    result.model = info.get("model")
    guarded = screen.shield.guarded(retrieval)  # prompt copies: no live instruction
    prefix, result.prompt, procedure = answer.for_question(
        question, guarded, chat, result.kind, settings.whole_chunks, settings.fact_sources,
        result.choice)
    return info, chat, guarded, prefix, procedure


# -- 4. judged, 5. asked ---------------------------------------------------------------------------
def stream(question, prepared, settings, result, screen):
    """Check that the sources answer the question, then show the chosen section verbatim
    (result.choice, a how-to question's) or ask the model for the answer; yields the asking, prompt
    and answer events."""
    from rag.answer import answerable, judge
    from rag.models import llm
    info, chat, guarded, prefix, procedure = prepared
    choice = result.choice
    try:
        limit = (answerable.threshold(result.model) if settings.answer_threshold is None
                 else settings.answer_threshold)
        started = time.monotonic()  # first_token_s counts from here: the check is part of the wait
        # prompt tokens each call read (llm.read_entry), expansions first
        read = result.timings.setdefault("read", [])
        verbatim = result.kind == "howto" and settings.steps == "source"
        section_limit = answerable.section_threshold(result.model) if limit else None
        # how-to: the model judges the section to be printed, nothing else
        if verbatim and chat and section_limit:
            for kind, data in judge.verbatim(question, guarded, choice, settings, result, screen,
                                             section_limit, read, started):
                yield Event(kind, data)
            return
        if chat and limit:  # no threshold measured for this model (or 0): no check
            yield Event("asking", "check")
            if answerable.refuses(prefix, settings, result, limit, read, started):
                return
        # how-to: the chooser's first finalist, verbatim; the model only checked the sources
        section = choice.order[0] if verbatim and choice and choice.order else None
        steps = (answer.steps_answer(section + 1, guarded.sources[section].content)
                 if section is not None else None)
        if steps:
            result.answered_by, result.prompt = ("source", answerable.check_text(prefix)
                                                 if chat and limit else None)
            result.timings["first_token_s"] = round(time.monotonic() - started, 3)
            # the lines shown need no answer request
            result.timings["read_before_first_token"] = llm.total_read(read)
            result.text = "".join(screen.screen([steps]))
            yield Event("piece", result.text)
            return
        if not (chat and limit):
            yield Event("asking", "answer")
        yield from model_answer(settings, result, screen, chat, info, procedure, read, started)
    except llm.LLMError as exc:
        raise CoreError(str(exc))


def model_answer(settings, result, screen, chat, info, procedure, read, started):
    """The model writes the answer: its pieces as events, screened by the guard (rag/check/guard.py)
    as they stream; then the whole text, a loop kept once, and what the model read before its first
    token."""
    from rag.models import answer_stream, llm
    result.answered_by = "model"
    yield Event("prompt", result.prompt)
    pieces, llm_timings = [], {}
    max_tokens = settings.max_tokens or MAX_TOKENS[result.kind]
    prefill = answer.prefill(result.kind, procedure) if chat and info.get("prefill") else None
    for piece in screen.screen(answer_stream.trimmed(answer_stream.until_loop(llm.stream_answer(
            settings.server, result.prompt, chat, max_tokens, llm_timings, api_key=settings.api_key,
            model_name=settings.llm_model_name, prefill=prefill, system=answer.SYSTEM)))):
        if not pieces:
            result.timings["first_token_s"] = round(time.monotonic() - started, 3)
        pieces.append(piece)
        yield Event("piece", piece)
    result.timings.update(llm_timings)
    # without what came from llama-server's cache
    read.append(llm.read_entry("answer", {"timings": llm_timings}))
    result.timings["read_before_first_token"] = llm.total_read(read)
    # a loop kept once; no "…. NO_INFO", no marker
    result.text = answer.cleaned(answer_stream.without_loop("".join(pieces)))


# -- the pipeline: the post's steps, one call each -------------------------------------------------
class Run:
    """One question through the post's steps, one call each; every step yields the events it makes.

        run = Run("Wie lege ich eine Mailbox an?", settings)
        events = itertools.chain(run.embed(), run.rank(), run.prompt(), run.ask(), run.check())

    history: the conversation so far, [{"role": "user"|"assistant", "content": …}], oldest first;
    a follow-up that leans on it is searched with the question before it, with settings.rewrite also
    rewritten by the model into a standalone question first (rag/search/expand.py)."""

    def __init__(self, question, settings, history=()):
        self.asked, self.settings, self.history = (question or "").strip(), settings, history
        self.result = self.prepared = None

    def embed(self):
        """1. The question (and its expansions) as vectors of the index's model; no event."""
        if not self.asked:
            raise CoreError('keine Frage angegeben – so fragen: python3 ask_rag.py "Wie lege ich '
                            'eine Mailbox an?"')
        # without a history and --expand: the question as asked
        self.searched = expand.prepare_for(self.asked, self.history, self.settings)
        self.timings, self.kind = self.searched.timings, context.kind(self.searched.question)
        self.index = embedded(self.searched.question, self.settings, self.timings, self.searched)
        yield from ()

    def rank(self):
        """2. Rank, widen, the floor; personal data masked; the one chooser. Events: searched,
        sources, chosen."""
        conn, self.meta, mode, texts, qvecs = self.index
        try:
            found = rank(conn, texts, qvecs, self.searched, self.settings, self.meta, mode,
                         self.kind, self.timings)
            asked = self.searched.question
            question, self.masker, self.raw_sources = protect(asked, found, self.settings, conn)
        finally:
            conn.close()
        r = self.result = Answer(question, found, kind=self.kind, timings=self.timings,
                                 searched=expand.shown(self.searched, self.masker))
        if r.searched:
            yield Event("searched", r.searched)
        yield Event("sources", found)
        # the prompt copies of the sources: no live instruction; the answer is read against them
        shield = guard.Shield(found.sources, self.settings.guard != "off")
        self.screen = answer_guard.Screen(shield)  # rag/check/guard.py
        if self.kind == "howto" and found.sources:  # the one chooser, on the prompt copies
            r.choice = choose.choose(*choose.inputs(shield.guarded(found)))
            yield Event("chosen", r.choice)

    def prompt(self):
        """3. What the model sees, when it is asked: not with --retrieve-only, not below the floor.
        No event: the prompt goes out with step 4."""
        found = self.result.retrieval
        if not (self.settings.retrieve_only or found.weak or not found.sources):
            self.question = expand.with_previous(self.result.question, self.result.searched)
            self.prepared = prepare(self.question, found, self.settings, self.result, self.screen)
        yield from ()

    def ask(self):
        """4. The section verbatim or the model's answer as it streams (asking, prompt, piece); else
        the refusal, without the model."""
        r = self.result
        if self.prepared:
            r.llm_called = True
            yield from stream(self.question, self.prepared, self.settings, r, self.screen)
        elif not self.settings.retrieve_only:
            r.text, r.see_also = answer.NO_INFO, see_also.pick(r.retrieval.sources)

    def check(self):
        """Then the checks of the answer (rag/check/), why it is what it is, one audit line. Events:
        checks, done (the Answer)."""
        r = self.result
        if r.llm_called:
            yield Event("checks", check(r, r.retrieval, r.question, self.masker, self.screen))
        if not self.settings.retrieve_only:
            r.text = self.masker.mask(r.text)  # a value the model wrote itself stays out of the log
            r.why = why.why(r)  # one line every door shows (rag/check/why.py)
        write_audit(self.settings, r, self.raw_sources, self.meta)
        if r.refused:
            keep_vector(self.settings, r, self.index)
        yield Event("done", r)


def found(question, settings):
    """Steps 1 and 2 alone, for the evaluations: the Answer with its Retrieval and masked question;
    no model is asked."""
    run = Run(question, settings)
    for _ in itertools.chain(run.embed(), run.rank()):
        pass
    return run.result


def ask(question, settings, history=()):
    """Yield the events of one question, the post's steps in order (Run); the last one is "done"."""
    run = Run(question, settings, history)
    for step in (run.embed, run.rank, run.prompt, run.ask, run.check):
        yield from step()


# -- 6. checked ------------------------------------------------------------------------------------
def check(result, retrieval, question, masker, screen):
    """The checks of the answer in their order (rag/check/pipeline.py CHECKS), each one record;
    fills `result` and returns the "checks" event's data."""
    from rag.check import pipeline  # only after an answer: --retrieve-only does not load the checks
    case = pipeline.Case(question, result.text, result.kind, result.answered_by, retrieval.sources,
                         retrieval.vocab, masker, screen)
    records = pipeline.run(case)
    result.replaced = pipeline.replaced(records)
    return pipeline.fill(result, case)


def run(question, settings, history=()):
    """The whole pipeline without streaming: the final Answer (for the API, MCP and evaluations)."""
    for event in ask(question, settings, history):
        if event.kind == "done":
            return event.data


# -- audit: one line per answer --------------------------------------------------------------------
def write_audit(settings, result, raw_sources, meta):
    """One JSON line per answer (rag/audit/log.py); nothing for --retrieve-only or with audit=""."""
    if result.text is None or settings.audit == "":
        return
    path = settings.audit or audit.default_path(settings.db)
    try:
        line = audit.entry(result, raw_sources, meta, settings.server if result.llm_called
                           else None)
        line["user"] = audit.pseudonym(getattr(settings.reader, "name", None),
                                       settings.audit_secret)
        audit.append(path, audit.without_text(line) if settings.audit_no_text else line,
                     settings.audit_days)
    except OSError as exc:
        raise CoreError(f"Audit-Log {path} nicht schreibbar ({exc.strerror}) – Pfad mit "
                        f"--audit/RAG_AUDIT ändern oder --no-audit")


def keep_vector(settings, result, index):
    """A refused question's vector, kept for the authors' report (rag/report/gaps.py groups the
    refused questions by it), when the audit line keeps the question as it was embedded: not
    masked, not rewritten, with text. Without write access the report embeds it later."""
    _, meta, _, texts, vectors = index
    if settings.audit == "" or settings.audit_no_text or vectors[0] is None:
        return
    if result.question != texts[0]:
        return  # masked or rewritten: the report embeds the text the log keeps
    try:
        feedback.keep_vector(settings.db, meta.get("embed_model"), result.question, vectors[0])
    except (feedback.FeedbackError, *store.database_errors()):
        pass
