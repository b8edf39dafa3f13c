"""What the answer's stream goes through on its way to the reader: the prefill once, no leading or
trailing whitespace, and an end when the model loops.

    trimmed(until_loop(stream_answer(…)))   # rag/core.py: the pieces as the doors show them
    without_loop("Sie darf 25 MB groß sein groß sein groß sein") -> "Sie darf 25 MB groß sein"

rag/models/llm.py streams the pieces (and puts the prefill in front with with_prefill); the core
closes the stream through until_loop, so the server stops generating.

Does not handle: a loop of single words ("sein sein sein"), a loop longer than LOOP_WORDS words.
"""
import re

# until_loop(): a phrase of 2 to 12 words three times in a row ends the answer
LOOP_REPEATS, LOOP_WORDS = 3, 12


def with_prefill(pieces, prefill):
    """The pieces, beginning with `prefill` exactly once (llama-server repeats a prefilled assistant
    message at the start of its stream; a server that does not gets it put in front).

    Example: with_prefill(["Laut [2]:\n1.", " SSH"], "Laut [2]:\n1.") -> "Laut [2]:\n1.", " SSH"
    """
    head = ""
    for piece in pieces:
        if head is None:
            yield piece
            continue
        head += piece
        if len(head) < len(prefill) and prefill.startswith(head):
            continue
        yield head if head.startswith(prefill) else prefill + head
        head = None
    if head:  # the stream ended before the prefill was complete
        yield head if head.startswith(prefill) else prefill + head


def trimmed(pieces):
    """The streamed pieces without the answer's leading and trailing whitespace.

    Example: [" Mit", " cm", "\\n"] -> "Mit", " cm"
    """
    held, started = "", False  # held: whitespace, shown only if more text follows
    for piece in pieces:
        text = piece.rstrip()
        if text:
            yield held + text if started else text.lstrip()
            held, started = piece[len(text):], True
        else:
            held += piece


def until_loop(pieces, repeats=LOOP_REPEATS, longest=LOOP_WORDS):
    """The pieces until the answer repeats itself: when its last words are one phrase of 2 to
    `longest` words `repeats` times in a row, the stream is closed (the server stops generating) and
    nothing more is shown. On the chat path the DRY sampler garbles copied commands, so a greedy
    small model can loop ("… einschließlich aller Anhänge einschließlich aller Anhänge …" up
    to max_tokens); this ends it.

    Example: ["Die Mail ", "darf 25 MB ", "groß sein", " groß sein", " groß sein", " groß sein"]
             -> "Die Mail ", "darf 25 MB ", "groß sein", " groß sein", " groß sein"
    """
    words = []
    try:
        for piece in pieces:
            yield piece
            # a word cut between two pieces counts as two: a loop still repeats alike
            words += piece.split()
            if loop_length(words, repeats, longest):
                return
    finally:
        if hasattr(pieces, "close"):
            pieces.close()


def loop_length(words, repeats=LOOP_REPEATS, longest=LOOP_WORDS):
    """The length of the phrase of 2 to `longest` words (with a letter in it) that the last words
    repeat `repeats` times in a row, else 0.

    Example: "a b c d c d c d".split() -> 2 (phrase "c d" three times);
             "1. a 2. b 3. c".split() -> 0
    """
    for n in range(2, longest + 1):
        tail = words[-n:]
        if len(words) >= repeats * n and any(c.isalpha() for c in "".join(tail)) and \
                all(words[-(k + 1) * n:-k * n] == tail for k in range(1, repeats)):
            return n
    return 0


def without_loop(text, repeats=LOOP_REPEATS, longest=LOOP_WORDS):
    """The answer with a loop that until_loop() ended kept once: what the page, the API and the log
    show.

    Example: "Sie darf 25 MB groß sein groß sein groß sein" -> "Sie darf 25 MB groß sein"
    """
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    n = loop_length([text[a:b] for a, b in spans], repeats, longest)
    return text[:spans[-(repeats - 1) * n - 1][1]] if n else text
