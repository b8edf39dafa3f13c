"""PDF, HTML and Word pages as the Markdown the chunker already reads: text plus heading structure.

    to_markdown("vertrag.pdf", pdf_bytes)   -> "# vertrag.pdf\\n\\n## Seite 1\\n\\n…\\n\\n## Seite 2\\n\\n…"
    to_markdown("raum.html", "<h1>Räume</h1><p>Text</p>".encode())   -> "# Räume\\n\\nText\\n"
    to_markdown("notfall.docx", docx_bytes) -> "# Notfall\\n\\n## Schritt 1\\n\\n…"

Every page gets one H1 (the document's own title, else the file name), so a chunk's heading path
names the document: `vertrag.pdf › Seite 3`, `Besprechungsräume › Buchung`. A PDF title that is
no title ("Microsoft Word - v3.docx", "Untitled") is ignored.

  PDF    poppler's `pdftotext -layout` (found via --pdftotext, RAG_PDFTOTEXT, then PATH), fed on
         stdin; each page (form feed) becomes "## Seite N"; the PDF's Title, else the file name, is the H1
  HTML   html.parser: h1–h6 are headings; paragraphs, lists ("- " / "1. "), tables (one row per
         line, cells joined by " | ") and pre (a ``` block) keep their text; script, style, nav,
         page-level header/footer/aside, role=navigation/banner/contentinfo/search, hidden
         elements, comments and the chrome of Confluence exports are dropped; <title> is the H1
         when there is no h1
  DOCX   zipfile + xml.etree: paragraph styles resolved through word/styles.xml (name "heading N",
         ids "HeadingN"/"berschriftN", outline level, basedOn chains); "Title"/"Titel" is the H1 and
         pushes the headings one level down; lists get "- " or "N. "; table rows as in HTML

A line of text that would read as Markdown structure ("# …", "```") gets a backslash in front, so
a document cannot invent headings or code blocks (front matter cannot arise: the H1 comes first).

Text a reader does not see is dropped and counted in notes.hidden (rag/ingest/hidden.py): HTML comments,
elements hidden by CSS or attributes, tiny or white text, Word runs with w:vanish. PDF pages
without text (fewer than MIN_PAGE_CHARS characters) while other pages have text are left out and
listed in notes.empty_pages (a scan inside a text PDF needs OCR). The caller warns once per page.

Failures raise FormatError with a short German reason ("verschlüsselt", "kein Textlayer – OCR
nötig"); a missing pdftotext raises ToolMissing (the caller warns once per run).

Does not handle: OCR of scanned PDFs, headings inside a PDF page (a page is the smallest section),
old .doc/.xls/.ppt files, .odt, password-protected files, HTML character sets other than a declared
one / UTF-8 / Windows-1252, footnotes, comments and text boxes' position in Word files, images.
"""
import dataclasses
import io
import os
import re
import shutil
import subprocess
from collections import Counter

from rag.ingest import hidden

# html, html.parser, zipfile and xml.etree are imported where they are used: a run over Markdown
# pages only never loads them (5 ms of a 90 ms unchanged run over 1,000 pages, bench/reindex.py).

SUFFIXES = (".pdf", ".html", ".htm", ".docx")  # document formats this module converts (any case: VERTRAG.PDF)
CONVERTER = "formats 2"  # bump when the conversion changes: every document is then re-converted
MIN_PAGE_CHARS = 20  # a PDF page with fewer non-space characters has no text layer (while others have one)
MAX_BYTES = 50 * 1024 * 1024  # larger documents are skipped (PDFs with images are often > 5 MB)
PDFTOTEXT_TIMEOUT = 120  # seconds per PDF
PDF_INSTALL = "apt-get install poppler-utils"  # named in the warning when pdftotext is missing
MAX_XML_BYTES = 64 * 1024 * 1024  # uncompressed word/document.xml larger than this: refused (zip bomb)
STRUCTURE = re.compile(r"^\s*(#{1,6}(\s|$)|```|~~~)")  # lines the chunker would read as a heading or a fence
NO_TITLE = re.compile(r"^(untitled|unbenannt|ohne titel|(document|dokument)\s*\d*)$|^microsoft \w+ - |"
                      r"\.(docx?|pdf|odt|rtf|txt)$", re.I)  # PDF Title metadata that names no document


class FormatError(Exception):
    """A document that cannot be converted; str(exc) is the German reason, without the file name."""


class ToolMissing(FormatError):
    """The external converter (pdftotext) is not installed; str(exc) names the install command."""


@dataclasses.dataclass
class Notes:
    """What a conversion left out, for the caller's warnings: hidden text by reason, PDF pages without text."""
    hidden: Counter = dataclasses.field(default_factory=Counter)  # rag/ingest/hidden.py reason -> count
    empty_pages: list = dataclasses.field(default_factory=list)  # 1-based PDF page numbers


def is_document(name):
    """Is this file one of the formats converted here? Example: "a/Vertrag.pdf" -> True, "a.md" -> False"""
    return name.lower().endswith(SUFFIXES)


def default_pdftotext():
    """pdftotext: $RAG_PDFTOTEXT, else PATH; the bare name when neither has it (the caller reports)."""
    return os.environ.get("RAG_PDFTOTEXT") or shutil.which("pdftotext") or "pdftotext"


def to_markdown(name, data, pdftotext=None, notes=None):
    """Markdown text of the document `name` (its path, for the suffix and the fallback title) with bytes `data`.

    notes (a Notes, optional) receives what was left out: hidden text and PDF pages without text.
    """
    suffix = os.path.splitext(name)[1].lower()
    title = os.path.basename(name)
    notes = Notes() if notes is None else notes
    if suffix == ".pdf":
        return pdf_to_markdown(data, title, pdftotext or default_pdftotext(), notes)
    if suffix in (".html", ".htm"):
        return html_to_markdown(data, title, notes)
    if suffix == ".docx":
        return docx_to_markdown(data, title, notes)
    raise ValueError(f"not a document format: {name}")


def protect(line):
    """Escape a text line the chunker would take for a heading or a fence.

    Example: protect("# 3 Paletten") -> "\\\\# 3 Paletten"; protect("Text") -> "Text"
    """
    match = STRUCTURE.match(line)
    if not match:
        return line
    start = len(line) - len(line.lstrip())
    return line[:start] + "\\" + line[start:]


def join_blocks(blocks):
    """Blocks (already Markdown) separated by one blank line. Example: ["# A", "x"] -> "# A\\n\\nx\\n" """
    return "\n\n".join(b for b in blocks if b.strip()) + "\n"


# -- PDF -------------------------------------------------------------------------------------------
def run_pdftotext(data, pdftotext):
    """pdftotext's -htmlmeta output for the PDF bytes: (title or None, text with \\f between pages)."""
    import html
    command = [pdftotext, "-layout", "-enc", "UTF-8", "-htmlmeta", "-", "-"]
    try:
        done = subprocess.run(command, input=data, capture_output=True, timeout=PDFTOTEXT_TIMEOUT)
    except OSError as exc:  # not there, not executable, not a program
        raise ToolMissing(f"pdftotext nicht gefunden ({pdftotext}: {exc.strerror}) – PDF-Seiten übersprungen; "
                          f"installieren mit: {PDF_INSTALL} (oder Pfad mit --pdftotext / RAG_PDFTOTEXT angeben)")
    except subprocess.TimeoutExpired:
        raise FormatError(f"pdftotext nach {PDFTOTEXT_TIMEOUT} s abgebrochen – PDF prüfen oder aufteilen")
    err = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        if "password" in err.lower():
            raise FormatError("verschlüsselt (Passwort nötig) – ohne Passwortschutz speichern")
        if done.returncode == 3:
            raise FormatError("Kopierschutz verbietet das Auslesen des Texts – ungeschützt speichern")
        last = (err.strip().splitlines() or [f"Exit-Code {done.returncode}"])[-1]
        raise FormatError(f"defekt oder kein PDF (pdftotext: {last.strip()}) – Datei neu exportieren")
    out = done.stdout.decode("utf-8", "replace")
    title = re.search(r"<title>(.*?)</title>", out, re.S)
    body = re.search(r"<pre>\n?(.*)</pre>", out, re.S)
    text = body.group(1) if body else ""  # (pdftotext escapes the title, not the text)
    return (html.unescape(title.group(1)).strip() or None) if title else None, text


def page_lines(page):
    """One PDF page's text: trailing spaces and the common left margin removed, markup escaped.

    Example: "   Laufzeit\\n   # 12 Monate  " -> ["Laufzeit", "\\\\# 12 Monate"]
    """
    lines = [line.rstrip() for line in page.replace("\r", "").split("\n")]
    margin = min((len(line) - len(line.lstrip()) for line in lines if line), default=0)
    return [protect(line[margin:]) for line in lines]


def pdf_to_markdown(data, title, pdftotext, notes=None):
    """PDF bytes -> "# Title\\n\\n## Seite 1\\n\\n…"; FormatError for encrypted, broken or text-less PDFs.

    Pages with fewer than MIN_PAGE_CHARS characters are left out and listed in notes.empty_pages
    when another page has text ("kein Textlayer" when none has).
    """
    meta_title, text = run_pdftotext(data, pdftotext)
    pages = text.split("\f")
    if pages and not pages[-1].strip():
        pages.pop()  # pdftotext ends every page with \f
    silent = [n for n, page in enumerate(pages, 1) if len(re.sub(r"\s", "", page)) < MIN_PAGE_CHARS]
    if len(silent) == len(pages) and not any(page.strip() for page in pages):
        raise FormatError("kein Textlayer – OCR nötig (z. B. ocrmypdf), dann erneut indexieren")
    if len(silent) == len(pages):
        silent = []  # a short PDF that is all short pages: nothing to compare with
    if notes is not None:
        notes.empty_pages.extend(silent)
    meta_title = " ".join((meta_title or "").split())
    blocks = [f"# {title if not meta_title or NO_TITLE.search(meta_title) else meta_title}"]
    for number, page in enumerate(pages, 1):
        if number in silent:
            continue
        blocks.append(f"## Seite {number}")
        blocks.append(re.sub(r"\n{3,}", "\n\n", "\n".join(page_lines(page)).strip("\n")))
    return join_blocks(blocks)


# -- HTML ------------------------------------------------------------------------------------------
DROP_TAGS = {"script", "style", "nav", "noscript", "template", "svg", "iframe", "object", "button", "select"}
PAGE_CHROME_TAGS = {"header", "footer", "aside"}  # dropped unless inside <article> or <main>
DROP_ROLES = {"navigation", "banner", "contentinfo", "search"}
CONFLUENCE_CHROME = {"breadcrumb-section", "footer", "page-metadata", "pageSection", "likes-and-labels-container",
                     "comments-section"}  # ids/classes of a Confluence export that are not the page's content
CONFLUENCE_TITLE = re.compile(r"^[^:]+ : ")  # "IT : Besprechungsräume" (space name first) -> Besprechungsräume
BLOCK_TAGS = {"p", "div", "section", "article", "main", "blockquote", "dl", "dt", "dd", "figure", "figcaption",
              "address", "details", "summary", "center", "form", "fieldset", "legend", "body"}
HEADINGS = {f"h{n}": n for n in range(1, 7)}
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
             "wbr"}  # elements without an end tag


class MarkdownWriter:
    """Collects Markdown blocks from the events of an html.parser.HTMLParser; see html_to_markdown."""

    def __init__(self, hidden_counts=None):
        self.blocks, self.lines, self.words = [], [], []  # finished blocks, lines of the open block, open line
        self.skip = None  # [tag, depth, hidden reason or None, text seen?] of the element being dropped
        self.hidden = Counter() if hidden_counts is None else hidden_counts  # rag/ingest/hidden.py reason -> count
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
                or (attrs.get("role") or "").lower() in DROP_ROLES or bool(names & CONFLUENCE_CHROME))

    def hidden_reason(self, attrs):
        """Why a reader does not see this element (rag/ingest/hidden.py), or None: hidden, aria-hidden, inline CSS."""
        attrs = dict(attrs)
        if "hidden" in attrs or (attrs.get("aria-hidden") or "").lower() == "true":
            return hidden.ELEMENT
        return hidden.css_hidden(attrs.get("style"), dark_background=bool(self.backgrounds))

    def handle_comment(self, data):
        """A comment is invisible text; counted unless it is an Internet Explorer conditional ("[if …]")."""
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
            return  # (a void element has no end tag, so it is never "dropped with everything inside")
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
        if not self.skip and tag not in VOID_TAGS and hidden.paints_background(dict(attrs).get("style")):
            self.backgrounds.append([tag, 1])  # white text inside is readable

    def handle_endtag(self, tag):
        if self.skip:
            if tag == self.skip[0]:
                self.skip[1] -= 1
                if not self.skip[1]:
                    if self.skip[2] and self.skip[3]:  # a hidden element with text: counted for the warning
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
            if len(self.table) > 1 and self.table[-2]["cell"] is not None:  # nested table: into the outer cell
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
        text = text[1:] if text.startswith("\n") else text  # HTML ignores the newline right after <pre>
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

    Example: b'<meta charset="iso-8859-1"><p>Gr\\xfc\\xdfe' -> '<meta charset="iso-8859-1"><p>Grüße'
    """
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
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


# -- DOCX ------------------------------------------------------------------------------------------
W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # an encrypted .docx (or an old .doc) is an OLE file
HEADING_STYLE = re.compile(r"^(?:heading|überschrift|berschrift)\s*([1-9])$", re.I)  # names and ids Word writes
TITLE_STYLE = re.compile(r"^(?:title|titel)$", re.I)


def read_xml(archive, name, required=False):
    """Parsed XML part of the .docx zip, or None when it is absent and not required."""
    import zipfile
    from xml.etree import ElementTree
    try:
        info = archive.getinfo(name)
    except KeyError:
        if required:
            raise FormatError(f"keine Word-Datei ({name} fehlt) – als .docx neu speichern")
        return None
    if info.file_size > MAX_XML_BYTES:
        raise FormatError(f"{name} entpackt größer als {MAX_XML_BYTES // 2**20} MB – übersprungen")
    try:
        return ElementTree.fromstring(archive.read(info))
    except (ElementTree.ParseError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError,
            ValueError) as exc:
        raise FormatError(f"defekt ({name}: {exc}) – als .docx neu speichern")


def style_levels(styles):
    """Heading level per paragraph style id (0 = title), through basedOn chains; styles.xml may be None.

    Example: <w:style w:styleId="berschrift2"><w:name w:val="heading 2"/> -> {"berschrift2": 2}
    """
    info = {}
    for style in (styles.iter(W + "style") if styles is not None else ()):
        sid = style.get(W + "styleId")
        name = style.find(W + "name")
        based = style.find(W + "basedOn")
        outline = style.find(f"{W}pPr/{W}outlineLvl")
        info[sid] = (name.get(W + "val") if name is not None else "",
                     based.get(W + "val") if based is not None else None,
                     int(outline.get(W + "val")) + 1 if outline is not None else None)
    levels = {}
    for sid in info:
        current, seen = sid, set()
        while current in info and current not in seen:
            seen.add(current)
            name, based, outline = info[current]
            level = own_level(current, name, outline)
            if level is not None:
                levels[sid] = level
                break
            current = based
    return levels


def own_level(style_id, name, outline=None):
    """Heading level of one style from its name, id or outline level. Example: ("berschrift1", "heading 1") -> 1"""
    for text in (name, style_id):
        match = HEADING_STYLE.match(text or "")
        if match:
            return int(match.group(1))
        if TITLE_STYLE.match(text or ""):
            return 0
    return outline if outline is not None and 1 <= outline <= 6 else None


def runs(element):
    """The w:r below element in document order, skipping mc:Fallback (Word stores text boxes twice);
    None before a paragraph nested in it (a text box), which starts a new line."""
    for child in element:
        if child.tag == W + "r":
            yield child
        elif child.tag == W + "p":
            yield None
        if child.tag != FALLBACK:
            yield from runs(child)


def run_hidden(run):
    """Why Word does not show this w:r (rag/ingest/hidden.py), or None: w:vanish, white colour, a size of 1 pt.

    Example: <w:r><w:rPr><w:vanish/></w:rPr>… -> hidden.WORD
    """
    props = run.find(W + "rPr")
    if props is None:
        return None
    vanish = props.find(W + "vanish")
    if vanish is not None and vanish.get(W + "val", "true").lower() not in ("0", "false", "off"):
        return hidden.WORD
    size, colour = props.find(W + "sz"), props.find(W + "color")
    if size is not None and (size.get(W + "val") or "").isdigit() and hidden.tiny(f"{int(size.get(W + 'val')) / 2}pt"):
        return hidden.TINY
    shaded = props.find(W + "shd") is not None or props.find(W + "highlight") is not None
    if colour is not None and hidden.white("#" + (colour.get(W + "val") or "")) and not shaded:
        return hidden.WHITE
    return None


def paragraph_text(paragraph, hidden_counts=None):
    """Text of a w:p: runs in order (also inside links and insertions), tabs, line breaks; no deletions.

    Hidden runs (run_hidden) are left out; each stretch of them with text counts once in hidden_counts.
    """
    parts, in_hidden = [], False
    for run in runs(paragraph):
        if run is None:
            parts.append("\n")
            continue
        reason = run_hidden(run)
        if reason:
            text = "".join(t.text or "" for t in run.iter(W + "t"))
            if text.strip() and not in_hidden and hidden_counts is not None:
                hidden_counts[reason] += 1
            in_hidden = in_hidden or bool(text.strip())
            continue
        in_hidden = False
        for child in run:
            if child.tag == W + "t":
                parts.append(child.text or "")
            elif child.tag in (W + "tab", W + "ptab"):
                parts.append("\t")
            elif child.tag in (W + "br", W + "cr"):
                parts.append("\n")
            elif child.tag == W + "noBreakHyphen":
                parts.append("-")
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def numbering_formats(numbering):
    """(numId, level) -> "bullet", "decimal", … from word/numbering.xml (None: no lists)."""
    if numbering is None:
        return {}
    abstract = {}
    for node in numbering.iter(W + "abstractNum"):
        for lvl in node.iter(W + "lvl"):
            fmt = lvl.find(W + "numFmt")
            abstract[(node.get(W + "abstractNumId"), lvl.get(W + "ilvl"))] = \
                fmt.get(W + "val") if fmt is not None else "decimal"
    formats = {}
    for num in numbering.iter(W + "num"):
        ref = num.find(W + "abstractNumId")
        for (aid, ilvl), fmt in abstract.items():
            if ref is not None and aid == ref.get(W + "val"):
                formats[(num.get(W + "numId"), ilvl)] = fmt
    return formats


def body_items(element, levels, hidden_counts=None):
    """Paragraphs and tables in document order: ("heading", level, text) / ("para", numPr, text) / ("row", text)."""
    for child in element:
        if child.tag == W + "p":
            ppr = child.find(W + "pPr")
            style = ppr.find(W + "pStyle") if ppr is not None else None
            sid = style.get(W + "val") if style is not None else None
            outline = ppr.find(W + "outlineLvl") if ppr is not None else None
            level = levels.get(sid, own_level(sid, sid)) if sid else None
            if level is None and outline is not None and int(outline.get(W + "val", "9")) < 6:
                level = int(outline.get(W + "val")) + 1
            text = paragraph_text(child, hidden_counts)
            if not text:
                continue
            if level is not None:
                yield "heading", level, " ".join(text.split())
            else:
                num = ppr.find(f"{W}numPr") if ppr is not None else None
                key = None
                if num is not None and num.find(W + "numId") is not None:
                    ilvl = num.find(W + "ilvl")
                    key = (num.find(W + "numId").get(W + "val"), ilvl.get(W + "val") if ilvl is not None else "0")
                yield "para", key, text
        elif child.tag == W + "tbl":
            for row in child.findall(W + "tr"):  # a nested table stays inside its cell
                cells = [" ".join(" ".join(paragraph_text(p, hidden_counts).split()) for p in cell.iter(W + "p")).strip()
                         for cell in row.findall(W + "tc")]
                if any(cells):
                    yield "row", None, " | ".join(cells)
        elif child.tag in (W + "sdt", W + "sdtContent", W + "customXml", W + "smartTag"):
            yield from body_items(child.find(W + "sdtContent") if child.tag == W + "sdt" else child, levels,
                                  hidden_counts)


def docx_to_markdown(data, title, notes=None):
    """Word (.docx) bytes -> Markdown; FormatError for encrypted, non-zip or broken files; hidden runs in notes."""
    import zipfile
    if data.startswith(OLE_MAGIC):
        raise FormatError("verschlüsselt (Passwortschutz) oder altes Word-Format – "
                          "ohne Passwort als .docx speichern")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise FormatError("keine gültige .docx-Datei (kein ZIP-Archiv) – in Word neu speichern")
    with archive:
        document = read_xml(archive, "word/document.xml", required=True)
        levels = style_levels(read_xml(archive, "word/styles.xml"))
        formats = numbering_formats(read_xml(archive, "word/numbering.xml"))
        core = read_xml(archive, "docProps/core.xml")
    body = document.find(W + "body")
    items = list(body_items(body, levels, notes.hidden if notes is not None else None)) if body is not None else []
    shift = 1 if any(kind == "heading" and level == 0 for kind, level, _ in items) else 0
    blocks, lines, counters = [], [], {}
    for kind, detail, text in items:
        if kind == "heading":
            blocks.extend(["\n".join(lines), f"{'#' * min(6, max(1, detail + shift))} {text}"])
            lines, counters = [], {}
        elif kind == "row":
            lines.append(protect(text))
        elif detail:  # a list paragraph: "- " or "N. ", indented by level
            depth = int(detail[1]) if detail[1].isdigit() else 0
            counters = {k: v for k, v in counters.items() if not (k[0] == detail[0] and int(k[1]) > depth)}
            counters[detail] = counters.get(detail, 0) + 1
            marker = "- " if formats.get(detail, "bullet") in ("bullet", "none") else f"{counters[detail]}. "
            lines.append("  " * depth + marker + text.replace("\n", " "))
        else:
            blocks.extend(["\n".join(lines), "\n".join(protect(line) for line in text.split("\n"))])
            lines = []
    blocks.append("\n".join(lines))
    first = next((b for b in blocks if b.strip()), "")
    if not first.startswith("# "):
        core_title = core.find("{http://purl.org/dc/elements/1.1/}title") if core is not None else None
        name = " ".join((core_title.text or "").split()) if core_title is not None else ""
        blocks.insert(0, f"# {name or title}")
    return join_blocks(blocks)
