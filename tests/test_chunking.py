"""Chunking edge cases (German wiki pages), checked against chunks a reader can write down.

Each case goes through read_page (bytes -> text) and chunk_page (text -> [(heading path, content)]),
the same two steps build_index.py runs for every page (rag/ingest/pages.py, rag/ingest/chunking.py).
"""
import unicodedata
from pathlib import Path

import pytest

from rag.ingest import chunking, markup, pages
from rag.models import embed_binary as embedder

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "umlauts-and-sz": ("# Größe der Postfächer\n\nÜbersicht: Maße, Grüße, Straße.\n".encode(),
                       [("Größe der Postfächer", "Übersicht: Maße, Grüße, Straße.")]),
    "umlauts-decomposed-nfd": (unicodedata.normalize("NFD", "# Grüße\n\nÄrger über Löschung").encode(),
                               [("Grüße", "Ärger über Löschung")]),
    "empty-file": (b"", []),
    "only-whitespace": (b"\n  \n\t\n", []),
    "headings-only": ("# Drucker\n\n## Treiber\n\n### Fehlercodes\n".encode(), []),
    "front-matter-only": (b"---\ntitle: VPN\ntags: [netz]\n---\n", []),
    "front-matter-title-and-h1": (b"---\ntitle: VPN\n---\n# VPN\n\nClient starten.\n\n## Linux\n\nopenvpn\n",
                                  [("VPN", "Client starten."), ("VPN \u203a Linux", "openvpn")]),
    "utf8-bom": ("\ufeff# Übersicht\n\nText".encode(), [("Übersicht", "Text")]),
    "crlf-line-endings": (b"# Mail\r\n\r\nZeile eins\r\nZeile zwei\r\n\r\n## Quota\r\n\r\n2 GB\r\n",
                          [("Mail", "Zeile eins\nZeile zwei"), ("Mail \u203a Quota", "2 GB")]),
    "old-mac-cr": (b"# Mail\r\rText\r", [("Mail", "Text")]),
    "headings-in-fenced-code-are-not-headings": (
        b"# Backup\n\n```bash\n# kein Titel\nrsync -a /a /b\n\n# auch kein Titel\n```\n",
        [("Backup", "```bash\n# kein Titel\nrsync -a /a /b\n\n# auch kein Titel\n```")]),
    "tilde-fence-inside-backtick-fence": (
        b"# A\n\n```\n~~~\n# nein\n```\n\n## B\n\nText\n",
        [("A", "```\n~~~\n# nein\n```"), ("A \u203a B", "Text")]),
    "closing-hashes-and-csharp": (b"## Quota ##\n\nText\n\n# Sprache C#\n\nMehr\n",
                                  [("Quota", "Text"), ("Sprache C#", "Mehr")]),
    "heading-path-goes-back-up": (b"# A\n\n## B\n\nb\n\n### C\n\nc\n\n## D\n\nd\n",
                                  [("A \u203a B", "b"), ("A \u203a B \u203a C", "c"), ("A \u203a D", "d")]),
    "hashtag-is-no-heading": (b"#wichtig bitte lesen\n", [("", "#wichtig bitte lesen")]),
    "short-paragraphs-share-a-chunk": (b"# A\n\neins\n\nzwei\n", [("A", "eins\n\nzwei")]),
}


def chunks_of(tmp_path, data, max_chars=chunking.MAX_CHARS):
    page = tmp_path / "seite.md"
    page.write_bytes(data)
    text, _ = pages.read_page(page, "seite.md")
    return chunking.chunk_page(text, max_chars)


@pytest.mark.parametrize("data, expected", CASES.values(), ids=CASES.keys())
def test_german_edge_cases(tmp_path, data, expected):
    assert chunks_of(tmp_path, data) == expected


def sentences(n):
    return " ".join(f"Satz {i} über die Größe der Postfächer im Rechenzentrum." for i in range(n))


@pytest.mark.parametrize("paragraph", [
    sentences(60),  # far longer than a chunk: cut at sentence ends
    "Wort " * 700,  # no sentence end: cut at spaces
    "x" * 3000,  # no space at all: hard cut
    "\n".join(f"- Punkt {i}: Drucker neu starten." for i in range(120)),  # a long list keeps its lines
], ids=["sentences", "words", "one-word", "list-lines"])
def test_long_paragraph_is_split_without_losing_text(tmp_path, paragraph):
    chunks = chunks_of(tmp_path, f"# Lang\n\n{paragraph}\n".encode(), max_chars=500)
    assert len(chunks) > 1
    assert all(heading == "Lang" and 0 < len(content) <= 500 for heading, content in chunks)
    if " " in paragraph:
        assert " ".join(c for _, c in chunks).split() == paragraph.split()
    else:  # hard cuts
        assert "".join(c for _, c in chunks) == paragraph
    if "\n" in paragraph:
        assert all(line.startswith("- Punkt") for _, c in chunks for line in c.split("\n"))


def test_sentence_ends_are_preferred_cuts():
    text = sentences(30)
    assert all(piece.endswith(".") for piece in chunking.split_long(text, 300))


@pytest.mark.parametrize("word", ["Größe ", "Übergabeprotokoll ", "😀 "])
def test_chunk_longer_than_the_model_context_is_split_further(word):
    paragraph = (word * (20000 // len(word))).strip()  # fits --max-chars, not the context (multi-byte)
    chunks = chunking.chunk_page(f"# Lang\n\n{paragraph}", max_chars=20000)
    assert len(chunks) > 1
    assert all(embedder.fits(chunking.embedded_text(h, c)) for h, c in chunks)
    assert " ".join(c for _, c in chunks).split() == paragraph.split()


def test_chunking_is_deterministic_and_respects_max_chars(tmp_path):
    data = ("# Handbuch\n\n" + "\n\n".join(sentences(i % 7 + 1) for i in range(40))).encode()
    first, second = chunks_of(tmp_path, data, 400), chunks_of(tmp_path, data, 400)
    assert first == second
    assert all(len(content) <= 400 for _, content in first)


# -- the one sentence splitter (rag/text/sentences.py) cuts long paragraphs -----------------------
@pytest.mark.parametrize("abbreviation", ["z. B.", "Nr.", "Abs.", "bzw.", "ca.", "Dr.", "geb."])
def test_long_paragraph_is_not_cut_after_an_abbreviation(abbreviation):
    head = "Vorweg kommt ein langer Satz über die Größe der Postfächer im Rechenzentrum. " + "X" * 10
    text = f"{head} {abbreviation} Weber prüft das Postfach im Rechenzentrum und meldet sich danach."
    pieces = chunking.split_long(text, len(head) + len(abbreviation) + 8)  # the abbreviation fits the window
    assert pieces[0] == "Vorweg kommt ein langer Satz über die Größe der Postfächer im Rechenzentrum."
    assert abbreviation in pieces[1]


def test_a_colon_or_semicolon_still_ends_a_piece():
    text = "Erst kommt dieser lange Hinweis: " + "Danach folgt ein weiterer Teil des Absatzes ohne Ende " * 2
    assert chunking.split_long(text, 60)[0] == "Erst kommt dieser lange Hinweis:"


def test_chunk_pages_warns_and_drops_a_page_without_text(capsys):
    present = {"leer.md", "a.md"}
    todo = chunking.chunk_pages(iter([("leer.md", "h1", "# Nur Titel\n"), ("a.md", "h2", "# A\n\nText")]), 1200,
                                present)
    assert [(p.path, p.hash, p.chunks) for p in todo] == [("a.md", "h2", [("A", "Text")])]
    assert todo[0].keys == [pages.text_hash("A\n\nText")]
    assert present == {"a.md"}
    assert capsys.readouterr().err == ("Warnung: leer.md: enthält keinen Text (leer oder nur Überschriften/Front "
                                       "Matter) – übersprungen\n")


def test_settings_name_the_chunker_version_and_the_limit():
    assert chunking.settings(800) == f"{chunking.CHUNKER}, max_chars=800"


# -- documentation markup is structure (issue 29, rag/ingest/markup.py) ----------------------------
MARKUP = {
    "admonition-with-title": ('# Backup\n\nVorher lesen.\n\n!!! warning "Datenverlust"\n    Erst sichern, dann löschen.\n',
                              [("Backup", "Vorher lesen.\n\nAchtung: Datenverlust\nErst sichern, dann löschen.")]),
    "admonition-german-type": ("# A\n\n!!! Achtung\n    Dienst vorher stoppen.\n",
                               [("A", "Achtung:\nDienst vorher stoppen.")]),
    "admonition-type-in-quotes": ('# A\n\n!!! "attention Nur für 64 bit."\n',
                                  [("A", "Achtung: Nur für 64 bit.")]),
    "admonition-no-space": ('# A\n\n!!!attention "Dateiname"\n    Ohne Umlaute: Groesse.\n',
                            [("A", "Achtung: Dateiname\nOhne Umlaute: Groesse.")]),
    "admonition-title-only": ('# A\n\n!!! tip "Add-ons über das Center verwalten."\n',
                              [("A", "Hinweis: Add-ons über das Center verwalten.")]),
    "collapsible-open-and-closed": ("# A\n\n??? example\n    eins\n\n???+ note \"Mehr\"\n    zwei\n",
                                    [("A", "Beispiel:\neins\n\nHinweis: Mehr\nzwei")]),
    "admonition-body-blank-lines-and-code": (
        "# A\n\n!!! info\n\n    Absatz eins.\n\n    ```sh\n    # kein Titel\n\n    ls\n    ```\n\nDanach.\n",
        [("A", "Hinweis:\nAbsatz eins.\n```sh\n# kein Titel\n\nls\n```\n\nDanach.")]),
    "admonition-never-a-section": ("# A\n\n## B\n\n!!! danger \"## kein Titel\"\n    Text\n",
                                   [("A \u203a B", "Achtung: ## kein Titel\nText")]),
    "admonition-in-code-stays-code": ("# A\n\n```\n!!! note\n    x\n```\n", [("A", "```\n!!! note\n    x\n```")]),
    "content-tabs-one-block": (
        '# Installation\n\n=== "docker-compose (Standalone)"\n\n    Datei anlegen.\n\n    ```yaml\n    a: 1\n    ```\n\n'
        '=== "Debian/Ubuntu"\n    apt install x\n\nWeiter.\n',
        [("Installation", "Variante „docker-compose (Standalone)“:\nDatei anlegen.\n```yaml\na: 1\n```\n"
                          "Variante „Debian/Ubuntu“:\napt install x\n\nWeiter.")]),
    "setext-headings": ("Übersicht\n=========\n\nText\n\nÄnderungen\n----------\n\nMehr\n",
                        [("Übersicht", "Text"), ("Übersicht \u203a Änderungen", "Mehr")]),
    "setext-needs-a-single-line-paragraph": ("# A\n\nZeile eins\nZeile zwei\n---\n",
                                             [("A", "Zeile eins\nZeile zwei\n---")]),
    "dashes-under-a-list-are-no-heading": ("# A\n\n- Punkt\n---\n", [("A", "- Punkt\n---")]),
    "attribute-lists-removed": ("# Ports { #ports }\n\n[Doku](x.md){target=_blank} und Bild ![b](b.png){: .center }\n",
                                [("Ports", "[Doku](x.md) und Bild ![b](b.png)")]),
    "mark-and-keys": ("# A\n\n==Wichtig==: ++ctrl+alt+del++ drücken, a == b bleibt.\n",
                      [("A", "Wichtig: Strg+Alt+Entf drücken, a == b bleibt.")]),
    "front-matter-after-image-line": (
        "---\ntitle: Alt\n---\n\n[![bild.png](b.png)](b.png)\n\n---\ntitle: Datenbankfehler\nlang: de\n---\n\nText\n",
        [("Datenbankfehler", "[![bild.png](b.png)](b.png)\n\nText")]),
    "front-matter-after-blank-line": ("\n---\ntitle: Arbeiten mit Images\n---\n\nText\n",
                                      [("Arbeiten mit Images", "Text")]),
    "horizontal-rule-is-no-front-matter": ("# A\n\nText\n\n---\n\nMehr\n", [("A", "Text\n\n---\n\nMehr")]),
}


@pytest.mark.parametrize("text, expected", MARKUP.values(), ids=MARKUP.keys())
def test_documentation_markup_is_structure(tmp_path, text, expected):
    assert chunks_of(tmp_path, text.encode()) == expected


def test_content_tabs_stay_in_one_chunk_when_they_fit():
    tab = "\n".join(f"    Schritt {i}: Paket installieren." for i in range(8))
    page = "# Setup\n\n" + "\n\n".join(f'=== "System {n}"\n\n{tab}' for n in "ABC") + "\n\nDanach neu starten.\n"
    chunks = chunking.chunk_page(page, max_chars=1200)
    assert len(chunks) == 1 and [c.count("Variante „") for _, c in chunks] == [3]
    cut = chunking.chunk_page(page, max_chars=400)  # too long for one chunk: cut at a line, no text lost
    assert len(cut) > 1 and all(len(c) <= 400 for _, c in cut)
    assert " ".join(c for _, c in cut).split() == " ".join(c for _, c in chunks).split()


@pytest.mark.parametrize("kind, label", [("note", "Hinweis"), ("INFO", "Hinweis"), ("tip", "Hinweis"),
                                         ("hint", "Hinweis"), ("warning", "Achtung"), ("caution", "Achtung"),
                                         ("attention", "Achtung"), ("danger", "Achtung"), ("Achtung", "Achtung"),
                                         ("example", "Beispiel"), ("Beispiel", "Beispiel"), ("Erfolg", "Erfolg"),
                                         ("popup", "Hinweis"), ("unbekannt", "Hinweis")])
def test_admonition_types_get_german_labels(kind, label):
    assert markup.label(kind, "") == f"{label}:"
    assert markup.label(kind, " Titel ") == f"{label}: Titel"


@pytest.mark.parametrize("kind, title, label", [
    ("note", "Hinweis", "Hinweis:"), ("warning", "Warnung:", "Achtung:"),
    ("note", " Achtung ", "Achtung:"), ("tip", "Tipp", "Hinweis:")])
def test_an_admonition_titled_with_a_label_says_it_once(kind, title, label):
    assert markup.label(kind, title) == label
    text = markup.plain(f'!!! {kind} "{title}"\n    In dieser Anleitung steht, wie es geht.\n')
    assert text == f"{label}\nIn dieser Anleitung steht, wie es geht.\n"


def test_sample_wiki_chunks_are_unchanged_by_the_markup_rules():
    """wiki/ has none of these constructs: reading its markup as structure changes no byte of it."""
    wiki = ROOT / "wiki"
    rels = [rel for rel in pages.find_pages(wiki) if rel.endswith((".md", ".txt"))]
    assert len(rels) > 20
    for rel in rels:
        body, _ = pages.strip_front_matter(pages.read_page(wiki / rel, rel)[0])
        assert markup.plain(body) == body, rel


@pytest.mark.parametrize("text, title, tags", [
    ("---\ntitle: VPN\ntags: [netz, Fernzugang]\n---\nText", "VPN", ["netz", "Fernzugang"]),
    ("---\ntitle: 'Größe'\ntags:\n  - Postfach\n  - \"Quota\"\n---\nText", "Größe", ["Postfach", "Quota"]),
    ("---\ntags: mail, quota\n---\nText", None, ["mail", "quota"]),
    ("Text ohne Front Matter", None, []),
])
def test_front_matter_title_and_tags(text, title, tags):
    assert pages.front_matter(text)[1:] == (title, tags)


@pytest.mark.parametrize("text, words, with_tags", [
    ("---\ntitle: Adapter\ntags: [Zigbee]\n---\n# Reiter Adapter\n\nText", "Adapter", "Adapter Zigbee"),
    ("---\ntitle: VPN\ntags: [VPN]\n---\n# VPN\n\nText", "", ""),  # the title is the heading already
    ("---\ntitle: VPN\n---\nText", "", ""),  # no H1: the title heads the path
    ("# Nur Text\n\nText", "", ""),
])
def test_page_words_are_title_and_tags_not_in_the_heading_path(monkeypatch, text, words, with_tags):
    assert chunking.page_words(text, chunking.chunk_page(text)) == words
    todo = chunking.chunk_pages(iter([("a.md", "h", text)]), 1200, {"a.md"})
    assert todo[0].words == words and todo[0].chunks == chunking.chunk_page(text)
    monkeypatch.setattr(chunking, "TAGS_IN_SEARCH", True)  # off by default: measured in docs/suche.md
    assert chunking.page_words(text, chunking.chunk_page(text)) == with_tags
