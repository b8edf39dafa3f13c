"""reST explicit markup (".. …") as Markdown lines: directives, comments, targets, substitutions.

    explicit(".. hint:: Vorher sichern.", [], …)              -> ["Hinweis:", "Vorher sichern."]
    explicit(".. code:: bash", ["", "ls -l"], …)              -> ["```bash", "ls -l", "```"]
    explicit(".. figure:: a.png", [":alt: Menü", "", "Bild"], …) -> ["Menü", "Bild"]
    explicit(".. toctree::", ["", "quota", "netz/index"], …)  -> ["- Quota", "- Netzwerk"]

Admonitions become a German label line and their body, one paragraph of their section, as MkDocs
admonitions do (rag/ingest/markup.py); a body that starts with a label itself ("Achtung: …") keeps
that label, once. Figures and images become their alt text (not a bare file name) and caption, code
blocks a ``` fence, a toctree the list of its children's titles, an include the included file read
as reST (substitution files define, and show nothing). Layout and authoring directives (raw,
sectionauthor, tabularcolumns, …), comments, link targets and substitution definitions show
nothing; the page reads targets and definitions beforehand (project.py). Any other directive shows
its body.

Does not handle: literalinclude, csv-table and list-table as tables (their body is shown as text),
math, domain directives (py:function …) beyond their body.
"""
import re

from rag.ingest import markup
from rag.ingest.rst.inline import inline, split_target

DIRECTIVE = re.compile(r"^([\w:+-]+)::(?:\s+(.*)|\s*$)", re.S)
OPTION = re.compile(r"^:([\w-]+):(?:\s+(.*)|\s*$)")
CODE = {"code", "code-block", "sourcecode", "parsed-literal"}
VERSIONS = {"versionadded": "Neu in Version", "versionchanged": "Geändert in Version",
            "deprecated": "Veraltet seit Version"}
DROPPED = {"raw", "sectionauthor", "codeauthor", "moduleauthor", "highlight", "tabularcolumns",
           "index", "meta", "contents", "todo", "default-role", "role", "title", "sectnum",
           "header", "footer", "target-notes", "literalinclude", "math", "graphviz", "youtube",
           "video", "iframe"}
TITLED = {"rubric", "centered", "topic", "sidebar", "table", "list-table", "csv-table", "tab",
          "card", "dropdown"}  # the argument is text a reader sees
NO_ARGUMENT = set(markup.SPHINX_LABELS) | {"toctree", "glossary", "compound", "container"}
LABEL_WORDS = "|".join(markup.NOTE_LABELS)
# "Achtung: …", "**Achtung:** …", "**Hinweis**" at the start of a note
OWN_LABEL = re.compile(rf"^(?:\*\*({LABEL_WORDS})\s*:?\s*\*\*\s*:?|({LABEL_WORDS})\s*:)\s*(.*)$",
                       re.I)


def explicit(first, body, page, nested):
    """Markdown lines of one explicit markup block: its first line, its indented lines (dedented).

    nested(lines) reads an indented body as reST (blocks.nested).
    """
    rest = first[2:].strip()
    directive = DIRECTIVE.match(rest)
    if rest.startswith(("_", "|")) or not directive:
        return []  # a target, a substitution definition (both read by project.py) or a comment
    name = directive.group(1).lower().split(":")[-1]
    argument, options, content = parts(directive.group(2) or "", body, name not in NO_ARGUMENT)
    if name in CODE:
        return code(argument, options, content, page)
    if name in ("figure", "image"):
        return figure(argument, options, content, page, nested)
    if name in markup.SPHINX_LABELS:
        return admonition(f"{markup.SPHINX_LABELS[name]}:", content, nested)
    if name == "admonition":
        return admonition(markup.label(None, inline(argument, page)), content, nested)
    if name in VERSIONS:
        version, _, text = argument.partition(" ")
        return admonition(f"{VERSIONS[name]} {version}:", [text] * bool(text) + content, nested)
    if name == "toctree":
        return toctree(options, content, page)
    if name == "include":
        return include(argument, options, page, nested)
    if name in DROPPED:
        return []
    if name in TITLED and argument:
        return markup.one_paragraph([inline(argument, page)] + nested(content))
    return nested(content)


def parts(argument, body, takes_argument):
    """(argument, {option: value}, content lines) of a directive's first-line text and its body.

    Example: ("a.png", [":alt: Menü", "   geöffnet", "", "Text"], True)
             -> ("a.png", {"alt": "Menü geöffnet"}, ["Text"])
    A directive without arguments has its first-line text as the first line of its content.
    """
    if argument.strip() and not takes_argument:
        return "", {}, [argument.strip()] + body
    i = 0
    while takes_argument and i < len(body) and body[i].strip():
        if OPTION.match(body[i].strip()):
            break
        argument += " " + body[i].strip()
        i += 1
    start = i
    while i < len(body) and not body[i].strip():
        i += 1  # options after a blank line: lenient, so ":alt:" never shows as text
    if i == len(body) or not OPTION.match(body[i].strip()):
        i = start
    options = {}
    while i < len(body) and OPTION.match(body[i].strip()):
        option = OPTION.match(body[i].strip())
        pad, value = len(body[i]) - len(body[i].lstrip()), [option.group(2) or ""]
        i += 1
        while i < len(body) and body[i].strip() and len(body[i]) - len(body[i].lstrip()) > pad:
            value.append(body[i].strip())
            i += 1
        options[option.group(1).lower()] = " ".join(value).strip()
    return " ".join(argument.split()), options, body[i:]


def fence(code_lines, language=""):
    """A fenced code block of `code_lines`; ~~~ when the code holds a ``` line; [] for no code.

    Example: (["", "ls -l", ""], "bash") -> ["```bash", "ls -l", "```"]
    """
    lines = [line.rstrip() for line in code_lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        return []
    width = min(len(line) - len(line.lstrip()) for line in lines if line)
    mark = "~~~" if any(line.lstrip().startswith("```") for line in lines) else "```"
    return [mark + language] + [line[width:] for line in lines] + [mark]


def code(argument, options, content, page):
    """A code directive as a fence with its language ("none", "text": none), its caption above."""
    language = (argument.split() or [options.get("language", "")])[0]
    language = "" if language.lower() in ("none", "text", "default") else language
    caption = [inline(options["caption"], page)] if options.get("caption") else []
    return caption + fence(content, language)


def figure(path, options, content, page, nested):
    """A figure's alt text and caption (legend too), one paragraph; nothing for an image without.

    An alt text that only repeats the file name ("logo.png", "logo") is no text.
    """
    alt = " ".join(options.get("alt", "").split())
    name = path.rstrip("/").split("/")[-1].lower()
    if alt.lower() in (name, name.rsplit(".", 1)[0]):
        alt = ""
    caption = [line for line in nested(content) if line.strip()]
    alt = inline(alt, page) if alt else ""
    if alt and caption and alt.strip(" .") == caption[0].strip(" ."):
        alt = ""
    return markup.one_paragraph([alt] * bool(alt) + caption)


def admonition(label, content, nested):
    """A note as its label line and its body, one paragraph; a bare label yields to the body's own.

    Example: ("Hinweis:", ["Erst sichern."]) -> ["Hinweis:", "Erst sichern."];
             ("Hinweis:", ["Achtung: heiß"]) -> ["Achtung:", "heiß"]
    """
    body = nested(content)
    own = OWN_LABEL.match(body[0].strip()) if body and label[:-1] in markup.NOTE_LABELS else None
    if own:
        said = own.group(1) or own.group(2)
        label = next(name for name in markup.NOTE_LABELS if name.lower() == said.lower()) + ":"
        body = ([own.group(3)] if own.group(3).strip() else []) + body[1:]
    return markup.one_paragraph([label] + body)


def toctree(options, content, page):
    """An index page's navigation as a list of its children: their titles where the page knows them.

    Example: ([":caption: Über"] read as options, ["about/about", "Neu <about/new>"])
             -> ["Über:", "- Was ist linuxmuster.net?", "- Neu"]
    """
    items = []
    for entry in (line.strip() for line in content):
        if not entry or entry.startswith(".."):
            continue
        title, target = split_target(entry)
        if target == "self":
            continue
        if "glob" in options and any(c in target for c in "*?["):
            items += [page.project.title(doc) or doc.split("/")[-1] for doc in page.glob(target)]
        elif re.match(r"[a-z][\w+.-]*://", target):
            items.append(title or target)
        else:
            items.append(title or page.doc_title(target) or target.rstrip("/").split("/")[-1])
    caption = [f"{inline(options['caption'], page)}:"] if options.get("caption") and items else []
    return caption + [f"- {inline(item, page)}" for item in items]


def include(path, options, page, nested):
    """The included file read as reST (as code with :literal: / :code:); [] if it cannot be read."""
    text = page.open_include(path)
    if text is None:
        return []
    try:
        lines = text.expandtabs(8).split("\n")
        if "literal" in options or "code" in options:
            return fence(lines, options.get("code", ""))
        return nested(lines)
    finally:
        page.close_include()
