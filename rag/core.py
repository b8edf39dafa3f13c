"""The question pipeline, once for every front door, as numbered steps that ask() calls in order:

    1. embed    the question and its expansions (embed)          5. stream  the answer, screened by the guard (stream)
    2. rank     search, fuse, the floor (rank)                    6. check   citations, support, facts, guard (check)
    3. protect  mask personal data (protect)                      7. audit   one JSON line per answer (write_audit)
    4. prompt   what the model sees, instructions defused (prompt_for, guard.Shield)

    for event in ask("Wie lege ich eine Mailbox an?", Settings(db="knowledge.db")):
        if event.kind == "piece":
            print(event.data, end="")

Events, in this order (a door turns each into its own format and adds nothing else):
    searched  a follow-up's search, the expansions (rag/search/expand.py Searched; only with a history or --expand)
    sources   the Retrieval (masked sources, the floor's verdict, how the scan ran)
    asking    what the model is asked first, so a door can say what the wait is for: "check" (do the sources
              answer it?), "section" (does the section to be printed answer it? rag/answer/judge.py) or "answer";
              only when the model is asked (not for a how-to's verbatim steps without check)
    prompt    the prompt text sent to the model (only when the model is asked)
    piece     a piece of the answer as it streams (leading/trailing whitespace trimmed)
    checks    {"citations", "unsupported", "guard", "answered_by", …}: which [n] are valid, which numbers no
              source has, what rag/answer/guard.py removed from the prompt and flagged or withheld in the answer,
              whether the model wrote the answer or it is a section verbatim ("source"), and "see_also": up to
              two uncited sources of other sections (rag/answer/see_also.py; after a refusal the best two)
    done      the Answer: everything above, plus timings, as the audit log stores it

The core never prints, never reads sys.argv and knows nothing of terminals or HTTP. Expected
failures raise CoreError with one German line that names the fix; the door shows it.

Does not handle: several indexes at once. (Follow-ups and query expansion: rag/search/expand.py.)
"""
import dataclasses
import time

from rag import config
from rag.answer import audit
from rag.answer import choose
from rag.answer import context
from rag.answer import guard
from rag.answer import prompt as answer
from rag.answer import see_also
from rag.answer import subsections
from rag.models import embed_binary as embedder
from rag.models import embed_query
from rag.privacy import mask as privacy
from rag.search import expand
from rag.search import ranking as search
from rag.search import solutions
from rag import store
from rag.text import german

TOP_K = 4  # chunks in the prompt (as in the post)
GROUNDED = 0.3  # a fact answer is withdrawn when the passages holding its facts name less of the question's
#                 words than this (rag/answer/support.py grounding; wiki/: out-of-wiki answers ≤ 0.25, right ones ≥ 0.33)
FACT_SOURCES = 2  # sources a fact answer's model reads: 4 -> 2 read ~40 % fewer tokens, facts held (docs/messwerte.md)
MAX_TOKENS = {"fact": 160, "howto": 400}  # by question type: a sentence 20–50 tokens, 8 steps ~350


class CoreError(Exception):
    """An expected failure: one German line that names the fix."""


@dataclasses.dataclass
class Settings:
    """Everything a door decides for a question; each door builds it from its own flags or request."""
    db: str = "knowledge.db"
    model: str = dataclasses.field(default_factory=config.default_model)  # GGUF of the question embedder
    embedding_bin: str = dataclasses.field(default_factory=config.default_embedding_bin)
    embed_via: str = "binary"  # binary: llama-embedding; server: an OpenAI-compatible /v1/embeddings
    embed_url: str = None  # for embed_via="server" (default: server)
    embed_model_name: str = None
    api_key: str = None  # sent to the model servers as a Bearer token
    server: str = config.DEFAULT_SERVER_URL  # llama-server (or any OpenAI-compatible server) for the answer
    llm_model_name: str = None
    prompt_format: str = "auto"  # auto | chat | completion
    max_tokens: int = None  # None: MAX_TOKENS of the question type
    answer_threshold: float = None  # refuse when the model's P("ja, die Quellen beantworten es") is below this;
    #                                None: measured for the answer model (rag/answer/answerable.py), if any; 0 = no check
    top_k: int = TOP_K
    fact_sources: int = FACT_SOURCES
    mode: str = "hybrid"
    max_per_file: int = search.MAX_PER_FILE
    reject_cosine: float = None  # None: stored in the index, else measured per model (rag/search/ranking.py)
    floor_cosine: float = None
    vector_weight: float = None
    no_floor: bool = False  # always ask the model
    retrieve_only: bool = False
    pii: str = "mask"  # rag/privacy/mask.py: mask | flag | off
    pii_kinds: frozenset = None  # the kinds masked (privacy.parse_kinds); None: all
    pii_keep: tuple = ()  # values and patterns left readable (privacy.parse_keep)
    audit: str = None  # audit log path; None = next to the index; "" = no audit
    under: str = None  # only pages below this folder, e.g. "mail/"
    ann: bool = False  # PostgreSQL: HNSW preselection, rescored exactly; False: the store decides by size
    whole_chunks: bool = False  # the model sees every source whole (as in the post), not the parts that fit
    steps: str = "source"  # how-to answers: "source" = the section that answers it, verbatim (rag/answer/prompt.py
    #                        steps_answer), "model" = the answer model writes the steps
    guard: str = "on"  # rag/answer/guard.py: on | off (off: only to measure what the guard does)
    expand: str = None  # rag/search/expand.py METHODS: also search what the answer model makes of the question; None: off
    rewrite: bool = False  # rag/search/expand.py: the model rewrites a follow-up that leans on the history (--chat)
    reader: object = None  # who asks: rag/store/access.py Reader(name, groups); None = one who reads everything
    audit_secret: str = None  # the key of the asker's pseudonym in the audit log (RAG_AUDIT_SECRET); None: no name
    audit_days: int = None  # audit lines older than this many days are dropped; None: kept
    audit_no_text: bool = False  # the audit log keeps hashes and checks, no text of question or answer


@dataclasses.dataclass
class Answer:
    question: str  # as the model saw it (masked)
    retrieval: search.Retrieval
    text: str = None  # None: retrieve only
    llm_called: bool = False
    model: str = None
    prompt: str = None
    kind: str = None  # "howto" or "fact" (rag/answer/context.py)
    answered_by: str = None  # "model", "source": a how-to's steps verbatim (steps="source"), "line": rag/answer/echo.py
    answerable: dict = None  # {"p_yes", "threshold", "refused"} of the check before the answer
    grounding: dict = None  # a fact answer's {"facts", "coverage", "needed", "refused"} (rag/answer/support.py grounding);
    #                        when refused also "answer", the model's answer that was withdrawn
    citations: dict = None
    evidence: list = None  # [{"n", "text"}]: verbatim source units that support the answer (rag/answer/support.py)
    support: list = None  # per statement: {"text", "cited", "supported_by", "verdict"}
    unsupported: list = None  # numbers, dates, §, commands no cited source has (rag/answer/factcheck.py)
    guard: dict = None  # what rag/answer/guard.py removed from the prompt, flagged and withheld in the answer
    timings: dict = dataclasses.field(default_factory=dict)  # seconds per step, llama-server's timings, and what the
    #   model read before the first token: "read" [{"call": "search"|"choose"|"check"|"answer", "prompt_n", "cached"}],
    #   "read_before_first_token" their prompt_n summed (None: a server without timings)
    searched: expand.Searched = None  # the rewritten follow-up, the expansions (None: the question as asked)
    see_also: list = dataclasses.field(default_factory=list)  # [{"n", "path", "heading"}]: up to two sources of
    #   other sections the answer did not cite, best first (rag/answer/see_also.py); a refusal's: the best two
    id: str = dataclasses.field(default_factory=audit.new_id)  # key of its audit line and vote

    def as_json(self):
        """The answer as `ask_rag.py --json` prints it (and the API and MCP return it)."""
        r = self.retrieval
        return {"id": self.id, "question": self.question, "answer": self.text,
                "weak_evidence": r.weak, "mode": r.mode, "strategy": r.strategy, "query_text": r.query_text,
                "llm_called": self.llm_called, "coverage": round(r.coverage, 3),
                "best_cosine": None if r.best_cosine is None else round(r.best_cosine, 6),
                "scan": r.scan, "scan_processes": r.scan_processes, "scan_candidates": r.scan_candidates,
                "under": r.under,
                "kind": self.kind, "answered_by": self.answered_by, "answerable": self.answerable,
                "grounding": self.grounding,
                "citations": self.citations, "evidence": self.evidence, "support": self.support,
                "unsupported": self.unsupported, "guard": self.guard, "sources": [s.as_json() for s in r.sources],
                "timings": self.timings, "see_also": self.see_also, **expand.json_field(self.searched)}


@dataclasses.dataclass
class Event:
    kind: str  # searched | sources | asking | prompt | piece | checks | done
    data: object


# -- open the index --------------------------------------------------------------------------------
def open_index(settings):
    """(store, meta, mode): the index (SQLite file or PostgreSQL, rag/store/sqlite.py) must exist and be built;
    without FTS5, vector mode."""
    try:
        conn = store.open_store(settings.db, reader=settings.reader)  # the store hides what the reader may not see
        meta = conn.meta()
    except store.StoreError as exc:
        raise CoreError(str(exc))
    if not meta.get("dim"):
        raise CoreError(f"Index {conn.label} ist leer – zuerst bauen mit: python3 build_index.py")
    mode = settings.mode
    if mode != "vector" and not conn.has_lexical():
        if mode == "lexical":
            raise CoreError("der Index hat keine Volltextsuche (SQLite ohne FTS5) – --mode vector verwenden")
        mode = "vector"
    return conn, meta, mode


# -- 1. embed --------------------------------------------------------------------------------------
def embed(texts, settings, meta, mode, timings):
    """The vectors of the question and its expansions (one call), from the same model as the index
    (else CoreError naming the rebuild); [None, …] in lexical mode."""
    started = time.monotonic()
    if mode == "lexical":
        qvecs = [None] * len(texts)
    else:
        try:
            qvecs = embed_query.query_vectors(texts, meta, settings.model, settings.embedding_bin, settings.embed_via,
                                              settings.embed_url or settings.server, settings.embed_model_name,
                                              settings.api_key)
        except embed_query.EmbeddingError as exc:
            raise CoreError(str(exc))
    timings["embed_s"] = round(time.monotonic() - started, 3)
    return qvecs


# -- 2. rank ---------------------------------------------------------------------------------------
def rank(conn, texts, qvecs, searched, settings, meta, mode, question_kind, timings):
    """The Retrieval of the question and what `searched` adds (rag/search/expand.py), the rankings fused."""
    started = time.monotonic()
    weight, floor, reject = search.index_settings(meta, settings.vector_weight, settings.floor_cosine,
                                                  settings.reject_cosine)
    try:
        result = expand.retrieve(conn, list(zip(texts, qvecs)), searched, settings, mode=mode, top_k=settings.top_k,
                                 max_per_file=settings.max_per_file, floor_cosine=floor, vector_weight=weight,
                                 reject_cosine=reject, under=settings.under, ann=settings.ann or None)
    except store.StoreError as exc:  # e.g. --ann without an HNSW index
        raise CoreError(str(exc))
    timings["retrieve_s"] = round(time.monotonic() - started, 3)
    if settings.no_floor:
        result.weak = False
    if question_kind == "howto":  # whole sections, a problem's solution in its place, a parent with its steps below
        result.sources = subsections.join(conn, solutions.follow(conn, search.whole_sections(conn, result.sources)))
    if qvecs[0] is not None:
        result.query_prefix = embedder.stored_query_prefix(meta, settings.model)
    return result


# -- 3. protect ------------------------------------------------------------------------------------
def protect(question, result, settings, conn):
    """(masked question, masker, raw sources): personal data in the question and the sources masked
    (rag/privacy/mask.py protect, on copies); the raw sources stay for the audit log's hashes."""
    raw_sources = result.sources  # the audit log hashes the wiki text as it is
    question, result.sources, masker = privacy.protect(question, result.sources, settings.pii,  # copies
                                                       settings.pii_kinds, settings.pii_keep)
    result.pii_kept = masker.readable()
    if settings.pii == "mask":  # the search text for --explain/--json, from the masked question
        result.query_text = " ".join(german.index_text(question, conn.vocab()).split())
    return question, masker, raw_sources


def retrieve(question, settings, timings, question_kind="fact", searched=None):
    """Steps 1 to 3 on the open index: (Retrieval with masked sources, masked question, masker, raw sources, meta)."""
    conn, meta, mode = open_index(settings)
    try:
        under = search.folder(settings.under)
        if under and not search.folder_ids(conn, under):
            raise CoreError(f"unter {under} liegt keine Seite im Index – Ordner wie im Wiki angeben, z. B. --under mail/")
        texts = expand.texts(question, searched)  # the question, then its expansions
        qvecs = embed(texts, settings, meta, mode, timings)
        result = rank(conn, texts, qvecs, searched, settings, meta, mode, question_kind, timings)
        question, masker, raw_sources = protect(question, result, settings, conn)
    finally:
        conn.close()
    return result, question, masker, raw_sources, meta


# -- 4. prompt -------------------------------------------------------------------------------------
def prompt_for(question, retrieval, settings, question_kind, chat):
    """(the prefix the answerability check shares, the whole prompt, the procedure's source number or None);
    the one prompt builder is rag/answer/prompt.py build_prompt()."""
    texts, procedure = context.select(question, retrieval.sources, retrieval.terms, retrieval.weights, retrieval.vocab,
                                      question_kind, settings.whole_chunks, settings.fact_sources)  # fact: None
    prefix = answer.context_part(question, retrieval.sources, chat, texts)  # for the sources the model does not read
    return prefix, answer.build_prompt(question, retrieval.sources, chat, texts, question_kind, procedure), procedure


# -- 5. stream -------------------------------------------------------------------------------------
def stream(question, retrieval, settings, result, shield):
    """Select the context, check that it answers the question, then ask for the answer; yields the
    prompt and answer events and fills `result` (an Answer)."""
    from rag.answer import answerable, judge
    from rag.models import llm  # imported here: --retrieve-only needs no HTTP library
    try:
        info = llm.server_info(settings.server, settings.api_key, settings.llm_model_name)
        chat = info["chat_template"] if settings.prompt_format == "auto" else settings.prompt_format == "chat"
        result.model = info.get("model")
        guarded = shield.guarded(retrieval)  # prompt copies: no live instruction
        prefix, result.prompt, procedure = prompt_for(question, guarded, settings, result.kind, chat)
        limit = answerable.threshold(result.model) if settings.answer_threshold is None else settings.answer_threshold
        started = time.monotonic()  # first_token_s counts from here: the check is part of the wait
        read = result.timings.setdefault("read", [])  # prompt tokens each call read (llm.read_entry), expansions first
        verbatim = result.kind == "howto" and settings.steps == "source"
        section_limit = answerable.section_threshold(result.model) if limit else None
        if verbatim and chat and section_limit:  # how-to: the model judges the section to be printed, nothing else
            for kind, data in judge.verbatim(question, guarded, settings, result, shield, section_limit, read, started):
                yield Event(kind, data)
            return
        if chat and limit:  # no threshold measured for this model (or 0): no check
            yield Event("asking", "check")
            p = answerable.p_yes(settings.server, prefix, settings.api_key, settings.llm_model_name, read=read)
            result.timings["check_s"] = round(time.monotonic() - started, 3)
            refused = p is not None and limit is not None and p < limit
            result.answerable = {"p_yes": None if p is None else round(p, 4), "threshold": limit, "refused": refused}
            if refused:
                result.text, result.timings["read_before_first_token"] = answer.NO_INFO, llm.total_read(read)
                return
        section = choose.best(guarded.sources, guarded.terms, guarded.weights, guarded.vocab) if result.kind == "howto" \
            and settings.steps == "source" else None  # how-to: the section that answers it (rag/answer/choose.py),
        #                                                  verbatim; the model only checked that the sources do
        steps = answer.steps_answer(section + 1, guarded.sources[section].content) if section is not None else None
        if steps:
            result.answered_by, result.prompt = "source", answerable.check_text(prefix) if chat and limit else None
            result.timings["first_token_s"] = round(time.monotonic() - started, 3)
            result.timings["read_before_first_token"] = llm.total_read(read)  # the lines shown need no answer request
            result.text = "".join(shield.screen([steps]))
            yield Event("piece", result.text)
            return
        result.answered_by = "model"
        if not (chat and limit):
            yield Event("asking", "answer")
        yield Event("prompt", result.prompt)
        pieces, llm_timings = [], {}
        max_tokens = settings.max_tokens or MAX_TOKENS[result.kind]
        prefill = answer.prefill(result.kind, procedure) if chat and info.get("prefill") else None
        for piece in shield.screen(llm.trimmed(llm.until_loop(llm.stream_answer(
                settings.server, result.prompt, chat, max_tokens, llm_timings, api_key=settings.api_key,
                model_name=settings.llm_model_name, prefill=prefill, system=answer.SYSTEM)))):
            if not pieces:
                result.timings["first_token_s"] = round(time.monotonic() - started, 3)
            pieces.append(piece)
            yield Event("piece", piece)
    except llm.LLMError as exc:
        raise CoreError(str(exc))
    result.timings.update(llm_timings)
    read.append(llm.read_entry("answer", {"timings": llm_timings}))  # without what came from llama-server's cache
    result.timings["read_before_first_token"] = llm.total_read(read)
    result.text = answer.cleaned(llm.without_loop("".join(pieces)))  # a loop kept once; no "…. NO_INFO", no marker


# -- the pipeline: 1 to 7 in order ----------------------------------------------------------------
def ask(question, settings, history=()):
    """Yield the events of one question (see the module docstring); the last one is "done".

    history: the conversation so far, [{"role": "user"|"assistant", "content": …}], oldest first;
    a follow-up that leans on it is searched together with the question before it, and with
    settings.rewrite also rewritten by the model into a standalone question (rag/search/expand.py).
    """
    question = (question or "").strip()
    if not question:
        raise CoreError('keine Frage angegeben – so fragen: python3 ask_rag.py "Wie lege ich eine Mailbox an?"')
    searched = expand.prepare_for(question, history, settings)  # the question as asked: no history, no --expand
    timings, question_kind = searched.timings, context.kind(searched.question)
    retrieval, question, masker, raw_sources, meta = retrieve(searched.question, settings, timings, question_kind,
                                                              searched)
    result = Answer(question, retrieval, kind=question_kind, timings=timings, searched=expand.shown(searched, masker))
    if result.searched:
        yield Event("searched", result.searched)
    yield Event("sources", retrieval)
    if not settings.retrieve_only:
        if retrieval.weak or not retrieval.sources:
            result.text, result.see_also = answer.NO_INFO, see_also.pick(retrieval.sources)
        else:
            result.llm_called = True
            shield = guard.Shield(retrieval.sources, settings.guard != "off")  # prompt copies: no live instruction
            yield from stream(expand.with_previous(question, result.searched), retrieval, settings, result, shield)
            yield Event("checks", check(result, retrieval, question, masker, shield))
        result.text = masker.mask(result.text)  # a value the model wrote itself stays out of the log
    write_audit(settings, result, raw_sources, meta)
    yield Event("done", result)


# -- 6. check --------------------------------------------------------------------------------------
def check(result, retrieval, question, masker, shield):
    """The checks of an answer, in this order: a fact answer's grounding (withdrawn when its facts stand only in
    passages about something else, rag/answer/support.py grounding; replaced when it only repeats the question,
    rag/answer/echo.py), evidence and supported citations (rag/answer/support.py; a model's [n] that does not
    support its statement is replaced by the one that does), valid citation numbers, the fact check
    (rag/answer/factcheck.py), the injection guard (rag/answer/guard.py). Fills `result`; returns them as one dict."""
    from rag.answer import echo, factcheck, support  # only after an answer: --retrieve-only does not load them
    if result.answered_by == "model" and result.kind == "fact":  # a number said of something else: withdrawn
        result.grounding = support.grounding(question, masker.mask(result.text), retrieval.sources, retrieval.vocab)
        if result.grounding is not None:  # measured on the answer as masked as the sources
            result.grounding.update(needed=GROUNDED, why=support.gap(result.grounding, GROUNDED))
            if result.grounding.setdefault("refused", bool(result.grounding["why"])):
                result.grounding["answer"], result.text = masker.mask(result.text), answer.NO_INFO
    if result.answered_by == "model" and result.kind == "fact" and echo.says_nothing(question, result.text):
        result.grounding, result.text, result.answered_by = echo.replace(  # it only repeats the question
            question, masker.mask(result.text), retrieval.sources, retrieval.vocab)
    by_model = result.answered_by == "model"  # the model's [n] are checked and corrected, a verbatim section's not
    found = support.check(result.text, retrieval.sources, retrieval.vocab, correct=by_model, question=question)
    if by_model:
        result.text = found["answer"]  # each statement cites the source that supports it (rag/answer/support.py rewrite)
    cited = result.text.split("\n", 1)[0] if not by_model else result.text  # verbatim steps: a "[3]" inside
    result.citations = answer.check_citations(cited, len(retrieval.sources))  # wiki text is no citation
    result.evidence = found["evidence"]  # from the sources, which are masked already
    result.support = [{**s, "text": masker.mask(s["text"])} for s in found["statements"]]  # the model's words
    result.unsupported = [masker.mask(claim) for claim in factcheck.unsupported_in(
        result.text, retrieval.sources, result.citations["valid"], question)]
    result.text, result.guard = shield.check(result.text, mask=masker.mask)
    result.evidence = [e for e in result.evidence if not shield.removed(e["text"])]  # never an injection as evidence
    result.see_also = see_also.pick(retrieval.sources, result.citations["valid"])  # a refusal cites none: the best
    return {"evidence": result.evidence, "support": result.support, "citations": result.citations,
            "unsupported": result.unsupported, "guard": result.guard, "answered_by": result.answered_by,
            "grounding": result.grounding, "see_also": result.see_also}


def run(question, settings, history=()):
    """The whole pipeline without streaming: the final Answer (for the API, MCP and evaluations)."""
    for event in ask(question, settings, history):
        if event.kind == "done":
            return event.data


# -- 7. audit --------------------------------------------------------------------------------------
def write_audit(settings, result, raw_sources, meta):
    """One JSON line per answer (rag/answer/audit.py); nothing for --retrieve-only or with audit=""."""
    if result.text is None or settings.audit == "":
        return
    path = settings.audit or audit.default_path(settings.db)
    try:
        line = audit.entry(result, raw_sources, meta, settings.server if result.llm_called else None)
        line["user"] = audit.pseudonym(getattr(settings.reader, "name", None), settings.audit_secret)
        audit.append(path, audit.without_text(line) if settings.audit_no_text else line, settings.audit_days)
    except OSError as exc:
        raise CoreError(f"Audit-Log {path} nicht schreibbar ({exc.strerror}) – Pfad mit --audit/RAG_AUDIT ändern "
                        f"oder --no-audit")
