"""Which question written at index time found a source: --explain's "gefunden über die Frage: …".

    found_by(index, result, scan)
    -> {17: "Wie groß darf mein Postfach sein?"}     (doc_id -> the question that found it)

Vector: the scan names the question whose vector scored above the chunk's own
(rag/store/questions.py). Lexical: a question found a chunk when it holds words of the reader's
question (IDF-weighted, as the cascade weighs them) that the chunk's own heading and text lack;
the question adding the most is named. Where both say something, the vector's question is named
(it decided the chunk's vector rank).

Does not handle: sources past the first EXPLAINED, page words (front matter title, tags).
"""
from rag.search.lexical import covered, tokens

EXPLAINED = 12  # sources looked at, the first ones (the answer reads 4, --explain shows them)


def found_by(index, result, scan=None):
    """{doc_id: question} for the first EXPLAINED sources of a Retrieval; scan: its vectors.Scan."""
    shown = result.sources[:EXPLAINED]
    via = (scan.questions if scan is not None else None) or {}
    lexical = [s for s in shown if "lexical" in s.ranks]
    asked = index.questions_of([s.doc_id for s in lexical]) if lexical and result.terms else {}
    found = {}
    for source in lexical:
        texts = asked.get(source.doc_id, ())
        question = adding_most(source, texts, result.terms, result.weights, result.vocab)
        if question:
            found[source.doc_id] = question
    for source in shown:
        if source.doc_id in via and "vector" in source.ranks:
            found[source.doc_id] = via[source.doc_id]
    return found


def adding_most(source, questions, terms, weights, vocab):
    """The question that adds the most of the reader's question to the chunk's own words, or None.

    Example: chunk "Quota › Die Quota ist 2 GB", terms of "Postfach voll", questions
    ["Postfach voll, was tun?"] -> "Postfach voll, was tun?" (the chunk itself has neither word)
    """
    own = tokens(source.heading + "\n" + source.content, vocab)
    base, best, question = covered(own, terms, weights), 0.0, None
    for text in questions:
        gain = covered(own | tokens(text, vocab), terms, weights) - base
        if gain > best + 1e-12:
            best, question = gain, text
    return question
