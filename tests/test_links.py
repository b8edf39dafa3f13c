"""Every relative link in the Markdown a reader opens resolves: the file exists, and a `#anchor` names a
heading of the Markdown file it points to (GitHub's slugs).

    [Messwerte](docs/messwerte.md#antwortqualität)  ->  docs/messwerte.md exists and has "## Antwortqualität"
    [oben](#konfiguration)                           ->  this file has a heading "Konfiguration"

Checked: README.md, docs/*.md, bench/README.md, eval/README.md; inline links and images `[text](target)`,
and reference definitions `[name]: target`. Links inside code (fenced blocks, `inline code`) are text, not
links. Does not handle: http(s) and mailto links (no network), setext headings (underlined with ===),
anchors into files that are not Markdown (`#L12` of a .py file is left to GitHub).
"""
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "bench" / "README.md",
                ROOT / "eval" / "README.md"])

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)


def prose_lines(text):
    """The lines outside fenced code blocks: "a\\n```\\n[x](y)\\n```\\nb" -> ["a", "b"] (with line numbers)."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip()[len(opening.group(1)):].strip():
                fence = None
        else:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped except '-' and '_', spaces to '-'.

    "Welches Modell was tut – und warum" -> "welches-modell-was-tut--und-warum"
    "Das Wiki beobachten: `--watch`"     -> "das-wiki-beobachten---watch"
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading counts by its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path):
    """The anchors a Markdown file offers: its headings' slugs (repeats get -1, -2 …) and <a name/id>."""
    found, seen = set(), {}
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path):
    """(line number, target) for every link outside code: "[a](b.md#c) `[x](y)`" -> [(1, "b.md#c")]."""
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        line = INLINE_CODE.sub("", line)
        for target in LINK.findall(line):
            yield number, target
        reference = REFERENCE.match(line)
        if reference:
            yield number, reference.group(1)


def broken(path):
    """What is wrong with one file's links, one line each: "README.md:12: docs/x.md – Datei fehlt"."""
    problems = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("//"):
            continue  # http(s), mailto …: not checked here
        where = f"{path.relative_to(ROOT)}:{number}: {target}"
        file_part, _, anchor = target.partition("#")
        file_part, anchor = unquote(file_part), unquote(anchor)
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            problems.append(f"{where} – Datei fehlt")
        elif ROOT not in linked.parents and linked != ROOT:
            problems.append(f"{where} – zeigt aus dem Repository hinaus")
        elif anchor and linked.suffix.lower() == ".md" and anchor not in anchors(linked):
            problems.append(f"{where} – keine Überschrift mit dem Anker #{anchor} in {linked.relative_to(ROOT)}")
    return problems


@pytest.mark.parametrize("heading, expected", [
    ("Konfiguration", "konfiguration"),
    ("Welches Modell was tut – und warum", "welches-modell-was-tut--und-warum"),
    ("Antworten, die man prüfen kann", "antworten-die-man-prüfen-kann"),
    ("Das Wiki beobachten: `--watch`", "das-wiki-beobachten---watch"),
    ("Der fremde Korpus (ioBroker)", "der-fremde-korpus-iobroker"),
    ("Andere Formate: PDF, HTML, Word", "andere-formate-pdf-html-word"),
    ("snake_case und Straße", "snake_case-und-straße"),
    ("Rundgang: die Räume von `rag/`", "rundgang-die-räume-von-rag"),
])
def test_slug_follows_github(heading, expected):
    assert slug(heading) == expected


def test_repeated_headings_and_code_are_told_apart(tmp_path):
    page = tmp_path / "seite.md"
    page.write_text("# Gemessen\n\n## Gemessen\n\n````text\n# kein Titel\n```bash\n[x](fehlt.md)\n```\n````\n"
                    "`[y](fehlt.md)` und [z](#gemessen-1)\n", encoding="utf-8")
    assert anchors(page) == {"gemessen", "gemessen-1"}
    assert list(links(page)) == [(11, "#gemessen-1")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page):
    assert page.exists(), f"{page.relative_to(ROOT)} fehlt"
    assert broken(page) == []


def test_every_docs_page_is_linked_from_the_readme():
    linked = {unquote(target.partition("#")[0]) for _, target in links(ROOT / "README.md")}
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert sorted(pages - linked) == []


def test_the_rundgang_names_functions_that_exist():
    """docs/rundgang.md: every `name` in a step is defined in one of the files that step links to."""
    text = (ROOT / "docs" / "rundgang.md").read_text(encoding="utf-8").split("## Die Dateien")[0]
    steps = re.split(r"\n(?=\d\. \*\*)", text)[1:]
    assert len(steps) == 9  # the post's steps: read, chunk, embed, store; embed, rank, prompt, ask, show
    missing = []
    for step in steps:
        step = step.split("\n## ")[0]
        source = ""
        for target in re.findall(r"\]\(\.\./([^)#]+)\)", step):
            path = ROOT / target
            files = sorted(path.glob("*.py")) if path.is_dir() else [path] if path.suffix == ".py" else []
            source += "".join(f.read_text(encoding="utf-8") for f in files)
        for name in re.findall(r"`([A-Za-z_]\w*)`", step):
            if not re.search(rf"^\s*(?:def|class) {name}\b|^{name} = ", source, re.M):
                missing.append(f"{step[:30]!r}: {name}")
    assert missing == []


def test_the_readme_fits_on_a_screen():
    """Issue 28: README.md ≤ 250 lines; everything else lives in docs/, one page a topic."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250
