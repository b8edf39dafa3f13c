"""reST inline markup as Markdown text: roles, literals, links, substitutions, escapes.

    inline("Siehe :ref:`Quota <quota-label>` und ``sophomorix-check``.")
        -> "Siehe Quota und `sophomorix-check`."
    inline(":menuselection:`System --> Einstellungen`")   -> "System › Einstellungen"
    inline("`Forum <https://ask.linuxmuster.net>`_")      -> "[Forum](https://ask.linuxmuster.net)"

Code-like roles (:code:, :file:, :command:, :samp:, Python domain roles …) become `inline code`;
:ref: and :doc: without a text of their own become the section's or page's title where the page
(`Page`) knows it, else the label or document name; every other role becomes its text. *emphasis*
and **strong** stay as they are (Markdown reads them the same way). A |substitution| is replaced
where it is defined (exactly, else ignoring case, as docutils does), with its :ltrim:/:rtrim:.

Does not handle: nested inline markup inside roles, footnote and citation references ([#]_),
roles defined by the page itself (.. role::).
"""
import re

CODE_ROLES = {"code", "file", "command", "samp", "literal", "envvar", "option", "program", "regexp",
              "makevar", "mailheader", "mimetype", "func", "meth", "class", "mod", "attr", "data",
              "const", "exc", "obj", "var", "member", "type", "macro", "cmd"}
TRIM_LEFT, TRIM_RIGHT = "\x01", "\x02"  # around a substitution whose definition trims the spaces

INLINE = re.compile(r"""
    (?P<literal>``(?P<code>\S(?:.*?\S)?)``)
  | (?P<role>:(?P<name>[\w.+-]+(?::[\w.+-]+)?):`(?P<text>[^`]+)`)
  | (?P<link>`(?P<link_text>[^`]+)`__?)(?![\w`])
  | (?P<interpreted>`(?P<plain>[^`]+)`)
  | (?P<substitution>(?<![\w|])\|(?P<sub>[^|\s](?:[^|]*[^|\s])?)\|(?:__?)?(?![\w|]))
  | (?P<reference>(?<![\w`/.-])(?P<word>\w(?:[\w.-]*\w)?)_(?!\w))
  | (?P<escape>\\(?P<char>[\s\S]))
""", re.X | re.S)
TARGET = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)  # "Text <ziel>" -> ("Text", "ziel")


def split_target(text):
    """(title or "", target) of a role's or link's text. Example: "Quota <quota-label>" -> ("Quota",
    "quota-label"); "quota-label" -> ("", "quota-label")"""
    found = TARGET.match(text.strip())
    if found:
        return found.group(1).strip(), found.group(2).strip()
    return "", text.strip()


def role(name, text, page=None):
    """One role as text. Example: ("kbd", "Strg+C") -> "Strg+C"; ("file", "/a") -> "`/a`";
    ("ref", "quota-label") -> the section title behind the label, else "quota-label" """
    name = name.split(":")[-1].lower()
    title, target = split_target(text)
    target = target.lstrip("~!")
    if name in ("ref", "numref", "any", "term", "keyword", "token"):
        return title or (page.label_title(target) if page and name != "term" else None) or target
    if name == "doc":
        found = page.doc_title(target) if page else None
        return title or found or target.rstrip("/").split("/")[-1]
    if name == "download":
        return title or target.split("/")[-1]
    if name == "menuselection":
        return " › ".join(accelerators(part).strip() for part in text.split("-->"))
    if name == "guilabel":
        return accelerators(text)
    if name in CODE_ROLES:
        return code(title or target if name != "samp" else text)
    if name == "abbr":
        return text.strip()
    return title or target


def accelerators(text):
    """Sphinx's accelerator marks removed. Example: "&Datei" -> "Datei"; "A && B" -> "A & B" """
    return re.sub(r"&(&?)", lambda m: "&" if m.group(1) else "", text)


def code(text):
    """Markdown inline code, one line. Example: "a\\nb" -> "`a b`"; "a`b" -> "``a`b``" """
    text = " ".join(text.split())
    return f"``{text}``" if "`" in text else f"`{text}`"


def link(text, page):
    """`Text <url>`_ as a Markdown link, `Text`_ as its text (a link where the page defines it).

    Example: "Forum <https://a.de>" -> "[Forum](https://a.de)"; "<https://a.de>" -> "<https://a.de>"
    """
    title, target = split_target(text)
    if "<" in text and re.match(r"[a-z][\w+.-]*:|www\.|/|\.", target):
        return f"[{title}]({target})" if title else f"<{target}>"
    if "<" in text:
        return title or target.rstrip("_")
    url = page.targets.get(target.lower()) if page else None
    return f"[{target}]({url})" if url else target


def inline(text, page=None):
    """The paragraph `text` with its inline markup as Markdown (see the module docstring).

    page: what the page knows (substitutions, link targets, titles); None reads the markup alone.
    """
    def one(match):
        kind = match.lastgroup
        if kind == "literal":
            return code(match.group("code"))
        if kind == "role":
            return role(match.group("name"), match.group("text"), page)
        if kind == "link":
            return link(match.group("link_text"), page)
        if kind == "interpreted":
            return code(match.group("plain"))
        if kind == "substitution":
            return substitute(match.group(0), match.group("sub"), page)
        if kind == "reference":
            url = page.targets.get(match.group("word").lower()) if page else None
            return f"[{match.group('word')}]({url})" if url else match.group(0)
        char = match.group("char")
        return "" if char.isspace() else char

    out = INLINE.sub(one, text)
    out = re.sub(r"[ \t]*" + TRIM_LEFT, "", out)
    return re.sub(TRIM_RIGHT + r"[ \t]*", "", out)


def substitute(whole, name, page):
    """A |name| reference's text: the page's definition (exact, else any case), else unchanged."""
    found = page.substitution(name) if page else None
    if found is None:
        return whole
    value, trim_left, trim_right = found
    return (TRIM_LEFT if trim_left else "") + value + (TRIM_RIGHT if trim_right else "")
