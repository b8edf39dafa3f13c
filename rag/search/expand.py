"""Questions as the wiki would put them: query expansion, and follow-ups made standalone.

    question_part("Hallo zusammen, seit heute … Wie schaffe ich wieder Platz? Danke, Birgit")
    -> "Wie schaffe ich wieder Platz?"
    phrases("Mein Mailprogramm meldet, der Speicher ist voll", ask)  -> ["Quota", "Mailbox voll", …]
    prepare("Und wie lösche ich sie wieder?", history, ask=ask).question    (follow-ups: rag/search/followups.py)
    -> "Wie lösche ich eine Mailbox in Cyrus IMAP wieder?"
    choose("Mein Postfach ist voll", [("Quota › Quota erhöhen", s1), ("VPN", s2)], ask) -> [("Quota › …", s1)]

What --expand adds to the search (METHODS; the model is the answer server, `ask` is rag/models/llm.py's
complete_json bound to it):
  phrases  the model writes up to N_PHRASES search phrases in the wiki's words; each is searched
           too and weighted EXPANSION_WEIGHT, below the question's own 1.0;
  choose   the model reads the headings of the first N_CANDIDATES results and names up to N_CHOSEN
           that answer the question; that choice is one more ranking, weighted CHOSEN_WEIGHT;
  both     phrases first, then the choice among what the question and the phrases found;
  prf      no model: pseudo-relevance feedback (RM3-style). The PRF_TERMS words that weigh most in the
           first PRF_DOCS results (share of each chunk's words x IDF, the question's own words left out)
           are searched in full text as one more ranking, weighted PRF_WEIGHT.
The rankings are fused by weighted RRF in rag/search/ranking.py (retrieve_fused), then the per-file cap
and the floor. A follow-up that leans on the conversation (followups.needs_context) is searched together
with the question before it (one more text, weighted HISTORY_WEIGHT; the follow-up's own ranking
FOLLOWUP_WEIGHT: no model needed), and rewritten into a standalone question from the last
HISTORY_TURNS turns, which is searched and answered in its place. Every answer of the model follows a JSON
schema (llama-server turns it into a grammar, so it always parses); temperature 0 and a fixed seed:
the same question gives the same expansion. Personal data is replaced by placeholders before the
model reads a text and put back afterwards (shield, unshield). When the model cannot be asked,
the question is searched as it is, with one warning.

Measured (docs/suche.md, "Fragen, wie Leute fragen"; evaluate.py --expand, --followups): searching a follow-up
with the question before it lifts Recall@5 from 0.692 to 0.897; the model's rewrite and every
expansion method help little or hurt with the default 1.5B model, so both stay off by default.

Does not handle: several languages in one question, relative dates ("letzte Woche"), history
beyond the last two turns, a hypothetical answer passage (HyDE), vector feedback (Rocchio).
"""
import dataclasses
import math
import re
import time

from rag import tuned
from rag.privacy import mask as privacy
from rag.search import followups
from rag.search import ranking as search
from rag.text import german, sentences

METHODS = ("phrases", "choose", "both", "prf")  # what --expand adds (see above)
METHOD = "phrases"  # --expand's method unless --expand-method / RAG_EXPAND_METHOD says otherwise
LONG_QUESTION = 60  # words: a longer message is first cut down to its question part (for the phrases)
N_PHRASES = 3  # search phrases the model writes
EXPANSION_WEIGHT = tuned.value("expand.EXPANSION_WEIGHT")  # RRF weight of each phrase's ranking
N_CANDIDATES = 20  # choose: first results (distinct headings) the model reads
N_CHOSEN = 3  # choose: headings it may name, best first
CHOSEN_WEIGHT = tuned.value("expand.CHOSEN_WEIGHT")  # choose: RRF weight of the model's choice
PRF_DOCS = 5  # prf: the first results whose words are read
PRF_TERMS = 10  # prf: words taken from them
PRF_CANDIDATES = 40  # prf: the most frequent words of those results whose IDF is looked up
PRF_WEIGHT = tuned.value("expand.PRF_WEIGHT")  # prf: RRF weight of the feedback ranking
MAX_TOKENS_PHRASES = 40  # three phrases of up to four words, as JSON, need about 25
MAX_TOKENS_CHOOSE = 16  # "[3, 12, 7]"

GREETING = re.compile(r"^\s*(hallo|hi|hey|moin(\s+moin)?|servus|guten\s+(morgen|tag|abend)|liebe[s]?|"
                      r"sehr\s+geehrte[rs]?)\b[^,.!?\n]*[,.!\n]\s*", re.IGNORECASE)
SIGN_OFF = re.compile(r"^(danke|vielen\s+dank|merci|lg|vg|mfg|gru(ss|ß)|gr(ue|ü)(ss|ß)e|viele\s+gr|beste\s+gr|"
                      r"sch(oe|ö)nen\s+(tag|gru)|bis\s+dann|ciao|tsch(ue|ü)ss)", re.IGNORECASE)


def words(text):
    """Example: words("Und wie lösche ich sie?") -> 5"""
    return len(text.split())


def question_part(text, limit=LONG_QUESTION):
    """A long message cut down to what it asks: greeting and sign-off dropped, the sentences
    with a question mark kept (all but greeting and sign-off when none has one). Short text stays.

    Example: "Hallo zusammen, mein Postfach ist voll. Wie bekomme ich mehr Platz? Danke, Birgit"
             (limit 5) -> "Wie bekomme ich mehr Platz?"
    """
    if words(text) <= limit:
        return text
    body = GREETING.sub("", text, count=1)
    parts = [s for line in body.split("\n") for s in sentences.split(line)]
    while parts and (SIGN_OFF.match(parts[-1]) or words(parts[-1]) <= 3):
        parts.pop()
    asked = [s for s in parts if "?" in s]
    return " ".join(asked or parts) or text


# -- what the model is asked, and the JSON it must answer with ------------------------------------
PHRASES_SYSTEM = (
    f"Du hilfst bei der Suche im internen IT-Wiki einer Firma. Schreibe zur Nachricht {N_PHRASES} kurze Suchbegriffe "
    "(je 1 bis 4 Wörter) in der Fachsprache der IT-Dokumentation, so wie sie wörtlich im Wiki stehen würden: "
    "Fachbegriffe, Namen von Programmen und Diensten. Keine Grüße, keine Personennamen.")
PHRASES_SCHEMA = {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 40},
                  "minItems": 1, "maxItems": N_PHRASES}
def shield(text, masker, back):
    """The text with personal data replaced by placeholders; `back` (a dict) learns the way back, so the
    model never sees a value. masker: a privacy.Masker (its kinds and kept values count; inactive: no change).

    Example: shield("Tel. 030 23125123?", Masker(), back) -> "Tel. [TELEFON 1]?"; back {"[TELEFON 1]": "030 23125123"}
    """
    out, last = [], 0
    for m in masker.find(text) if masker.active else []:
        placeholder = masker.placeholder(m.kind, m.value)
        back.setdefault(placeholder, m.value)
        out += [text[last:m.start], placeholder]
        last = m.end
    return "".join(out) + text[last:]


def unshield(text, back):
    """Example: unshield("Wem gehört [TELEFON 1]?", {"[TELEFON 1]": "030 23125123"}) -> "Wem gehört 030 23125123?" """
    for placeholder, value in back.items():
        text = text.replace(placeholder, value)
    return text


def phrases(question, ask):
    """The model's search phrases for a question (its question part, if long): up to N_PHRASES, unique,
    none equal to the question. ask(messages, schema, max_tokens) -> parsed JSON (rag/models/llm.py complete_json).

    Example: phrases("Mein Postfach ist voll, was tun?", ask) -> ["Quota erhöhen", "Mailbox voll"]
    """
    found = ask([{"role": "system", "content": PHRASES_SYSTEM}, {"role": "user", "content": question_part(question)}],
                PHRASES_SCHEMA, MAX_TOKENS_PHRASES)
    out = []
    for phrase in found if isinstance(found, list) else []:
        phrase = " ".join(str(phrase).split())
        if phrase and phrase.casefold() not in {p.casefold() for p in out} | {question.casefold()}:
            out.append(phrase)
    return out[:N_PHRASES]


# -- choose: the model reads the headings of the first results and names the ones that answer -----
CHOOSE_SYSTEM = (
    "Du hilfst bei der Suche im internen IT-Wiki einer Firma. Du bekommst die Nachricht einer Kollegin und eine "
    "nummerierte Liste von Abschnitten aus dem Wiki. Nenne die Nummern der Abschnitte, in denen die Antwort auf ihre "
    f"Frage steht, höchstens {N_CHOSEN}, den besten zuerst. Achte auf das, was sie wissen will, nicht auf Nebensätze.")


def label(heading):
    """A heading path as the model reads it: the page title and the section.

    Example: label("Speicherplatzbegrenzung für Mailboxen (Quota) › Quota › Warnungen bei voller Mailbox")
             -> "Speicherplatzbegrenzung für Mailboxen (Quota) › Warnungen bei voller Mailbox"
    """
    parts = heading.split(" › ")
    return " › ".join([parts[0], parts[-1]]) if len(parts) > 1 else parts[0]


def candidates(sources, limit=N_CANDIDATES):
    """The first `limit` distinct headings of ranked sources: [(label, source)], the first source of each.

    Example: sources a.md#0 "A › B", a.md#1 "A › B", b.md#0 "C" -> [("A › B", a.md#0), ("C", b.md#0)]
    """
    out, seen = [], set()
    for source in sources:
        text = label(source.heading or source.path)
        if text not in seen:
            seen.add(text)
            out.append((text, source))
        if len(out) == limit:
            break
    return out


def choose(question, listed, ask):
    """The model's choice among the listed (label, source) pairs: [(label, source)], best first, unique.

    Example: choose("Mein Postfach ist voll", [("Quota › Quota erhöhen", s1), ("VPN", s2)], ask) -> [("Quota › …", s1)]
    """
    if not listed:
        return []
    schema = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": len(listed)},
              "minItems": 1, "maxItems": N_CHOSEN}
    lines = "\n".join(f"{n}. {text}" for n, (text, _) in enumerate(listed, start=1))
    found = ask([{"role": "system", "content": CHOOSE_SYSTEM},
                 {"role": "user", "content": f"Nachricht: {question}\n\nAbschnitte:\n{lines}"}],
                schema, MAX_TOKENS_CHOOSE)
    numbers = [n for n in found if isinstance(n, int) and 1 <= n <= len(listed)] if isinstance(found, list) else []
    return [listed[n - 1] for n in dict.fromkeys(numbers)][:N_CHOSEN]


# -- prf: words of the first results, no model -----------------------------------------------------
def feedback_words(question, sources, document_frequency, total, docs=PRF_DOCS, n=PRF_TERMS):
    """The n words that weigh most in the first `docs` sources: the summed share of each source's
    content words (4+ letters, no stopwords), the most frequent PRF_CANDIDATES of them times their IDF
    (document_frequency(word) -> chunks with it, of `total`). The question's words (or their stems)
    are left out; ties by the word.

    Example: ("Postfach voll?", [Source("Quota › Warnungen", "Die Quota-Warnung kommt bei 90 % …"), …], df, 205)
             -> ["quota", "warnung", …]
    """
    asked = {german.stem(w) for w in german.words(question)}
    share = {}
    for source in sources[:docs]:
        found = [w for w in german.words(f"{source.heading or ''} {source.content}")
                 if len(w) >= 4 and w.isalpha() and w not in german.STOPWORDS and german.stem(w) not in asked]
        for word in found:
            share[word] = share.get(word, 0.0) + 1.0 / len(found)
    frequent = sorted(share, key=lambda w: (-share[w], w))[:PRF_CANDIDATES]
    df = {w: document_frequency(w) for w in frequent}  # one full-text count per word
    idf = {w: math.log((total - df[w] + 0.5) / (df[w] + 0.5) + 1) for w in frequent}
    return sorted(frequent, key=lambda w: (-share[w] * idf[w], w))[:n]


def feedback(searched):
    """For search.retrieve_fused: (index, the question's own Retrieval) -> [(text, weight)]: the
    feedback words as one full-text query; records them in searched.feedback."""
    def from_first(index, first):
        started = time.monotonic()
        words_ = feedback_words(searched.question, first.sources, lambda w: index.matching([(w, False)]),
                                index.lexical_count() or 1, PRF_DOCS, PRF_TERMS)
        searched.feedback = words_
        searched.timings.setdefault("feedback_s", round(time.monotonic() - started, 3))
        return [(" ".join(words_), PRF_WEIGHT)] if words_ else []
    return from_first


# -- one question: what is searched ---------------------------------------------------------------
class ModelError(Exception):
    """The model could not be asked (unreachable, key refused, no JSON): one German line."""


@dataclasses.dataclass
class Searched:
    """What was searched for one question: shown by the doors (→ Gesucht: …), in --json and the audit log."""
    original: str  # as asked
    question: str  # searched and answered: the model's standalone follow-up, else the original
    rewritten: bool = False
    method: str = None  # METHODS: what --expand added; None: no expansion
    expansions: list = dataclasses.field(default_factory=list)  # more texts searched, each weighted below
    weights: list = dataclasses.field(default_factory=list)  # RRF weights: the question's, then each expansion's
    chosen: list = dataclasses.field(default_factory=list)  # headings the model chose among the first results
    feedback: list = dataclasses.field(default_factory=list)  # prf: words of the first results, searched too
    previous: str = ""  # a follow-up: the question before it, searched together with it (expansions[0])
    warning: str = None  # the model could not be asked: the question was searched as it is
    timings: dict = dataclasses.field(default_factory=dict)  # rewrite_s, expand_s, choose_s (rag/core.py adds its own)

    def as_json(self):
        return {"original": self.original, "question": self.question, "rewritten": self.rewritten,
                "method": self.method, "expansions": self.expansions, "weights": self.weights,
                "chosen": self.chosen, "feedback": self.feedback, "previous": self.previous, "warning": self.warning}

    def masked(self, masker):
        """A copy with personal data masked (for the output and the audit log)."""
        return dataclasses.replace(self, original=masker.mask(self.original), question=masker.mask(self.question),
                                   expansions=[masker.mask(e) for e in self.expansions],
                                   chosen=[masker.mask(c) for c in self.chosen],
                                   feedback=[masker.mask(w) for w in self.feedback], previous=masker.mask(self.previous))


def prepare(question, history=(), expand=None, ask=None, pii="mask", kinds=None, keep=(), rewrite=True):
    """Searched for a question: rewritten when it is a follow-up that needs the history, expanded with
    the model's phrases when `expand` is "phrases" or "both" (True: METHOD; "choose" asks the model
    later, see chooser). ask(messages, schema, max_tokens) -> JSON, raising ModelError when the server
    fails: then the question is searched as it is, with one warning, and the model is not asked again.
    pii, kinds, keep: as rag/privacy/mask.py protect() (only "mask" keeps values from the model).

    Example: prepare("Und wie lösche ich sie wieder?", history, ask=ask).question
             -> "Wie lösche ich eine Mailbox in Cyrus IMAP wieder?"
    """
    method = METHOD if expand is True else expand or None
    assert method in METHODS + (None,), method
    searched = Searched(question, question, method=method, weights=[1.0])
    followup, phrasing = bool(history) and followups.needs_context(question), method in ("phrases", "both")
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
            earlier = [{**m, "content": shield(str(m.get("content") or ""), masker, back)} for m in history]
            rewritten = unshield(followups.standalone(asked, earlier, ask), back)
            searched.timings["rewrite_s"] = round(time.monotonic() - started, 3)
            searched.question, searched.rewritten = rewritten, rewritten != question
        if phrasing:
            started = time.monotonic()
            found = phrases(shield(searched.question, masker, back), ask)
            searched.expansions += [unshield(p, back) for p in found]
            searched.weights += [EXPANSION_WEIGHT] * len(found)
            searched.timings["expand_s"] = round(time.monotonic() - started, 3)
    except ModelError as exc:
        searched.warning = f"Frage so gesucht, wie sie gestellt wurde: {exc}"
    return searched


def chooser(searched, ask, pii="mask", kinds=None, keep=()):
    """For search.retrieve_fused: ranked sources -> (doc ids the model chose, their weight); records the
    choice (and a failure, as searched.warning) in `searched`. Personal data never reaches the model.

    Example: chooser(searched, ask)(sources) -> ([17, 4], 1.0); searched.chosen -> ["Quota › Quota erhöhen", …]
    """
    def choose_among(sources):
        if searched.warning:  # the model failed before (rewriting, phrases): not asked again
            return [], 0.0
        started, masker, back = time.monotonic(), privacy.Masker(active=pii == "mask", kinds=kinds, keep=keep), {}
        try:
            asked = shield(searched.question, masker, back)
            listed = [(shield(text, masker, back), source) for text, source in candidates(sources)]
            picked = choose(asked, listed, ask)
        except ModelError as exc:
            searched.warning = f"ohne die Auswahl des Modells gesucht: {exc}"
            return [], 0.0
        searched.chosen = [label(source.heading or source.path) for _, source in picked]
        searched.timings.setdefault("choose_s", round(time.monotonic() - started, 3))  # the first call's (evaluate.py)
        return [source.doc_id for _, source in picked], CHOSEN_WEIGHT
    return choose_among


def asker(server, api_key=None, model_name=None, read=None, call="search"):
    """ask(messages, schema, max_tokens) -> parsed JSON, bound to an answer server (rag/models/llm.py
    complete_json); a failure of the server raises ModelError with its German line."""
    def ask(messages, schema, max_tokens):
        from rag.models import llm  # imported here: without a follow-up or --expand, no HTTP library is loaded
        try:
            return llm.complete_json(server, messages, schema, max_tokens, api_key, model_name, None, read, call)
        except llm.LLMError as exc:
            raise ModelError(str(exc)) from None
    return ask


# -- what rag/core.py calls ------------------------------------------------------------------------
def prepare_for(question, history, settings):
    """prepare() with rag/core.py's Settings: expansion with settings.expand; a follow-up is always
    searched together with the question before it (no model), and rewritten by the model only with
    settings.rewrite; without --expand and --rewrite the model is not asked here."""
    read = []  # the prompt tokens each call read (llm.read_entry; rag/core.py sums them up to the first token)
    ask = asker(settings.server, settings.api_key, settings.llm_model_name, read)
    searched = prepare(question, history, settings.expand, ask, settings.pii, settings.pii_kinds, settings.pii_keep,
                       rewrite=settings.rewrite)
    return dataclasses.replace(searched, timings={**searched.timings, "read": read}) if read else searched


def texts(question, searched=None):
    """What is embedded and searched: the question, then its expansions.

    Example: texts("Postfach voll?", searched with expansions ["Quota"]) -> ["Postfach voll?", "Quota"]
    """
    return [question, *(searched.expansions if searched else [])]


def retrieve(index, queries, searched, settings, **options):
    """search.retrieve_fused over [(text, vector)] of texts() with searched's weights; with the method
    choose or both, the model's choice among the first results is one more ranking. options: retrieve()'s.
    No searched, no expansions, no choice: exactly search.retrieve()."""
    pick = more = None
    if searched is not None and searched.method in ("choose", "both"):
        pick = chooser(searched, asker(settings.server, settings.api_key, settings.llm_model_name,
                                       searched.timings.setdefault("read", []), "choose"),
                       settings.pii, settings.pii_kinds, settings.pii_keep)
    if searched is not None and searched.method == "prf":
        more = feedback(searched)
    return search.retrieve_fused(index, queries, searched.weights if searched else [1.0], chooser=pick,
                                 feedback=more, **options)


def shown(searched, masker):
    """What the doors show of `searched`, masked; None when the question was searched as asked."""
    if searched is not None and (searched.rewritten or searched.previous or searched.method or searched.warning):
        return searched.masked(masker)
    return None


def searched_line(question, rewritten=False, previous=""):
    """What "→ Gesucht:" shows for a follow-up (one line, every door).

    Example: ("Wie lösche ich eine Mailbox?", True, "Wie lege ich …?") -> "Wie lösche ich eine Mailbox? (mit der Frage davor)";
             ("Und wie lösche ich sie?", False, "Wie lege ich eine Mailbox an?")
             -> "Und wie lösche ich sie? (mit der Frage davor: „Wie lege ich eine Mailbox an?“)"
    """
    if not previous:
        return question
    return f"{question} (mit der Frage davor)" if rewritten else f"{question} (mit der Frage davor: „{previous}“)"


def with_previous(question, searched):
    """The question as the answer model reads it: a follow-up that was not rewritten names the question
    before it, so that "sie" has something to point at (searched: the masked copy the doors show).

    Example: ("Und wie lösche ich sie?", previous "Wie lege ich eine Mailbox an?")
             -> "Und wie lösche ich sie? (Folgefrage zu: „Wie lege ich eine Mailbox an?“)"
    """
    if searched is None or not searched.previous or searched.rewritten:
        return question
    return followups.marked(question, searched.previous)


def json_field(searched):
    """Example: json_field(None) -> {}; json_field(searched) -> {"searched": {"original": …, …}}"""
    return {"searched": searched.as_json()} if searched is not None else {}
