"""Step 2, chunk: a page's text -> [(heading path, content)],
at paragraph boundaries up to MAX_CHARS.

    chunk_page("# VPN\\n\\nClient starten.\\n\\n## Linux\\n\\nopenvpn")
    -> [("VPN", "Client starten."), ("VPN › Linux", "openvpn")]

A new heading always starts a new chunk, so every chunk has exactly one heading path; short
paragraphs under the same heading share a chunk. A paragraph longer than a chunk is cut at the last
line break that fits, else the last sentence end (rag/text/sentences.py, the one splitter: "z. B."
ends no sentence), else a space. A chunk too long for the embedding model's context is split
further. What the model sees of a chunk is embedded_text(): the heading path, a blank line, the
content. Documentation markup is read as structure first (rag/ingest/markup.py): setext headings are
headings, MkDocs admonitions become labelled notes of their section ("Achtung: …"), content tabs
stay together. A page's front matter title is a word of each of its chunks for search where no
heading says it (page_words).

Does not handle: tables wider than a chunk (cut like text).
"""
import collections
import re

from rag.ingest import markup
from rag.ingest.pages import front_matter, strip_front_matter, text_hash, warn
from rag.models import embed_binary
from rag.text import sentences

MAX_CHARS = 1200  # longest chunk in characters (as in the post)
HEADING_SEP = " › "  # between the parts of a heading path
CHUNKER = "chunker 6"  # bump when chunking changes: every page is then re-chunked (vectors reused);
#                        3: invisible characters removed; 4: long paragraphs cut with
#                        rag/text/sentences.py;
#                        5: documentation markup (rag/ingest/markup.py),
#                        front matter after an image line
#                        6: an admonition titled with its label says it once ("Hinweis:", not twice)
# where a too-long paragraph may be cut: sentence ends, and after ":" and ";"
CLAUSE_MARKS = ".!?:;"
HEADING = re.compile(r"^(#{1,6})\s+(.+?)(?:\s+#+)?\s*$")  # "## Quota ##" -> Quota; "# C#" stays C#
FENCE = re.compile(r"^\s*(```|~~~)")

# front matter tags as search words of every chunk of their page; off: measured on wiki/
# (eval/questions.jsonl, hybrid) they cost Recall@1 0.742 -> 0.726 and refusals 71% -> 64%
TAGS_IN_SEARCH = False

Page = collections.namedtuple("Page", "path hash chunks keys words", defaults=("",))
#      chunks [(heading, content)], keys: their text hashes,
#      words: search words of every chunk (page_words)


def settings(max_chars):
    """What else decides a page's chunks, for its page hash. Example: settings(1200)
    -> "chunker 5, max_chars=1200" """
    return f"{CHUNKER}, max_chars={max_chars}"


def blocks(body, title=None):
    """Paragraphs with their heading path; headings and fenced code handled.

    Example: "# Mail\\n\\nText A\\n\\n## Quota\\nText B"
             -> [(["Mail"], "Text A"), (["Mail", "Quota"], "Text B")]
    """
    path = [title] if title else []
    levels = [0] if title else []
    out, lines, fence = [], [], None  # fence: the open ``` or ~~~, else None

    def flush():
        text = "\n".join(lines).strip()
        if text:
            out.append((list(path), text))
        lines.clear()

    for line in body.split("\n"):
        marker = FENCE.match(line)
        if marker and fence in (None, marker.group(1)):
            fence = None if fence else marker.group(1)
            lines.append(line)
            continue
        heading = None if fence else HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            while levels and levels[-1] >= level:
                levels.pop()
                path.pop()
            if level == 1 and title and path == [title]:  # H1 repeats the front-matter title
                levels.pop()
                path.pop()
            path.append(heading.group(2).strip())
            levels.append(level)
        elif not line.strip() and not fence:
            flush()
        else:
            lines.append(line)
    flush()
    return out


def split_long(text, limit=MAX_CHARS):
    """Split a too-long paragraph at the last line break that fits, else sentence end, else space,
    else hard.

    Cuts are made in the text itself, so lists and code keep their lines.
    Example: split_long("Satz eins. Satz zwei.", 12) -> ["Satz eins.", "Satz zwei."]
    """
    pieces = []
    while len(text) > limit:
        window = text[:limit + 1]  # a space right after the limit is a fine cut too
        # sentence ends whose gap starts within the window
        # (+1: the next sentence's first letter decides)
        ends = [end for end, _ in sentences.cuts(text, 0, min(len(text), limit + 2), CLAUSE_MARKS)
                if end <= limit]
        cuts = [window.rfind("\n")] + ends[-1:] + [window.rfind(" ")]
        cut = next((c for c in cuts if c > limit // 2), limit)
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return pieces + [text] if text else pieces


def embedded_text(heading, content):
    """What the model sees for a chunk: the heading path, a blank line, the content.

    Example: embedded_text("VPN › Linux", "openvpn") -> "VPN › Linux\\n\\nopenvpn"
    """
    return f"{heading}\n\n{content}" if heading else content


def fit_context(heading, content):
    """Split a chunk further until the model sees all of it (characters are not tokens: "ü" is 2
    bytes).

    Example: 9,000 characters of "Größe Größe …" (12,000 bytes)
             -> two chunks of 4,500 characters
    """
    if embed_binary.fits(embedded_text(heading, content)) or len(content) < 200:
        return [(heading, content)]  # (a giant heading alone is cut by the embedder)
    return [chunk for part in split_long(content, len(content) // 2 + 1)
            for chunk in fit_context(heading, part)]


def chunk_page(text, max_chars=MAX_CHARS):
    """Chunks of one page: [(heading_path_text, content)], paragraphs joined up to max_chars.

    A new heading always starts a new chunk, so every chunk has exactly one heading path.
    Example: chunk_page("# VPN\\n\\nClient starten.\\n\\n## Linux\\n\\nopenvpn") ->
             [("VPN", "Client starten."), ("VPN › Linux", "openvpn")]
    """
    body, title = strip_front_matter(text)
    chunks = []
    for path, paragraph in blocks(markup.plain(body), title):
        heading = HEADING_SEP.join(path)
        for piece in split_long(paragraph, max_chars):
            if (chunks and chunks[-1][0] == heading
                    and len(chunks[-1][1]) + 2 + len(piece) <= max_chars):
                chunks[-1] = (heading, chunks[-1][1] + "\n\n" + piece)
            else:
                chunks.append((heading, piece))
    return [chunk for heading, content in chunks for chunk in fit_context(heading, content)]


def page_words(text, chunks):
    """The front matter title (and tags, if TAGS_IN_SEARCH) as search words of a page, less what
    every heading path already says.

    Example: ("---\\ntitle: Adapter\\n---\\n# Reiter Adapter\\nText", [("Reiter Adapter", "Text")])
             -> "Adapter"
             ("---\\ntitle: VPN\\n---\\nText", [("VPN", "Text")]) -> ""
    """
    _, title, tags = front_matter(text)
    words = [title or ""] + (tags if TAGS_IN_SEARCH else [])
    return " ".join(w for w in words if w and not all(w in h.split(HEADING_SEP) for h, _ in chunks))


def chunk_pages(changed, max_chars, present):
    """[Page] of the (path, page hash, text) in `changed`, each with its chunks and their text
    hashes.

    A page without text (empty, only headings or front matter) gets one warning and leaves
    `present`.
    Example: [("a.md", "5e1f…", "# A\\n\\nText")]
             -> [Page("a.md", "5e1f…", [("A", "Text")], ["c0ff…"])]
    """
    todo = []
    for rel, page_hash, text in changed:
        chunks = chunk_page(text, max_chars)
        if not chunks:
            warn(f"{rel}: enthält keinen Text (leer oder nur Überschriften/Front Matter) – "
                 "übersprungen")
            present.discard(rel)
            continue
        todo.append(Page(rel, page_hash, chunks,
                         [text_hash(embedded_text(h, c)) for h, c in chunks],
                         page_words(text, chunks)))
    return todo
