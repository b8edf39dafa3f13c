"""Documentation markup as plain Markdown: MkDocs Material admonitions and content tabs, setext
headings, attribute lists, ==mark== and ++keys++, so the chunker (rag/ingest/chunking.py) reads them
as structure.

    plain('!!! warning "Backup"\\n    Vorher sichern.\\n')
    -> "Achtung: Backup\\nVorher sichern.\\n"
    plain('=== "Debian"\\n    apt install x\\n=== "RHEL"\\n    dnf install x')
        -> "Variante „Debian“:\\napt install x\\nVariante „RHEL“:\\ndnf install x"
    plain("Update\\n------\\nText {: .note }")                  -> "## Update\\nText"

An admonition (!!!, ??? and ???+) becomes a German label line ("Hinweis: Titel", "Achtung:")
followed by its body, indentation removed, as one paragraph of the section it stands in (blank lines
outside code are dropped, so the chunker keeps it together). A group of content tabs becomes one
paragraph too: each tab's label as "Variante „…“:" and its content. A setext heading is a
single-line paragraph underlined with === (level 1) or --- (level 2). Fenced code is left as it is.

Does not handle: multi-line setext headings, headings inside admonitions or tabs (they still start a
section), tabs and admonitions indented with tabs, other Material extensions (annotations, grids,
icons).
"""
import re

LABELS = {  # admonition type (lower case) -> German label; anything else is a "Hinweis"
    **dict.fromkeys(("note", "info", "tip", "hint", "important", "seealso", "todo", "popup",
                     "hinweis", "tipp"),
                    "Hinweis"),
    **dict.fromkeys(("warning", "caution", "attention", "danger", "error", "failure", "fail", "bug",
                     "achtung", "warnung", "gefahr", "fehler"), "Achtung"),
    **dict.fromkeys(("example", "beispiel"), "Beispiel"),
    **dict.fromkeys(("success", "check", "done", "erfolg"), "Erfolg"),
    **dict.fromkeys(("question", "help", "faq", "frage"), "Frage"),
    **dict.fromkeys(("abstract", "abstrakt", "summary", "tldr", "zusammenfassung"),
                    "Zusammenfassung"),
    **dict.fromkeys(("quote", "cite", "zitat"), "Zitat"),
}
# reST/Sphinx admonition -> German label (Sphinx names each kind apart; rag/ingest/rst/)
SPHINX_LABELS = {
    "note": "Hinweis", "hint": "Hinweis", "attention": "Achtung", "caution": "Vorsicht",
    "danger": "Gefahr", "error": "Fehler", "important": "Wichtig", "tip": "Tipp",
    "warning": "Warnung", "seealso": "Siehe auch",
}
# every label a note line starts with
NOTE_LABELS = sorted(set(LABELS.values()) | set(SPHINX_LABELS.values()))
KEYS = {"ctrl": "Strg", "alt": "Alt", "del": "Entf", "delete": "Entf", "shift": "Umschalt",
        "enter": "Enter", "esc": "Esc", "tab": "Tab", "space": "Leertaste",
        "backspace": "Rücktaste", "cmd": "Cmd", "win": "Win"}

FENCE = re.compile(r"^\s*(```|~~~)")
# !!! note "Titel"
ADMONITION = re.compile(r'^( *)(!!!|\?\?\?\+?) *([^\s"]+)?(?: +[^\s"]+)*? *(?:"(.*)")? *$')
TAB = re.compile(r'^( *)===\+? +"(.*)" *$')  # === "docker-compose (Standalone)"
SETEXT = re.compile(r"^ {0,3}(=+|-+) *$")
# lines that are no heading text
NOT_SETEXT = re.compile(r"^ {4,}|^\s*([#>|*+-]|\d+[.)]\s|!!!|\?\?\?|===|\[!\[|!\[)")
ATTR = r'(?:[.#][\w:-]+|[\w-]+=(?:"[^"]*"|\'[^\']*\'|[^\s}]+))'
# {: .class }, { #id }, {target=_blank}
ATTRIBUTES = re.compile(r" *\{:? *" + ATTR + r"(?: +" + ATTR + r")* *\}")
MARK = re.compile(r"(?<![=\w])==(?=\S)(.+?)(?<=\S)==(?![=\w])")  # ==wichtig== -> wichtig
KEY = re.compile(r"\+\+([\w-]+(?:\+[\w-]+)*)\+\+")  # ++ctrl+alt+del++ -> Strg+Alt+Entf


def label(kind, title):
    """The German label line of an admonition. Example: ("warning", "Backup") -> "Achtung: Backup";
    (None, "Dateiname") -> "Hinweis: Dateiname"; ("tip", "") -> "Hinweis:";
    (None, "attention Text") -> "Achtung: Text" (the type slipped into the quotes);
    ("note", "Hinweis") -> "Hinweis:" (a title that is a label is the label, not said twice)"""
    if title and title.strip().rstrip(":").lower() in LABELS:
        kind, title = title.strip().rstrip(":"), ""
    elif not kind and title and title.split(" ", 1)[0].lower() in LABELS:
        kind, _, title = title.partition(" ")
    name = LABELS.get((kind or "").lower(), "Hinweis")
    return f"{name}: {title.strip()}" if title and title.strip() else f"{name}:"


def indented_block(lines, start, indent):
    """(body lines with `indent` spaces removed, index after the block): the lines from `start` that
    are indented by at least `indent` spaces, blank lines inside included, trailing blank lines not.

    Example: (["    a", "", "    b", "c"], 0, 4) -> (["a", "", "b"], 3)
    """
    end = start
    for i in range(start, len(lines)):
        if lines[i].strip() and not lines[i].startswith(" " * indent):
            break
        if lines[i].strip():
            end = i + 1
    return [line[indent:] for line in lines[start:end]], end


def one_paragraph(lines):
    """The lines without blank lines outside fenced code, so the chunker keeps them in one block.

    Example: ["a", "", "```", "", "```"] -> ["a", "```", "", "```"]
    """
    out, fence = [], None
    for line in lines:
        marker = FENCE.match(line)
        if marker and fence in (None, marker.group(1)):
            fence = None if fence else marker.group(1)
        if line.strip() or fence:
            out.append(line)
    return out


def inline(line):
    """Attribute lists removed, ==mark== and ++keys++ as plain text.

    Example: "## Ports { #ports }" -> "## Ports"; "==Vorsicht== bei ++ctrl+c++"
             -> "Vorsicht bei Strg+C"
    """
    line = ATTRIBUTES.sub("", line)
    line = MARK.sub(r"\1", line)
    return KEY.sub(lambda m: "+".join(KEYS.get(k.lower(), k[:1].upper() + k[1:])
                                      for k in m.group(1).split("+")), line)


def setext_level(lines, i):
    """1 or 2 if lines[i] is a single-line paragraph underlined by lines[i + 1], else None.

    Example: (["", "Update", "------"], 1) -> 2; (["a", "b", "---"], 1)
             -> None (a paragraph's last line)
    """
    if i + 1 >= len(lines) or not lines[i].strip() or NOT_SETEXT.match(lines[i]):
        return None
    if i > 0 and lines[i - 1].strip():
        return None
    underline = SETEXT.match(lines[i + 1])
    return (1 if underline.group(1)[0] == "=" else 2) if underline else None


def tab_group(lines, i, indent):
    """(one paragraph of every tab of the group starting at lines[i], index after the group)."""
    out = []
    while i < len(lines):
        tab = TAB.match(lines[i])
        if not tab or len(tab.group(1)) != indent:
            break
        body, i = indented_block(lines, i + 1, indent + 4)
        pad = " " * indent
        out += ([pad + f"Variante „{tab.group(2).strip()}“:"]
                + [pad + line for line in plain_lines(body)])
        while (i < len(lines) and not lines[i].strip() and i + 1 < len(lines)
                and TAB.match(lines[i + 1])):
            i += 1  # blank lines between the tabs of one group
    return one_paragraph(out), i


def plain_lines(lines):
    """plain() on a list of lines (admonition and tab bodies are read with it again, so they may
    nest)."""
    out, fence, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        marker = FENCE.match(line)
        if marker and fence in (None, marker.group(1)):
            fence = None if fence else marker.group(1)
        if fence or marker:
            out.append(line)
            i += 1
            continue
        admonition, tab, level = ADMONITION.match(line), TAB.match(line), setext_level(lines, i)
        if admonition:
            indent = len(admonition.group(1))
            body, i = indented_block(lines, i + 1, indent + 4)
            kind, title = admonition.group(3), admonition.group(4)
            if not body and not (title or "").strip():
                continue  # a bare "!!! note" says nothing
            pad = " " * indent
            out += one_paragraph([pad + inline(label(kind, title))]
                                 + [pad + line for line in plain_lines(body)])
        elif tab:
            group, i = tab_group(lines, i, len(tab.group(1)))
            out += group
        elif level:
            out.append("#" * level + " " + inline(line.strip()))
            i += 2
        else:
            out.append(inline(line))
            i += 1
    return out


def plain(body):
    """The page body with its documentation markup as plain Markdown (see the module docstring).

    Text without any of these constructs comes back unchanged.
    """
    return "\n".join(plain_lines(body.split("\n")))
