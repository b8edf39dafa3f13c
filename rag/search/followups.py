"""Follow-ups: does a question lean on the conversation, the question(s) before it, and the model's
rewrite of it into a question that stands on its own.

    needs_context("Und wie lösche ich sie wieder?")                   -> True
    previous_question([user "Wie lege ich eine Mailbox an?", assistant "…"])
    -> "Wie lege ich eine Mailbox an?"
    standalone("Und wie lösche ich sie wieder?", history, ask)
    -> "Wie lösche ich eine Mailbox in Cyrus IMAP wieder?"

rag/search/expand.py prepare() uses them: a follow-up is searched together with the question before
it (one more text, weighted HISTORY_WEIGHT; its own ranking FOLLOWUP_WEIGHT: no model needed), and
with --rewrite the model writes it as a standalone question from the last HISTORY_TURNS turns.

Does not handle: history beyond the last two turns, a follow-up that changes the subject without a
pronoun ("Und bei Exchange?" is read as one because it is short), personal data (the caller shields
it).
"""
import re

from rag import tuned

HISTORY_TURNS = 2  # a follow-up is read against the last two turns (question + answer each)
# words: a follow-up this short is read against the history even without a pronoun
SHORT_FOLLOWUP = 4
MAX_TOKENS_REWRITE = 160  # one question (60 cut a long one off mid-JSON in evaluate.py --followups)
HISTORY_CHARS = 600  # of each earlier message: enough for a short answer, keeps the prompt small
PRONOUNS = set("""sie er ihn ihm ihnen das dies diese dieser dieses diesem diesen deren dessen
    dafür dafuer dazu davon damit darauf daran darin darüber darueber dabei dadurch dagegen dort
    dorthin eins solche dann vorher danach davor nachher
    """.split())  # a pronoun only when no noun follows ("das Passwort" is an article)
# pronouns too, when an adverb follows: "Brauche ich die auch?"
ARTICLES = {"der", "die", "den", "dem"}
ADVERBS = {"auch", "denn", "noch", "schon", "wieder", "dann", "da", "dort", "jetzt", "mal", "immer",
           "nicht", ""}
CONTINUATIONS = ("und", "aber", "oder", "auch", "sonst", "dann", "also")
REFERS_BACK = set("sie er ihn ihm ihnen das dies diese dieser dieses diesem diesen deren dessen "
                  "eins solche".split())
#   pronouns that a noun earlier in the same question can carry; "dann", "dort", "dafür" … lean
#   on the conversation
# capitalised, but no noun a pronoun could point to
FORMAL = {"Sie", "Ihr", "Ihre", "Ihren", "Ihrem", "Ihrer", "Ihnen"}
# what marked() appends; a small model sometimes copies it
MARKED = re.compile(r"\s*\(Folgefrage zu: „[^“\n]*“\)")


def marked(question, previous):
    """The follow-up as the answer model reads it, naming the question before it.

    Example: marked("Und wie lösche ich sie?", "Wie lege ich eine Mailbox an?")
             -> "Und wie lösche ich sie? (Folgefrage zu: „Wie lege ich eine Mailbox an?“)"
    """
    return f"{question} (Folgefrage zu: „{previous}“)"


def unmarked(text):
    """The text without a copied marked() note. Example: "2 GB [1]. (Folgefrage zu: „…“)"
    -> "2 GB [1]." """
    return MARKED.sub("", text)


def needs_context(question):
    """Does this question lean on what was said before? Short, starts with "Und …", or a pronoun
    that no noun follows ("sie wieder", "das überprüft"; "das Passwort" is an article, not a
    pronoun), that opens no clause after a comma ("…, damit i-doit …") and that no noun of the
    question itself can carry ("Der Admin … – wie starte ich ihn?"; only for REFERS_BACK:
    "dann", "dort", "dafür" lean on the conversation). Over the standalone questions of eval/
    (705): 140 read as follow-ups before these two rules, 63 after; the 39 follow-ups of
    eval/followups.jsonl stay follow-ups.

    Example: needs_context("Und wie lösche ich sie wieder?") -> True;
             needs_context("Wie lange dauert das Anlegen einer Mailbox in Cyrus?") -> False
    """
    found = list(re.finditer(r"[^\W\d_]+", question))
    tokens = [m.group() for m in found]
    if not tokens:
        return False
    if len(tokens) <= SHORT_FOLLOWUP or tokens[0].lower() in CONTINUATIONS:
        return True
    first_noun = next((n for n, t in enumerate(tokens) if n and t[:1].isupper()
                       and t not in FORMAL), len(tokens))
    for n, (word, after) in enumerate(zip(tokens, tokens[1:] + [""])):
        # ", damit i-doit …", "ein Skript, das …"
        opens_clause = question[:found[n].start()].rstrip().endswith(",")
        # "Der Admin … – wie starte ich ihn?" points inside
        named = word in REFERS_BACK and first_noun < n
        # lower case: not "Sie"
        if word in PRONOUNS and not after[:1].isupper() and not opens_clause and not named:
            return True
        if word in ARTICLES and after.lower() in ADVERBS:
            return True
    return False


# two worked examples in front made the 1.5B model copy the first question
# (evaluate.py --followups: R@5 0.487 rewritten alone, docs/suche.md)
REWRITE_SYSTEM = (
    "Du formulierst Folgefragen aus einem Gespräch über das IT-Wiki einer Firma um. Schreibe die "
    "letzte Frage so um, dass sie ohne das Gespräch verständlich ist: Ersetze Wörter wie "
    "„sie“, „das“, „dort“ und Auslassungen durch das, worauf sie sich beziehen, mit "
    "den Begriffen aus dem Gespräch. Beantworte die Frage nicht. Ist die Frage schon ohne das "
    "Gespräch verständlich, gib sie unverändert zurück.")
REWRITE_SCHEMA = {"type": "string", "minLength": 5, "maxLength": 200}
# a follow-up that leans on the history: RRF weight of its own ranking, and of the previous question
# and the follow-up searched as one text
FOLLOWUP_WEIGHT = tuned.value("followups.FOLLOWUP_WEIGHT")
HISTORY_WEIGHT = tuned.value("followups.HISTORY_WEIGHT")


def recent(history, turns=HISTORY_TURNS):
    """The last `turns` question/answer pairs as prompt lines, each message cut to HISTORY_CHARS.

    Example: [{"role": "user", "content": "Wie lege ich eine Mailbox an?"},
              {"role": "assistant", "content": "Mit cm [1]."}]
             -> "Frage: Wie lege ich eine Mailbox an?\\nAntwort: Mit cm [1]."
    """
    label = {"user": "Frage", "assistant": "Antwort"}
    messages = [m for m in history if m.get("role") in label
                and str(m.get("content") or "").strip()]
    lines = [f"{label[m['role']]}: {' '.join(str(m['content']).split())[:HISTORY_CHARS]}"
             for m in messages[-2 * turns:]]
    return "\n".join(lines)


def standalone(question, history, ask):
    """The follow-up as a question that stands on its own, from the last HISTORY_TURNS turns.

    Example: ("Und wie lösche ich sie wieder?",
              [{"role": "user", "content": "Wie lege ich in Cyrus eine Mailbox an?"}], ask)
             -> "Wie lösche ich eine Mailbox in Cyrus wieder?"
    """
    prompt = f"Gespräch:\n{recent(history)}\n\nLetzte Frage: {question}"
    found = ask([{"role": "system", "content": REWRITE_SYSTEM},
                 {"role": "user", "content": prompt}],
                REWRITE_SCHEMA, MAX_TOKENS_REWRITE)
    found = " ".join(str(found).split()) if isinstance(found, str) else ""
    return found if found and not echoes(found) else question


def echoes(text, source=REWRITE_SYSTEM, span=4):
    """Does the model's text repeat its instructions (any `span` words in a row of `source`)?
    A small model sometimes answers with its system prompt instead of a question.

    Example: echoes("Ersetze Wörter wie sie, das, dort und …") -> True;
             echoes("Wie lösche ich eine Mailbox?") -> False
    """
    said = re.findall(r"\w+", source.lower())
    grams = {tuple(said[n:n + span]) for n in range(len(said) - span + 1)}
    found = re.findall(r"\w+", text.lower())
    return any(tuple(found[n:n + span]) in grams for n in range(len(found) - span + 1))


def previous_question(history, turns=HISTORY_TURNS):
    """The question(s) the user asked before this one ("" when none): the last one, and when it
    leaned on the conversation itself, the one before it too (at most `turns`), cut to
    HISTORY_CHARS.

    Example: [user "Wie lege ich eine Mailbox an?", assistant "…",
             user "Und wie lösche ich sie?", …]
             -> "Wie lege ich eine Mailbox an? Und wie lösche ich sie?"
    """
    asked = [" ".join(str(m.get("content") or "").split()) for m in history
             if m.get("role") == "user"]
    picked = []
    for question in reversed([q for q in asked if q]):
        picked.insert(0, question)
        if len(picked) == turns or not needs_context(question):
            break
    return " ".join(picked)[:HISTORY_CHARS]
