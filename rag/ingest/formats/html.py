"""HTML pages (and Confluence exports) as Markdown, with html.parser from the standard library.

    html_to_markdown("<h1>Räume</h1><p>Text</p>".encode(), "raum.html") -> "# Räume\\n\\nText\\n"

h1–h6 are headings; paragraphs, lists ("- " / "1. "), tables (one row per line, cells joined by
" | ") and pre (a ``` block) keep their text; script, style, nav, page-level header/footer/aside,
role=navigation/banner/contentinfo/search and the chrome of Confluence exports are dropped;
<title> is the H1 when there is no h1. Comments and elements hidden by CSS or attributes, tiny or
white text are dropped and counted in notes.hidden (rag/ingest/hidden.py).

Does not handle: CSS in <style> blocks or classes, character sets other than a declared one /
UTF-8 / Windows-1252, images.
"""
import re
from collections import Counter

from rag.ingest import hidden
from rag.ingest.formats.base import FormatError, join_blocks, protect

# html and html.parser are imported where they are
# used: a run over Markdown pages only never loads them
DROP_TAGS = {"script", "style", "nav", "noscript", "template", "svg", "iframe", "object", "button",
             "select"}
PAGE_CHROME_TAGS = {"header", "footer", "aside"}  # dropped unless inside <article> or <main>
DROP_ROLES = {"navigation", "banner", "contentinfo", "search"}
# ids/classes of a Confluence export that are not the page's content
CONFLUENCE_CHROME = {"breadcrumb-section", "footer", "page-metadata", "pageSection",
                     "likes-and-labels-container", "comments-section"}
# "IT : Besprechungsräume" (space name first) -> Besprechungsräume
CONFLUENCE_TITLE = re.compile(r"^[^:]+ : ")
BLOCK_TAGS = {"p", "div", "section", "article", "main", "blockquote", "dl", "dt", "dd", "figure",
              "figcaption", "address", "details", "summary", "center", "form", "fieldset", "legend",
              "body"}
HEADINGS = {f"h{n}": n for n in range(1, 7)}
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
             "source", "track", "wbr"}  # elements without an end tag


class MarkdownWriter:
    """Collects Markdown blocks from the events of an html.parser.HTMLParser; see
    html_to_markdown."""

    def __init__(self, hidden_counts=None):
        # finished blocks, lines of the open block, open line
        self.blocks, self.lines, self.words = [], [], []
        # [tag, depth, hidden reason or None, text seen?] of the element being dropped
        self.skip = None
        # rag/ingest/hidden.py reason -> count
        self.hidden = Counter() if hidden_counts is None else hidden_counts
        self.backgrounds = []  # [tag, depth] of the innermost open element that paints a background
        self.content_depth = 0  # open <article>/<main>: their header/footer/aside are content
        self.heading = None  # [level, words, confluence title?] while inside h1–h6
        self.lists = []  # one [ordered?, counter] per open ul/ol
        self.item = None  # prefix of the current list item, until its first line is written
        self.table = []  # one {"row": cells or None, "cell": words or None} per open table
        self.pre = None  # text pieces inside <pre>
        self.title, self.in_title, self.has_h1 = [], False, False

    # paragraphs -----------------------------------------------------------------------------------
    def end_line(self):
        line = " ".join("".join(self.words).split())
        self.words.clear()
        if line:
            prefix = ""
            if self.item is not None:
                prefix, self.item = self.item, None
            elif self.lists:
                prefix = "  " * len(self.lists)  # a further line of the same list item
            self.lines.append(prefix + protect(line) if not prefix.strip() else prefix + line)

    def end_block(self):
        self.end_line()
        if self.lines:
            self.blocks.append("\n".join(self.lines))
            self.lines.clear()

    def dropped(self, tag, attrs):
        """Is this element navigation or chrome (dropped with everything inside, silently)?"""
        attrs = dict(attrs)
        names = {attrs.get("id") or ""} | set((attrs.get("class") or "").split())
        return (tag in DROP_TAGS or (tag in PAGE_CHROME_TAGS and not self.content_depth)
                or (attrs.get("role") or "").lower() in DROP_ROLES
                or bool(names & CONFLUENCE_CHROME))

    def hidden_reason(self, attrs):
        """Why a reader does not see this element (rag/ingest/hidden.py), or None: hidden,
        aria-hidden, inline CSS."""
        attrs = dict(attrs)
        if "hidden" in attrs or (attrs.get("aria-hidden") or "").lower() == "true":
            return hidden.ELEMENT
        return hidden.css_hidden(attrs.get("style"), dark_background=bool(self.backgrounds))

    def handle_comment(self, data):
        """A comment is invisible text; counted unless it is an Internet Explorer conditional ("[if
        …]")."""
        if data.strip() and not self.skip and not re.match(r"\s*\[(?:if|endif)\b", data):
            self.hidden[hidden.COMMENT] += 1

    # parser callbacks -----------------------------------------------------------------------------
    def handle_starttag(self, tag, attrs):
        if self.skip:
            self.skip[1] += tag == self.skip[0]
            return
        if self.backgrounds and tag == self.backgrounds[-1][0]:
            self.backgrounds[-1][1] += 1
        if tag == "title":
            self.in_title = True
        elif tag == "br":
            self.handle_break()
        elif tag == "hr" and self.pre is None:
            self.end_cell_or_block()
        elif tag in VOID_TAGS or self.pre is not None:
            # (a void element has no end tag, so it is never "dropped with everything inside")
            return
        elif self.dropped(tag, attrs):
            self.skip = [tag, 1, None, False]
        elif self.hidden_reason(attrs):
            self.skip = [tag, 1, self.hidden_reason(attrs), False]
        elif tag in HEADINGS:
            self.end_block()
            self.heading = [HEADINGS[tag], [], dict(attrs).get("id") == "title-heading"]
        elif tag in ("article", "main"):
            self.content_depth += 1
            self.end_block()
        elif tag in ("ul", "ol"):
            self.end_line() if self.lists else self.end_block()
            self.lists.append([tag == "ol", 0])
        elif tag == "li":
            self.end_line()
            if self.lists:
                kind = self.lists[-1]
                kind[1] += 1
                self.item = "  " * (len(self.lists) - 1) + (f"{kind[1]}. " if kind[0] else "- ")
        elif tag == "table":
            self.end_cell_or_block()
            self.table.append({"row": None, "cell": None})
        elif tag == "tr" and self.table:
            self.table[-1]["row"] = []
        elif tag in ("td", "th") and self.table:
            self.end_cell()
            self.table[-1]["cell"] = []
        elif tag == "pre":
            self.end_cell_or_block()
            self.pre = []
        elif tag == "code":
            self.handle_data("`")
        elif tag in BLOCK_TAGS:
            self.end_cell_or_block() if not (self.lists or self.heading) else self.end_line()
        if (not self.skip and tag not in VOID_TAGS
                and hidden.paints_background(dict(attrs).get("style"))):
            self.backgrounds.append([tag, 1])  # white text inside is readable

    def handle_endtag(self, tag):
        if self.skip:
            if tag == self.skip[0]:
                self.skip[1] -= 1
                if not self.skip[1]:
                    # a hidden element with text: counted for the warning
                    if self.skip[2] and self.skip[3]:
                        self.hidden[self.skip[2]] += 1
                    self.skip = None
            return
        if self.backgrounds and tag == self.backgrounds[-1][0]:
            self.backgrounds[-1][1] -= 1
            if not self.backgrounds[-1][1]:
                self.backgrounds.pop()
        if tag == "title":
            self.in_title = False
        elif tag == "pre" and self.pre is not None:
            self.end_pre()
        elif self.pre is not None:
            return
        elif tag in HEADINGS and self.heading:
            self.end_heading()
        elif tag in ("article", "main"):
            self.content_depth = max(0, self.content_depth - 1)
            self.end_block()
        elif tag in ("ul", "ol") and self.lists:
            self.end_line()
            self.lists.pop()
            self.item = None
            if not self.lists:
                self.end_block()
        elif tag == "li":
            self.end_line()
            self.item = None
        elif tag in ("td", "th"):
            self.end_cell()
        elif tag == "tr" and self.table:
            self.end_row()
        elif tag == "table" and self.table:
            self.end_row()
            self.table.pop()
            if not self.table:
                self.end_block()
        elif tag == "code":
            self.handle_data("`")
        elif tag in BLOCK_TAGS:
            self.end_cell_or_block() if not (self.lists or self.heading) else self.end_line()

    def handle_data(self, data):
        if self.skip:
            self.skip[3] = self.skip[3] or bool(data.strip())
            return
        if self.in_title:
            self.title.append(data)
        elif self.pre is not None:
            self.pre.append(data)
        elif self.heading:
            self.heading[1].append(data)
        elif self.table and self.table[-1]["cell"] is not None:
            self.table[-1]["cell"].append(data)
        else:
            self.words.append(data)

    def handle_break(self):
        if self.pre is not None:
            self.pre.append("\n")
        elif self.heading:
            self.heading[1].append(" ")
        elif self.table and self.table[-1]["cell"] is not None:
            self.table[-1]["cell"].append(" ")
        else:
            self.end_line()

    # headings, tables, code -----------------------------------------------------------------------
    def end_heading(self):
        level, words, confluence = self.heading
        self.heading = None
        text = " ".join("".join(words).replace("`", "").split())
        if confluence:
            text = CONFLUENCE_TITLE.sub("", text, count=1)
        if text:
            self.end_block()
            self.blocks.append(f"{'#' * level} {text}")
            self.has_h1 = self.has_h1 or level == 1

    def end_cell(self):
        table = self.table[-1] if self.table else None
        if table and table["cell"] is not None:
            if table["row"] is None:
                table["row"] = []
            table["row"].append(" ".join("".join(table["cell"]).split()))
            table["cell"] = None

    def end_row(self):
        self.end_cell()
        table = self.table[-1]
        if table["row"] and any(table["row"]):
            row = " | ".join(table["row"])
            # nested table: into the outer cell
            if len(self.table) > 1 and self.table[-2]["cell"] is not None:
                self.table[-2]["cell"].append(" " + row + " ")
            else:
                self.lines.append(protect(row))
        table["row"] = None

    def end_cell_or_block(self):
        if self.table and self.table[-1]["cell"] is not None:
            self.table[-1]["cell"].append(" ")
        else:
            self.end_block()

    def end_pre(self):
        text = "".join(self.pre)
        self.pre = None
        # HTML ignores the newline right after <pre>
        text = text[1:] if text.startswith("\n") else text
        text = "\n".join(line.rstrip() for line in text.rstrip().split("\n"))
        if not text.strip():
            return
        if self.table and self.table[-1]["cell"] is not None:
            self.table[-1]["cell"].append(" " + text + " ")
            return
        fence = "~~~" if "```" in text else "```"
        self.end_block()
        self.blocks.append(f"{fence}\n{text}\n{fence}")

    def markdown(self, fallback_title):
        """All blocks; an H1 from <title> (else the file name) in front when the page has no h1."""
        self.end_block()
        if not self.has_h1:
            title = " ".join("".join(self.title).split()) or fallback_title
            self.blocks.insert(0, f"# {title}")
        return join_blocks(self.blocks)


def decode_html(data):
    """HTML bytes -> str: byte order mark, else the declared charset, else UTF-8, else Windows-1252.

    Example: b'<meta charset="iso-8859-1"><p>Gr\\xfc\\xdfe'
             -> '<meta charset="iso-8859-1"><p>Grüße'
    """
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"),
                       (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    declared = re.search(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", data[:4096], re.I)
    codecs = ([declared.group(1).decode("ascii")] if declared else []) + ["utf-8"]
    for codec in codecs:
        try:
            return data.decode(codec)
        except (LookupError, UnicodeDecodeError):
            continue
    return data.decode("cp1252", errors="replace")


def html_to_markdown(data, title, notes=None):
    """HTML bytes -> Markdown; FormatError for binary data; hidden text counted in notes.hidden.

    Example: html_to_markdown(b"<h2>A</h2><p>x</p>", "t.html") -> "# t.html\\n\\n## A\\n\\nx\\n"
    """
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FormatError("Binärdaten, keine HTML-Datei – Datei prüfen")
    from html.parser import HTMLParser
    writer = MarkdownWriter(notes.hidden if notes is not None else None)
    parser = HTMLParser(convert_charrefs=True)  # (entities decoded before handle_data)
    parser.handle_starttag, parser.handle_endtag = writer.handle_starttag, writer.handle_endtag
    parser.handle_data, parser.handle_comment = writer.handle_data, writer.handle_comment
    parser.feed(decode_html(data).replace("\r\n", "\n").replace("\r", "\n"))
    parser.close()
    return writer.markdown(title)
