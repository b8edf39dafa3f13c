"""What a door hands the core and what it gets back: Settings in; Events and, last, the Answer out.

    settings = Settings(db="knowledge.db", top_k=4)      # each door builds it: flags, a request
    Event("piece", "Laut Quelle [2]:")                   # what rag/core.py ask() yields, in order
    Answer(question, retrieval, text="…", …).as_json()   # what `ask_rag.py --json` prints

rag/core.py runs the pipeline and re-exports these names (core.Settings, core.Answer), so a door
needs only the core. CoreError is an expected failure: one German line that names the fix.

Does not handle: reading flags or requests (the doors do), running anything (rag/core.py).
"""
import dataclasses

from rag import config
from rag import tuned
from rag.answer.prompt import NO_INFO
from rag.audit import log as audit
from rag.search import expand
from rag.search import ranking as search

TOP_K = tuned.value("records.TOP_K")  # chunks in the prompt, as in the post (numbers: rag/tuned.py)
FACT_SOURCES = tuned.value("records.FACT_SOURCES")  # sources a fact answer's model reads


class CoreError(Exception):
    """An expected failure: one German line that names the fix."""


@dataclasses.dataclass
class Settings:
    """Everything a door decides for a question; each door builds it from its own flags or
    request."""
    db: str = "knowledge.db"
    # GGUF of the question embedder
    model: str = dataclasses.field(default_factory=config.default_model)
    embedding_bin: str = dataclasses.field(default_factory=config.default_embedding_bin)
    # binary: llama-embedding; server: an OpenAI-compatible /v1/embeddings
    embed_via: str = "binary"
    embed_url: str = None  # for embed_via="server" (default: server)
    embed_model_name: str = None
    api_key: str = None  # sent to the model servers as a Bearer token
    # llama-server (or any OpenAI-compatible server) for the answer
    server: str = config.DEFAULT_SERVER_URL
    llm_model_name: str = None
    prompt_format: str = "auto"  # auto | chat | completion
    max_tokens: int = None  # None: MAX_TOKENS of the question type
    # refuse when the model's P("ja, die Quellen beantworten es") is below this; None: measured
    # for the answer model (rag/answer/answerable.py), if any; 0 = no check
    answer_threshold: float = None
    top_k: int = TOP_K
    fact_sources: int = FACT_SOURCES
    mode: str = "hybrid"
    max_per_file: int = search.MAX_PER_FILE
    # None: stored in the index, else measured per model (rag/search/ranking.py)
    reject_cosine: float = None
    floor_cosine: float = None
    vector_weight: float = None
    no_floor: bool = False  # always ask the model
    retrieve_only: bool = False
    pii: str = "mask"  # rag/privacy/mask.py: mask | flag | off
    pii_kinds: frozenset = None  # the kinds masked (privacy.parse_kinds); None: all
    pii_keep: tuple = ()  # values and patterns left readable (privacy.parse_keep)
    audit: str = None  # audit log path; None = next to the index; "" = no audit
    under: str = None  # only pages below this folder, e.g. "mail/"
    # PostgreSQL: HNSW preselection, rescored exactly; False: the store decides by size
    ann: bool = False
    # the model sees every source whole (as in the post), not the parts that fit
    whole_chunks: bool = False
    # how-to answers: "source" = the section that answers it, verbatim (rag/answer/prompt.py
    # steps_answer), "model" = the answer model writes the steps
    steps: str = "source"
    #                        steps_answer), "model" = the answer model writes the steps
    guard: str = "on"  # rag/answer/guard.py: on | off (off: only to measure what the guard does)
    # rag/search/expand.py METHODS: also search what the answer model makes of the question;
    # None: off
    expand: str = None
    # rag/search/expand.py: the model rewrites a follow-up that leans on the history (--chat)
    rewrite: bool = False
    # who asks: rag/store/access.py Reader(name, groups); None = one who reads everything
    reader: object = None
    # the key of the asker's pseudonym in the audit log (RAG_AUDIT_SECRET); None: no name
    audit_secret: str = None
    audit_days: int = None  # audit lines older than this many days are dropped; None: kept
    # the audit log keeps hashes and checks, no text of question or answer
    audit_no_text: bool = False


@dataclasses.dataclass
class Answer:
    question: str  # as the model saw it (masked)
    retrieval: search.Retrieval
    text: str = None  # None: retrieve only
    llm_called: bool = False
    model: str = None
    prompt: str = None
    kind: str = None  # "howto" or "fact" (rag/answer/context.py)
    # "model"; "source": a how-to's section verbatim (steps="source"); "line": a wiki line
    # (rag/check/echo.py)
    answered_by: str = None
    answerable: dict = None  # {"p_yes", "threshold", "refused"} of the check before the answer
    # a fact answer's {"facts", "coverage", "needed", "refused"} (rag/check/grounding.py); when
    # refused also "answer", the model's answer that was withdrawn; an echo's record instead
    # (rag/check/echo.py)
    grounding: dict = None
    citations: dict = None
    # [{"n", "text"}]: verbatim source units that support the answer (rag/check/support.py)
    evidence: list = None
    support: list = None  # per statement: {"text", "cited", "supported_by", "verdict"}
    # numbers, dates, §, commands that no cited source has (rag/check/factcheck.py)
    unsupported: list = None
    # what the guard removed from the prompt, flagged and withheld (rag/check/guard.py)
    guard: dict = None
    # seconds per step, llama-server's timings, and what the model read before the first token:
    # "read" [{"call": "search"|"choose"|"check"|"answer", "prompt_n", "cached"}],
    # "read_before_first_token" their prompt_n summed (None: a server without timings)
    timings: dict = dataclasses.field(default_factory=dict)
    searched: expand.Searched = None  # the rewritten follow-up, the expansions (None: as asked)
    # [{"n", "path", "heading"}]: up to two sources of other sections the answer did not cite, best
    # first (rag/check/see_also.py); a refusal's: the best two
    see_also: list = dataclasses.field(default_factory=list)
    choice: object = None  # a how-to question's Choice: finalists, signals (rag/answer/choose.py)
    checks: list = dataclasses.field(default_factory=list)  # the checks' records, in their order
    # why the answer is the refusal or not the model's words (rag/check/why.py); None: the model's
    # stands
    why: str = None
    # a check replaced the answer the model streamed (a door that showed it shows `text` after it)
    replaced: bool = False
    id: str = dataclasses.field(default_factory=audit.new_id)  # key of its audit line and vote

    @property
    def refused(self):
        """The answer is the refusal ("Dazu habe ich keine Information."), however it came to be
        (`why` says how): every door then shows the refusal, its why and the candidates, but no
        citation, evidence or fact marks."""
        return (self.text or "").strip() == NO_INFO

    def as_json(self):
        """The answer as `ask_rag.py --json` prints it (and the API and MCP return it)."""
        r = self.retrieval
        return {"id": self.id, "question": self.question, "answer": self.text,
                "weak_evidence": r.weak, "mode": r.mode, "strategy": r.strategy,
                "query_text": r.query_text, "llm_called": self.llm_called,
                "coverage": round(r.coverage, 3),
                "best_cosine": None if r.best_cosine is None else round(r.best_cosine, 6),
                "scan": r.scan, "scan_processes": r.scan_processes,
                "scan_candidates": r.scan_candidates, "under": r.under, "kind": self.kind,
                "answered_by": self.answered_by, "answerable": self.answerable,
                "grounding": self.grounding, "citations": self.citations, "evidence": self.evidence,
                "support": self.support, "unsupported": self.unsupported, "guard": self.guard,
                "sources": [s.as_json() for s in r.sources], "timings": self.timings,
                "see_also": self.see_also, "why": self.why,
                "verdicts": [c.as_json() for c in self.checks], **expand.json_field(self.searched)}


@dataclasses.dataclass
class Event:
    kind: str  # searched | sources | asking | prompt | piece | checks | done
    data: object
