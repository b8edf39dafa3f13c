"""What a reST page knows beyond itself: the wiki's titles and labels, includes and substitutions.

    project = Project(Path("handbuch"), ["index.rst", "about/about.rst"])
    page = project.page("index.rst", text)
    page.doc_title("about/about")          -> "Was ist linuxmuster.net?"  (the page's first title)
    page.label_title("what-is-new-label")  -> "Was ist neu in 7.3?"  (the title after ".. _label:")
    page.substitution("zB")                -> ("z. B.", False, False)  (from an included .subst)

The wiki folder is the Sphinx source folder: "/x" in an include, :doc: or toctree is below it, "x"
is beside the page. Titles are read once per run, when the first page asks. An include must lie
inside the wiki (a page cannot pull /etc/passwd into the index), at most INCLUDE_DEPTH deep; each
problem becomes one German line in page.problems for the caller's warning.

Does not handle: conf.py (rst_prolog, rst_epilog, substitutions defined there), intersphinx, labels
defined by other extensions (autosectionlabel), the :date: and other substitution directives than
replace, unicode and image.
"""
import fnmatch
import os
import posixpath
import re
import unicodedata
from pathlib import Path

from rag.ingest.rst.headings import Styles, heading_at
from rag.ingest.rst.inline import inline

INCLUDE_DEPTH = 4  # includes inside includes, at most
MAX_INCLUDE_BYTES = 1024 * 1024  # a larger included file is skipped
LABEL = re.compile(r"^\s*\.\. _([^:`][^:]*|`[^`]+`):\s*$")  # ".. _quota-label:" (a label, no URL)
# ".. _FW: https://…" (a link)
TARGET = re.compile(r"^\s*\.\. _([^:`][^:]*|`[^`]+`):\s+(\S+)\s*$")
SUBSTITUTION = re.compile(r"^\.\. \|([^|]+)\|\s+([\w-]+)::(?:\s+(.*)|\s*$)")
INCLUDE = re.compile(r"^\.\. include::\s+(\S+)\s*$")
CODE_POINT = re.compile(r"(?:0x|x|\\x|U\+|u|\\u|&#x)([0-9a-fA-F]+);?|&#(\d+);", re.I)
SPACES = {"\u00a0": " ", "\u202f": " "}  # no-break spaces of substitutions read as plain spaces


def doc_name(rel):
    """A page's Sphinx document name. Example: "about/about.rst" -> "about/about" """
    return rel[:-4] if rel.lower().endswith(".rst") else rel


def read_text(path):
    """A text file's content (UTF-8, NFC, "\\n" line ends, tabs expanded); None if unreadable or too
    large."""
    try:
        if os.path.getsize(path) > MAX_INCLUDE_BYTES:
            return None
        data = Path(path).read_bytes()
    except OSError:
        return None
    text = data.decode("utf-8-sig", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text).expandtabs(8)


def unicode_value(argument):
    """The text of a "unicode::" substitution. Example: "z. U+00A0 B. .. zum Beispiel" -> "z. B."
    """
    out = []
    for token in argument.split():
        if token == "..":
            break
        code = CODE_POINT.fullmatch(token)
        if code:
            token = chr(int(code.group(1), 16) if code.group(1) else int(code.group(2)))
        out.append(token)
    return "".join(SPACES.get(c, c) for c in "".join(out))


class Project:
    """The reST pages of one wiki: their titles and labels (read once), and files to include."""

    def __init__(self, root, rels):
        self.root = Path(root)
        self.docs = {doc_name(rel): rel for rel in rels}
        self.titles, self.labels = None, None

    def page(self, rel, text):
        return Page(self, rel, text)

    def scan(self):
        """Read every page's first title and the titles behind its labels (once)."""
        if self.titles is not None:
            return
        self.titles, self.labels = {}, {}  # set first: a title's :doc: role asks while this runs
        for doc, rel in sorted(self.docs.items()):
            text = read_text(self.root / rel)
            if text is None:
                continue
            page = Page(self, rel, text)
            title, labels = titles_of(page.lines)
            if title:
                self.titles[doc] = inline(title, page)
            self.labels.update({name: inline(raw, page) for name, raw in labels.items() if raw})

    def title(self, doc):
        self.scan()
        return self.titles.get(doc)

    def label(self, name):
        self.scan()
        return self.labels.get(name.strip("`").lower())


def titles_of(lines):
    """(first title, {label: title after it}) of a page's lines. A label before anything else than a
    title has none.

    Example: [".. _q-label:", "", "Quota", "=====", "Text"] -> ("Quota", {"q-label": "Quota"})
    """
    first, labels, pending, i = None, {}, [], 0
    while i < len(lines):
        label = LABEL.match(lines[i])
        if label or not lines[i].strip():
            pending += [label.group(1).strip("`").lower()] if label else []
            i += 1
            continue
        found = heading_at(lines, i)
        first = first or (found[0] if found else None)
        labels.update(dict.fromkeys(pending, found[0] if found else None))
        pending, i = [], found[2] if found else i + 1
    return first, labels


class Page:
    """One page while it is read: lines, heading styles, substitutions, link targets, problems."""

    def __init__(self, project, rel, text):
        self.project, self.rel = project, rel
        self.lines = text.expandtabs(8).split("\n")
        self.styles = Styles()
        self.problems = []  # German lines for the caller's warning
        self.including = [rel]  # the files being read, the page first
        self.substitutions, self.targets = {}, {}
        self.read_definitions(self.lines, 0)

    def resolve(self, target):
        """The wiki-relative path of a target as Sphinx reads it: "/x" from the wiki, "x" beside the
        file being read; None if it leaves the wiki.

        Example: "quota" on the page "user/index.rst" -> "user/quota"
        """
        base = "" if target.startswith("/") else posixpath.dirname(self.including[-1])
        path = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
        return None if path == ".." or path.startswith("../") or path.startswith("/") else path

    def doc_title(self, target):
        doc = self.resolve(doc_name(target.strip()))
        return self.project.title(doc) if doc else None

    def label_title(self, name):
        return self.project.label(name)

    def glob(self, pattern):
        """The documents a toctree :glob: pattern matches, sorted, the page itself not.

        Example: "linbo/*" -> ["linbo/a", "linbo/b"]
        """
        pattern, own = self.resolve(pattern) or "", doc_name(self.rel)
        docs = [doc for doc in self.project.docs if fnmatch.fnmatchcase(doc, pattern)]
        return sorted(doc for doc in docs if doc != own)

    def substitution(self, name):
        """(text, trim left, trim right) of |name|: exact, else in any case (as docutils); None if
        undefined."""
        if name in self.substitutions:
            return self.substitutions[name]
        return next((v for k, v in self.substitutions.items() if k.lower() == name.lower()), None)

    def open_include(self, target):
        """The text of a file to include (now the file being read); None, with a problem noted."""
        path = self.resolve(target)
        if path is None or len(self.including) > INCLUDE_DEPTH or path in self.including:
            why = "zu tief oder im Kreis eingebunden" if path else "liegt außerhalb des Wikis"
            self.problems.append(f"include {target} {why} – übersprungen")
            return None
        text = read_text(self.project.root / path)
        if text is None:
            self.problems.append(f"include {target} nicht gefunden oder nicht lesbar – "
                                 f"übersprungen; Pfad prüfen")
            return None
        self.including.append(path)
        return text

    def close_include(self):
        self.including.pop()

    def read_definitions(self, lines, depth):
        """Substitution definitions and link targets of `lines`, and of the files they include."""
        for i, line in enumerate(lines):
            target = TARGET.match(line)
            if target:
                self.targets[target.group(1).strip("`").lower()] = target.group(2)
            definition = SUBSTITUTION.match(line)
            if definition:
                self.define(definition, lines, i + 1)
            include = INCLUDE.match(line)
            if include and depth < INCLUDE_DEPTH:
                problems = list(self.problems)
                text = self.open_include(include.group(1))
                self.problems = problems  # reported once, when the include is read as text
                if text is not None:
                    self.read_definitions(text.split("\n"), depth + 1)
                    self.close_include()

    def define(self, definition, lines, start):
        """Remember one ".. |name| kind:: …" with its indented options and continuation lines."""
        name, kind = definition.group(1), definition.group(2).lower()
        text = [definition.group(3) or ""]
        options = {}
        for line in lines[start:]:
            if not line.strip() or not line[0].isspace():
                break
            option = re.match(r"^\s+:([\w-]+):\s*(.*)$", line)
            if option:
                options[option.group(1).lower()] = option.group(2).strip()
            else:
                text.append(line.strip())
        argument = " ".join(" ".join(text).split())
        value = {"replace": lambda: inline(argument), "unicode": lambda: unicode_value(argument),
                 "image": lambda: options.get("alt", "")}.get(kind, lambda: "")()
        trim = "trim" in options
        self.substitutions[name] = (value, trim or "ltrim" in options, trim or "rtrim" in options)
