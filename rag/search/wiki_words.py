"""The question in the wiki's words: what each --expand method asks the model, or reads without one.

    question_part("Hallo zusammen, seit heute … Wie schaffe ich wieder Platz? Danke, Birgit")
    -> "Wie schaffe ich wieder Platz?"
    phrases("Mein Mailprogramm meldet, der Speicher ist voll", ask)
    -> ["Quota", "Mailbox voll", …]
    choose("Mein Postfach ist voll", [("Quota › Quota erhöhen", s1), ("VPN", s2)], ask)
    -> [("Quota › …", s1)]

The methods (`ask` is rag/models/llm.py's complete_json bound to the answer server):
  phrases  the model writes up to N_PHRASES search phrases in the wiki's words;
  choose   the model reads the headings of the first N_CANDIDATES results and names up to N_CHOSEN
           that answer the question;
  prf      no model: pseudo-relevance feedback (RM3-style). The PRF_TERMS words that weigh most in
           the first PRF_DOCS results (share of each chunk's words x IDF, the question's own words
           left out).
How much each counts in the search, and what reaches the model (personal data masked), is
rag/search/expand.py's job. Every answer of the model follows a JSON schema (llama-server turns it
into a grammar, so it always parses).

Does not handle: several languages in one question, a hypothetical answer passage (HyDE), vector
feedback (Rocchio).
"""
import math
import re

from rag.text import german, sentences

# words: a longer message is first cut down to its question part (for the phrases)
LONG_QUESTION = 60
N_PHRASES = 3  # search phrases the model writes
N_CANDIDATES = 20  # choose: first results (distinct headings) the model reads
N_CHOSEN = 3  # choose: headings it may name, best first
PRF_DOCS = 5  # prf: the first results whose words are read
PRF_TERMS = 10  # prf: words taken from them
PRF_CANDIDATES = 40  # prf: the most frequent words of those results whose IDF is looked up
MAX_TOKENS_PHRASES = 40  # three phrases of up to four words, as JSON, need about 25
MAX_TOKENS_CHOOSE = 16  # "[3, 12, 7]"

GREETING = re.compile(r"^\s*(hallo|hi|hey|moin(\s+moin)?|servus|guten\s+(morgen|tag|abend)|"
                      r"liebe[s]?|sehr\s+geehrte[rs]?)\b[^,.!?\n]*[,.!\n]\s*", re.IGNORECASE)
SIGN_OFF = re.compile(r"^(danke|vielen\s+dank|merci|lg|vg|mfg|gru(ss|ß)|gr(ue|ü)(ss|ß)e|"
                      r"viele\s+gr|beste\s+gr|sch(oe|ö)nen\s+(tag|gru)|bis\s+dann|ciao|"
                      r"tsch(ue|ü)ss)", re.IGNORECASE)


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
    f"Du hilfst bei der Suche im internen IT-Wiki einer Firma. Schreibe zur Nachricht {N_PHRASES} "
    "kurze Suchbegriffe (je 1 bis 4 Wörter) in der Fachsprache der IT-Dokumentation, so wie sie "
    "wörtlich im Wiki stehen würden: Fachbegriffe, Namen von Programmen und Diensten. Keine "
    "Grüße, keine Personennamen.")
PHRASES_SCHEMA = {"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 40},
                  "minItems": 1, "maxItems": N_PHRASES}
def phrases(question, ask):
    """The model's search phrases for a question (its question part, if long): up to N_PHRASES,
    unique, none equal to the question.
    ask(messages, schema, max_tokens) -> parsed JSON (rag/models/llm.py complete_json).

    Example: phrases("Mein Postfach ist voll, was tun?", ask) -> ["Quota erhöhen", "Mailbox voll"]
    """
    found = ask([{"role": "system", "content": PHRASES_SYSTEM},
                 {"role": "user", "content": question_part(question)}],
                PHRASES_SCHEMA, MAX_TOKENS_PHRASES)
    out = []
    for phrase in found if isinstance(found, list) else []:
        phrase = " ".join(str(phrase).split())
        if phrase and phrase.casefold() not in {p.casefold() for p in out} | {question.casefold()}:
            out.append(phrase)
    return out[:N_PHRASES]


# -- choose: the model reads the headings of the first results and names the ones that answer -----
CHOOSE_SYSTEM = (
    "Du hilfst bei der Suche im internen IT-Wiki einer Firma. Du bekommst die Nachricht einer "
    "Kollegin und eine nummerierte Liste von Abschnitten aus dem Wiki. Nenne die Nummern der "
    f"Abschnitte, in denen die Antwort auf ihre Frage steht, höchstens {N_CHOSEN}, den besten "
    "zuerst. Achte auf das, was sie wissen will, nicht auf Nebensätze.")


def label(heading):
    """A heading path as the model reads it: the page title and the section.

    Example: label(
        "Speicherplatzbegrenzung für Mailboxen (Quota) › Quota › Warnungen bei voller Mailbox")
             -> "Speicherplatzbegrenzung für Mailboxen (Quota) › Warnungen bei voller Mailbox"
    """
    parts = heading.split(" › ")
    return " › ".join([parts[0], parts[-1]]) if len(parts) > 1 else parts[0]


def candidates(sources, limit=N_CANDIDATES):
    """The first `limit` distinct headings of ranked sources: [(label, source)], the first source of
    each.

    Example: sources a.md#0 "A › B", a.md#1 "A › B", b.md#0 "C"
             -> [("A › B", a.md#0), ("C", b.md#0)]
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
    """The model's choice among the listed (label, source) pairs: [(label, source)], best first,
    unique.

    Example: choose("Mein Postfach ist voll", [("Quota › Quota erhöhen", s1), ("VPN", s2)], ask)
             -> [("Quota › …", s1)]
    """
    if not listed:
        return []
    schema = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": len(listed)},
              "minItems": 1, "maxItems": N_CHOSEN}
    lines = "\n".join(f"{n}. {text}" for n, (text, _) in enumerate(listed, start=1))
    found = ask([{"role": "system", "content": CHOOSE_SYSTEM},
                 {"role": "user", "content": f"Nachricht: {question}\n\nAbschnitte:\n{lines}"}],
                schema, MAX_TOKENS_CHOOSE)
    numbers = ([n for n in found if isinstance(n, int) and 1 <= n <= len(listed)]
               if isinstance(found, list) else [])
    return [listed[n - 1] for n in dict.fromkeys(numbers)][:N_CHOSEN]


# -- prf: words of the first results, no model -----------------------------------------------------
def feedback_words(question, sources, document_frequency, total, docs=PRF_DOCS, n=PRF_TERMS):
    """The n words that weigh most in the first `docs` sources: the summed share of each source's
    content words (4+ letters, no stopwords), the most frequent PRF_CANDIDATES of them times their
    IDF (document_frequency(word) -> chunks with it, of `total`). The question's words (or their
    stems) are left out; ties by the word.

    Example: ("Postfach voll?", [Source("Quota › Warnungen",
             "Die Quota-Warnung kommt bei 90 % …"), …], df, 205)
             -> ["quota", "warnung", …]
    """
    asked = {german.stem(w) for w in german.words(question)}
    share = {}
    for source in sources[:docs]:
        found = [w for w in german.words(f"{source.heading or ''} {source.content}")
                 if len(w) >= 4 and w.isalpha() and w not in german.STOPWORDS
                 and german.stem(w) not in asked]
        for word in found:
            share[word] = share.get(word, 0.0) + 1.0 / len(found)
    frequent = sorted(share, key=lambda w: (-share[w], w))[:PRF_CANDIDATES]
    df = {w: document_frequency(w) for w in frequent}  # one full-text count per word
    idf = {w: math.log((total - df[w] + 0.5) / (df[w] + 0.5) + 1) for w in frequent}
    return sorted(frequent, key=lambda w: (-share[w] * idf[w], w))[:n]


