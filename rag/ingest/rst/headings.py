"""reST section titles: underlined, or over- and underlined, with one punctuation character.

    heading_at(["Quota", "=====", "Text"], 0)            -> ("Quota", ("=", False), 2)
    heading_at(["=====", " Quota ", "=====", "Text"], 0)  -> ("Quota", ("=", True), 3)
    heading_at(["Text", "", "----", ""], 2)              -> None (a transition, no title)

A title's level is not in its character: the first style a page uses is level 1, the next new one
level 2 and so on; over- and underlined "=" is another style than underlined "=" (Styles.level).

Does not handle: titles of more than one line, underlines shorter than the title and shorter than 4
characters (docutils reads those as text too).
"""
import re

EXPLICIT = re.compile(r"^\.\.(?: |$)")  # ".. include:: x" above an underline is no title
ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")  # ===, ----, ~~~~, ^^^^ … (3 or more)


def adornment(line):
    """The character of an adornment line, else None. Example: "-----" -> "-"; "- a" -> None"""
    found = ADORNMENT.match(line)
    return found.group(1) if found else None


def heading_at(lines, i):
    """(title, style, index after the title) if a section title starts at lines[i], else None.

    style: (character, overlined). The title line must not be indented unless it is overlined.
    """
    char = adornment(lines[i])
    if char and i + 2 < len(lines) and lines[i + 1].strip() and adornment(lines[i + 2]) == char:
        title = lines[i + 1].strip()
        if not adornment(lines[i + 1]):
            return title, (char, True), i + 3
    if char or i + 1 >= len(lines) or not lines[i].strip() or lines[i][0].isspace():
        return None
    if EXPLICIT.match(lines[i]):
        return None
    under = adornment(lines[i + 1])
    title = lines[i].strip()
    if under and (len(lines[i + 1].strip()) >= len(title) or len(lines[i + 1].strip()) >= 4):
        return title, (under, False), i + 2
    return None


class Styles:
    """The heading styles of one page in the order it first uses them."""

    def __init__(self):
        self.seen = []

    def level(self, style):
        """1 for the page's first style, 2 for its second … (at most 6, as Markdown has).

        Example: ("=", True), ("=", False), ("-", False), ("=", False) -> 1, 2, 3, 2
        """
        if style not in self.seen:
            self.seen.append(style)
        return min(self.seen.index(style) + 1, 6)
