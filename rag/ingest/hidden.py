"""Text a reader does not see: invisible characters, hidden HTML, Office text, sheets, rows and
slides (dropped).

    strip_invisible("Pass\\u200bwort \\u202eabc")  -> ("Passwort abc", 2)
    css_hidden("display: none")                   -> ELEMENT
    css_hidden("color:#fff; font-size:1px")       -> TINY
    describe(Counter({COMMENT: 2, INVISIBLE: 1}))  -> "2 HTML-Kommentare, 1 unsichtbares Zeichen"

Hidden text is where injected instructions hide: a reader sees the page without them, a model
would read them. rag/ingest/formats/ drops HTML comments, elements hidden by display:none,
visibility:hidden, opacity:0, the hidden attribute or aria-hidden="true", tiny text (font-size at
most TINY_PX) and white text without a dark background, and Word runs with w:vanish, white colour
or a tiny size, OpenDocument text hidden by a field, a section or a style, hidden sheets, rows,
columns (Excel, LibreOffice) and slides with their notes; build_index.py removes INVISIBLE_CHARS
from every page (Markdown too) and prints one warning per page with the counts. The page itself is
still indexed.

Does not handle: CSS in <style> blocks or classes (only inline style="…" counts), text hidden by
position (left:-9999px), clipping, colour close to the background other than white on white,
text behind images, invisible text in PDFs (pdftotext extracts it like any other), Word's
character styles with vanish, soft hyphens (kept: they only break words) and the zero-width joiner
inside emoji (removed with the rest).
"""
import re
from collections import Counter

TINY_PX = 2  # font sizes up to this many pixels (or 0) count as hidden; 1pt = 4/3 px, 1em = 16px
INVISIBLE_CHARS = ("\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e"  # zero width
                   # bidi controls
                   "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# + Unicode tag characters ("ASCII smuggling")
INVISIBLE_RE = re.compile(f"[{INVISIBLE_CHARS}\U000e0000-\U000e007f]")
COMMENT, ELEMENT, TINY, WHITE, WORD, INVISIBLE = (
    "comment", "element", "tiny", "white", "word", "invisible")
# OpenDocument, sheets, slides
OFFICE, SHEET, ROW, COLUMN, SLIDE = "office", "sheet", "row", "column", "slide"
# (one, many) for the warning
NAMES = {COMMENT: ("HTML-Kommentar", "HTML-Kommentare"),
         ELEMENT: ("ausgeblendetes Element", "ausgeblendete Elemente"),
         TINY: ("Stelle in winziger Schrift", "Stellen in winziger Schrift"),
         WHITE: ("Stelle in weißer Schrift", "Stellen in weißer Schrift"),
         WORD: ("versteckte Word-Textstelle", "versteckte Word-Textstellen"),
         INVISIBLE: ("unsichtbares Zeichen", "unsichtbare Zeichen"),
         OFFICE: ("versteckte Textstelle", "versteckte Textstellen"),
         SHEET: ("ausgeblendetes Tabellenblatt", "ausgeblendete Tabellenblätter"),
         ROW: ("ausgeblendete Zeile", "ausgeblendete Zeilen"),
         COLUMN: ("ausgeblendete Spalte", "ausgeblendete Spalten"),
         SLIDE: ("ausgeblendete Folie", "ausgeblendete Folien")}
WHITE_COLOURS = {"white", "#fff", "#ffffff", "rgb(255,255,255)", "rgba(255,255,255,1)", "ffffff"}
UNITS_PX = {"px": 1.0, "pt": 4 / 3, "em": 16.0, "rem": 16.0, "%": 0.16, "": 1.0}


def strip_invisible(text):
    """(text without zero-width, bidi control and tag characters, how many were removed)."""
    cleaned, n = INVISIBLE_RE.subn("", text)
    return cleaned, n


def declarations(style):
    """Inline CSS as {property: value}, lower case, spaces removed. Example: "Color: #FFF"
    -> {"color": "#fff"}"""
    out = {}
    for part in (style or "").split(";"):
        prop, _, value = part.partition(":")
        if value:
            out[prop.strip().lower()] = re.sub(r"\s+|!important", "", value.lower())
    return out


def tiny(size):
    """Is a CSS font-size this small? Example: "1px" -> True, "0" -> True, "0.8em" -> False"""
    m = re.fullmatch(r"(\d*\.?\d+)(px|pt|em|rem|%)?", size or "")
    return bool(m) and float(m.group(1)) * UNITS_PX[m.group(2) or ""] <= TINY_PX


def white(colour):
    """Example: "#FFF" -> True, "rgb(255, 255, 255)" -> True, "#333" -> False"""
    return (colour or "").lower().replace(" ", "") in WHITE_COLOURS


def css_hidden(style, dark_background=False):
    """Why an element with this inline style is invisible (a reason for describe), or None.

    dark_background: an ancestor (or the element) paints a background that is not white, so white
    text is readable there.
    """
    css = declarations(style)
    if css.get("display") == "none" or css.get("visibility") in ("hidden", "collapse"):
        return ELEMENT
    if re.fullmatch(r"0?\.0\d*|0", css.get("opacity", "1")):
        return ELEMENT
    if tiny(css.get("font-size")):
        return TINY
    if white(css.get("color")) and not (dark_background or paints_background(style)):
        return WHITE
    return None


def paints_background(style):
    """Does the inline style set a background that is not white? Example: "background:#003366"
    -> True"""
    css = declarations(style)
    background = css.get("background-color") or css.get("background", "")
    return bool(background) and not any(w in background for w in WHITE_COLOURS) and \
        background not in ("none", "transparent", "inherit", "initial")


def describe(counts):
    """Example: Counter({COMMENT: 2, ELEMENT: 1}) -> "2 HTML-Kommentare,
    1 ausgeblendetes Element" """
    return ", ".join(f"{n} {NAMES[what][n != 1]}" for what, n in Counter(counts).items() if n)
