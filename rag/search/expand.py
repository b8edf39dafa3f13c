"""What is searched for one question: the follow-up made standalone, the question expanded, and
how much each text and ranking counts.

    prepare("Und wie lösche ich sie wieder?", history, ask=ask).question
    -> "Wie lösche ich eine Mailbox in Cyrus IMAP wieder?"
    (follow-ups: rag/search/followups.py)
    prepare("Mein Postfach ist voll", expand="phrases", ask=ask).expansions -> ["Quota", …]

What --expand adds to the search (METHODS; what the model is asked, or what is read without it, is
rag/search/wiki_words.py; the model is the answer server):
  phrases  the model's search phrases are searched too, each weighted EXPANSION_WEIGHT, below the
           question's own 1.0;
  choose   the model's choice among the headings of the first results is one more ranking,
           weighted CHOSEN_WEIGHT;
  both     phrases first, then the choice among what the question and the phrases found;
  prf      no model: the words that weigh most in the first results are searched in full text as
           one more ranking, weighted PRF_WEIGHT.
The rankings are fused by weighted RRF in rag/search/fusion.py (retrieve_fused), then the per-file
cap and the floor. A follow-up that leans on the conversation (followups.needs_context) is searched
together with the question before it (one more text, weighted HISTORY_WEIGHT; the follow-up's own
ranking FOLLOWUP_WEIGHT: no model needed), and rewritten into a standalone question from the last
HISTORY_TURNS turns, which is searched and answered in its place. Temperature 0 and a fixed seed:
the same question gives the same expansion. Personal data is replaced by placeholders before the
model reads a text and put back afterwards (shield, unshield). When the model cannot be asked,
the question is searched as it is, with one warning.

Measured (docs/suche.md, "Fragen, wie Leute fragen"; evaluate.py --expand, --followups): searching
a follow-up with the question before it lifts Recall@5 from 0.692 to 0.897; the model's rewrite
and every expansion method help little or hurt with the default 1.5B model, so both stay off by
default.

Does not handle: relative dates ("letzte Woche"), history beyond the last two turns.
"""
import dataclasses
import time

from rag import tuned
from rag.privacy import mask as privacy
from rag.search import followups
from rag.search import fusion
from rag.search import wiki_words

METHODS = ("phrases", "choose", "both", "prf")  # what --expand adds (see above)
METHOD = "phrases"  # --expand's method unless --expand-method / RAG_EXPAND_METHOD says otherwise
EXPANSION_WEIGHT = tuned.value("expand.EXPANSION_WEIGHT")  # RRF weight of each phrase's ranking
CHOSEN_WEIGHT = tuned.value("expand.CHOSEN_WEIGHT")  # choose: RRF weight of the model's choice
PRF_WEIGHT = tuned.value("expand.PRF_WEIGHT")  # prf: RRF weight of the feedback ranking


def shield(text, masker, back):
    """The text with personal data replaced by placeholders; `back` (a dict) learns the way back, so
    the model never sees a value. masker: a privacy.Masker (its kinds and kept values count;
    inactive: no change).

    Example: shield("Tel. 030 23125123?", Masker(), back) -> "Tel. [TELEFON 1]?";
             back {"[TELEFON 1]": "030 23125123"}
    """
    out, last = [], 0
    for m in masker.find(text) if masker.active else []:
        placeholder = masker.placeholder(m.kind, m.value)
        back.setdefault(placeholder, m.value)
        out += [text[last:m.start], placeholder]
        last = m.end
    return "".join(out) + text[last:]


def unshield(text, back):
    """Example: unshield("Wem gehört [TELEFON 1]?", {"[TELEFON 1]": "030 23125123"})
    -> "Wem gehört 030 23125123?" """
    for placeholder, value in back.items():
        text = text.replace(placeholder, value)
    return text


def feedback(searched):
    """For fusion.retrieve_fused: (index, the question's own Retrieval) -> [(text, weight)]: the
    feedback words as one full-text query; records them in searched.feedback."""
    def from_first(index, first):
        started = time.monotonic()
        words_ = wiki_words.feedback_words(
            searched.question, first.sources, lambda w: index.matching([(w, False)]),
            index.lexical_count() or 1, wiki_words.PRF_DOCS, wiki_words.PRF_TERMS)
        searched.feedback = words_
        searched.timings.setdefault("feedback_s", round(time.monotonic() - started, 3))
        return [(" ".join(words_), PRF_WEIGHT)] if words_ else []
    return from_first


# -- one question: what is searched ---------------------------------------------------------------
class ModelError(Exception):
    """The model could not be asked (unreachable, key refused, no JSON): one German line."""


@dataclasses.dataclass
class Searched:
    """What was searched for one question: shown by the doors (→ Gesucht: …), in --json and the
    audit log."""
    original: str  # as asked
    question: str  # searched and answered: the model's standalone follow-up, else the original
    rewritten: bool = False
    method: str = None  # METHODS: what --expand added; None: no expansion
    # more texts searched, each weighted below
    expansions: list = dataclasses.field(default_factory=list)
    # RRF weights: the question's, then each expansion's
    weights: list = dataclasses.field(default_factory=list)
    # headings the model chose among the first results
    chosen: list = dataclasses.field(default_factory=list)
    # prf: words of the first results, searched too
    feedback: list = dataclasses.field(default_factory=list)
    # a follow-up: the question before it, searched together with it (expansions[0])
    previous: str = ""
    warning: str = None  # the model could not be asked: the question was searched as it is
    # rewrite_s, expand_s, choose_s (rag/core.py adds its own)
    timings: dict = dataclasses.field(default_factory=dict)

    def as_json(self):
        return {"original": self.original, "question": self.question, "rewritten": self.rewritten,
                "method": self.method, "expansions": self.expansions, "weights": self.weights,
                "chosen": self.chosen, "feedback": self.feedback, "previous": self.previous,
                "warning": self.warning}

    def masked(self, masker):
        """A copy with personal data masked (for the output and the audit log)."""
        return dataclasses.replace(self, original=masker.mask(self.original),
                                   question=masker.mask(self.question),
                                   expansions=[masker.mask(e) for e in self.expansions],
                                   chosen=[masker.mask(c) for c in self.chosen],
                                   feedback=[masker.mask(w) for w in self.feedback],
                                   previous=masker.mask(self.previous))


def prepare(question, history=(), expand=None, ask=None, pii="mask", kinds=None, keep=(),
            rewrite=True):
    """Searched for a question: rewritten when it is a follow-up that needs the history, expanded
    with the model's phrases when `expand` is "phrases" or "both" (True: METHOD; "choose" asks the
    model later, see chooser). ask(messages, schema, max_tokens) -> JSON, raising ModelError when
    the server fails: then the question is searched as it is, with one warning, and the model is
    not asked again.
    pii, kinds, keep: as rag/privacy/mask.py protect() (only "mask" keeps values from the model).

    Example: prepare("Und wie lösche ich sie wieder?", history, ask=ask).question
             -> "Wie lösche ich eine Mailbox in Cyrus IMAP wieder?"
    """
    method = METHOD if expand is True else expand or None
    assert method in METHODS + (None,), method
    searched = Searched(question, question, method=method, weights=[1.0])
    followup, phrasing = (bool(history) and followups.needs_context(question),
                          method in ("phrases", "both"))
    before = followups.previous_question(history) if followup else ""
    if before:  # no model needed: the follow-up is searched together with the question before it
        searched.previous = before
        searched.expansions.append(f"{before} {question}")
        searched.weights = [followups.FOLLOWUP_WEIGHT, followups.HISTORY_WEIGHT]
    followup = followup and rewrite
    if ask is None or not (followup or phrasing):
        return searched
    masker, back = privacy.Masker(active=pii == "mask", kinds=kinds, keep=keep), {}
    try:
        if followup:
            started = time.monotonic()
            asked = shield(question, masker, back)
            earlier = [{**m, "content": shield(str(m.get("content") or ""), masker, back)}
                       for m in history]
            rewritten = unshield(followups.standalone(asked, earlier, ask), back)
            searched.timings["rewrite_s"] = round(time.monotonic() - started, 3)
            searched.question, searched.rewritten = rewritten, rewritten != question
        if phrasing:
            started = time.monotonic()
            found = wiki_words.phrases(shield(searched.question, masker, back), ask)
            searched.expansions += [unshield(p, back) for p in found]
            searched.weights += [EXPANSION_WEIGHT] * len(found)
            searched.timings["expand_s"] = round(time.monotonic() - started, 3)
    except ModelError as exc:
        searched.warning = f"Frage so gesucht, wie sie gestellt wurde: {exc}"
    return searched


def chooser(searched, ask, pii="mask", kinds=None, keep=()):
    """For fusion.retrieve_fused: ranked sources -> (doc ids the model chose, their weight);
    records the choice (and a failure, as searched.warning) in `searched`. Personal data never
    reaches the model.

    Example: chooser(searched, ask)(sources) -> ([17, 4], 1.0); searched.chosen
             -> ["Quota › Quota erhöhen", …]
    """
    def choose_among(sources):
        if searched.warning:  # the model failed before (rewriting, phrases): not asked again
            return [], 0.0
        started, masker, back = (time.monotonic(),
                                 privacy.Masker(active=pii == "mask", kinds=kinds, keep=keep), {})
        try:
            asked = shield(searched.question, masker, back)
            listed = [(shield(text, masker, back), source)
                      for text, source in wiki_words.candidates(sources)]
            picked = wiki_words.choose(asked, listed, ask)
        except ModelError as exc:
            searched.warning = f"ohne die Auswahl des Modells gesucht: {exc}"
            return [], 0.0
        searched.chosen = [wiki_words.label(source.heading or source.path) for _, source in picked]
        # the first call's (evaluate.py)
        searched.timings.setdefault("choose_s", round(time.monotonic() - started, 3))
        return [source.doc_id for _, source in picked], CHOSEN_WEIGHT
    return choose_among


def asker(server, api_key=None, model_name=None, read=None, call="search"):
    """ask(messages, schema, max_tokens) -> parsed JSON, bound to an answer server
    (rag/models/llm.py complete_json); a failure of the server raises ModelError with its German
    line."""
    def ask(messages, schema, max_tokens):
        # imported here: without a follow-up or --expand, no HTTP library is loaded
        from rag.models import llm
        try:
            return llm.complete_json(server, messages, schema, max_tokens, api_key, model_name,
                                     None, read, call)
        except llm.LLMError as exc:
            raise ModelError(str(exc)) from None
    return ask


# -- what rag/core.py calls ------------------------------------------------------------------------
def prepare_for(question, history, settings):
    """prepare() with rag/core.py's Settings: expansion with settings.expand; a follow-up is always
    searched together with the question before it (no model), and rewritten by the model only with
    settings.rewrite; without --expand and --rewrite the model is not asked here."""
    # the prompt tokens each call read (llm.read_entry; rag/core.py sums them up to the first token)
    read = []
    ask = asker(settings.server, settings.api_key, settings.llm_model_name, read)
    searched = prepare(question, history, settings.expand, ask, settings.pii, settings.pii_kinds,
                       settings.pii_keep, rewrite=settings.rewrite)
    return (dataclasses.replace(searched, timings={**searched.timings, "read": read}) if read
            else searched)


def texts(question, searched=None):
    """What is embedded and searched: the question, then its expansions.

    Example: texts("Postfach voll?", searched with expansions ["Quota"])
             -> ["Postfach voll?", "Quota"]
    """
    return [question, *(searched.expansions if searched else [])]


def retrieve(index, queries, searched, settings, **options):
    """fusion.retrieve_fused over [(text, vector)] of texts() with searched's weights; with the
    method choose or both, the model's choice among the first results is one more ranking. options:
    retrieve()'s. No searched, no expansions, no choice: exactly ranking.py retrieve()."""
    pick = more = None
    if searched is not None and searched.method in ("choose", "both"):
        pick = chooser(searched, asker(settings.server, settings.api_key, settings.llm_model_name,
                                       searched.timings.setdefault("read", []), "choose"),
                       settings.pii, settings.pii_kinds, settings.pii_keep)
    if searched is not None and searched.method == "prf":
        more = feedback(searched)
    return fusion.retrieve_fused(index, queries, searched.weights if searched else [1.0],
                                 chooser=pick, feedback=more, **options)


def shown(searched, masker):
    """What the doors show of `searched`, masked; None when the question was searched as asked."""
    if (searched is not None and (searched.rewritten or searched.previous or searched.method
                                  or searched.warning)):
        return searched.masked(masker)
    return None


def searched_line(question, rewritten=False, previous=""):
    """What "→ Gesucht:" shows for a follow-up (one line, every door).

    Example: ("Wie lösche ich eine Mailbox?", True, "Wie lege ich …?")
             -> "Wie lösche ich eine Mailbox? (mit der Frage davor)";
             ("Und wie lösche ich sie?", False, "Wie lege ich eine Mailbox an?")
    -> "Und wie lösche ich sie? (mit der Frage davor: „Wie lege ich eine Mailbox an?“)"
    """
    if not previous:
        return question
    return (f"{question} (mit der Frage davor)" if rewritten
            else f"{question} (mit der Frage davor: „{previous}“)")


def with_previous(question, searched):
    """The question as the answer model reads it: a follow-up that was not rewritten names the
    question before it, so that "sie" has something to point at (searched: the masked copy the doors
    show).

    Example: ("Und wie lösche ich sie?", previous "Wie lege ich eine Mailbox an?")
             -> "Und wie lösche ich sie? (Folgefrage zu: „Wie lege ich eine Mailbox an?“)"
    """
    if searched is None or not searched.previous or searched.rewritten:
        return question
    return followups.marked(question, searched.previous)


def json_field(searched):
    """Example: json_field(None) -> {}; json_field(searched)
    -> {"searched": {"original": …, …}}"""
    return {"searched": searched.as_json()} if searched is not None else {}
