"""reStructuredText (Sphinx) pages read as structure (rag/ingest/rst/): one tiny case per construct,
then the whole linuxmuster.net handbook indexed with the fake embedder: no directive in any chunk.

The handbook lives beside the repository (../shared/corpora/linuxmuster-de, CC BY-SA 4.0, not in the
repository); where it is missing its test is skipped – also in CI, whose checkout does not have it.
"""
import re
import sqlite3
from pathlib import Path

import pytest

from conftest import ROOT, run_script, write_wiki
from rag.ingest import chunking, pages, rst

CORPUS = ROOT.parent / "shared" / "corpora" / "linuxmuster-de"


def markdown(tmp_path, text, files=None, rel="seite.rst"):
    """The Markdown of one reST page `rel` in a wiki of `files` ({path: text}) beside it."""
    wiki = write_wiki(tmp_path / "wiki", {rel: text, **(files or {})})
    rels = [r for r in pages.find_pages(wiki) if rst.is_rst(r)]
    text = (wiki / rel).read_text(encoding="utf-8")
    out, problems = rst.to_markdown(rel, text, rst.Project(wiki, rels))
    assert problems == []
    return out


# -- titles: the level comes from the order a page uses the styles ---------------------------------
TITLES = {
    "underlines-in-order": ("A\n===\n\nB\n---\n\nC\n~~~\n\nD\n---\n\nText\n",
                            "# A\n\n## B\n\n### C\n\n## D\n\nText\n"),
    "character-is-no-level": ("A\n~~~\n\nB\n===\n\nText\n", "# A\n\n## B\n\nText\n"),
    "overline-is-another-style": ("=====\n  A\n=====\n\nB\n=====\n\nC\n-----\n\nText\n",
                                  "# A\n\n## B\n\n### C\n\nText\n"),
    "after-an-include-line": (".. include:: /leer.subst\nTitel\n=====\n\nText\n",
                              "# Titel\n\nText\n"),
    "short-underline-is-text": ("Ab\n--\n\nText\n", "Ab\n--\n\nText\n"),
    "transition-dropped": ("A\n=\n\nEins\n\n----------\n\nZwei\n", "A\n=\n\nEins\n\nZwei\n"),
}


@pytest.mark.parametrize("text, expected", TITLES.values(), ids=TITLES.keys())
def test_titles_become_headings_by_the_order_of_their_styles(tmp_path, text, expected):
    assert markdown(tmp_path, text, {"leer.subst": ".. Kommentar\n"}) == expected


def test_heading_paths_and_chunks_as_for_markdown(tmp_path):
    page = "Seite\n=====\n\nEins.\n\nAbschnitt\n---------\n\nZwei.\n\nUnter\n~~~~~\n\nDrei.\n"
    assert chunking.chunk_page(markdown(tmp_path, page)) == [
        ("Seite", "Eins."), ("Seite › Abschnitt", "Zwei."), ("Seite › Abschnitt › Unter", "Drei.")]


# -- body elements ---------------------------------------------------------------------------
BLOCKS = {
    "code-block-language": ("Vorher:\n\n.. code-block:: bash\n\n   ls -l\n   cd /\n",
                            "Vorher:\n\n```bash\nls -l\ncd /\n```\n"),
    "code-no-language": (".. code::\n\n   a\n\n   b\n", "```\na\n\nb\n```\n"),
    "code-options-dropped": (".. code:: console\n   :linenos:\n\n   # reboot\n",
                             "```console\n# reboot\n```\n"),
    "literal-after-colons": ("Befehl::\n\n   ls\n", "Befehl:\n```\nls\n```\n"),
    "literal-space-colons": ("Befehl ::\n\n   ls\n", "Befehl\n```\nls\n```\n"),
    "literal-alone": ("Text.\n\n::\n\n   ls\n", "Text.\n\n```\nls\n```\n"),
    "auto-numbered": ("#. eins\n#. zwei\n\n#. drei\n", "1. eins\n2. zwei\n\n3. drei\n"),
    "numbered-from-three": ("3. drei\n#. vier\n", "3. drei\n4. vier\n"),
    "bullets-with-code": ("* Start:\n\n  .. code:: bash\n\n     up\n\n* Ende\n",
                          "- Start:\n  ```bash\n  up\n  ```\n\n- Ende\n"),
    "nested-bullets": ("* Admins:\n     * root\n     * linbo\n* Ende\n",
                       "- Admins:\n  - root\n  - linbo\n- Ende\n"),
    "line-block": ("| Zeile eins\n| Zeile zwei\n", "Zeile eins\nZeile zwei\n"),
    "quote-dedented": ("Text\n\n   eingerückt\n", "Text\n\neingerückt\n"),
    "field-list": (":orphan:\n\n:Autor: Meier\n", "Autor: Meier\n"),
    "hash-line-escaped": ("# ist kein Titel\n", "\\# ist kein Titel\n"),
}


@pytest.mark.parametrize("text, expected", BLOCKS.values(), ids=BLOCKS.keys())
def test_body_elements_become_markdown(tmp_path, text, expected):
    assert markdown(tmp_path, text) == expected


# -- notes: German labels, once, one paragraph --------------------------------------------------
@pytest.mark.parametrize("kind, label", [
    ("hint", "Hinweis"), ("note", "Hinweis"), ("attention", "Achtung"), ("ATTENTION", "Achtung"),
    ("important", "Wichtig"), ("warning", "Warnung"), ("tip", "Tipp"), ("caution", "Vorsicht"),
    ("danger", "Gefahr")])
def test_admonitions_become_labelled_notes(tmp_path, kind, label):
    assert markdown(tmp_path, f".. {kind}:: Erst sichern.\n") == f"{label}:\nErst sichern.\n"
    two = f".. {kind}::\n\n   Eins.\n\n   Zwei.\n"
    assert markdown(tmp_path, two) == f"{label}:\nEins.\nZwei.\n"


NOTES = {
    "label-in-body-not-doubled": (".. attention::\n\n   Achtung: heiß.\n", "Achtung:\nheiß.\n"),
    "strong-label-in-body": (".. hint::\n\n   **Achtung:** heiß.\n", "Achtung:\nheiß.\n"),
    "other-label-in-body-wins": (".. hint:: Wichtig: zuerst.\n", "Wichtig:\nzuerst.\n"),
    "words-are-no-label": (".. hint:: Hinweise unten.\n", "Hinweis:\nHinweise unten.\n"),
    "code-inside": (".. hint::\n\n   Befehl:\n\n   .. code:: bash\n\n      ls\n\n      cd\n",
                    "Hinweis:\nBefehl:\n```bash\nls\n\ncd\n```\n"),
    "generic-admonition": (".. admonition:: Backup\n\n   Vorher sichern.\n",
                           "Hinweis: Backup\nVorher sichern.\n"),
}


@pytest.mark.parametrize("text, expected", NOTES.values(), ids=NOTES.keys())
def test_notes_keep_one_label_and_their_body(tmp_path, text, expected):
    assert markdown(tmp_path, text) == expected


def test_a_note_stays_in_its_section_and_chunk(tmp_path):
    page = "Quota\n=====\n\nSetzen.\n\n.. hint::\n\n   Eins.\n\n   Zwei.\n\nDanach.\n"
    expected = [("Quota", "Setzen.\n\nHinweis:\nEins.\nZwei.\n\nDanach.")]
    assert chunking.chunk_page(markdown(tmp_path, page)) == expected


# -- figures, images, dropped markup ------------------------------------------------------------
MEDIA = {
    "figure-alt-and-caption": (".. figure:: media/menu.png\n   :align: center\n"
                               "   :alt: Menü geöffnet\n\n   Das geöffnete Menü\n",
                               "Menü geöffnet\nDas geöffnete Menü\n"),
    "image-alt": ("Text\n\n.. image:: a.svg\n   :alt: Ablauf\n   :width: 40%\n",
                  "Text\n\nAblauf\n"),
    "image-without-alt": ("Text\n\n.. image:: a.svg\n   :width: 40%\n\nMehr\n", "Text\n\nMehr\n"),
    "alt-is-the-file-name": (".. figure:: media/menu.png\n   :alt: menu.png\n", ""),
    "alt-equals-caption": (".. figure:: a.png\n   :alt: Menü\n\n   Menü\n", "Menü\n"),
    "options-after-blank": (".. figure:: a.png\n\n   :alt: Menü\n", "Menü\n"),
    "label-dropped": (".. _quota-label:\n\nText\n", "Text\n"),
    "sectionauthor-raw-comment": (".. sectionauthor:: `@a <https://x>`_,\n"
                                  "                   `@b <https://y>`_\n\n"
                                  ".. raw:: html\n\n   <br>\n\n.. todo einfügen\n   noch mehr\n\n"
                                  "..\n  .. hint::\n  versteckt\n\nText\n", "Text\n"),
    "only-keeps-body": (".. only:: html\n\n   Sichtbar.\n", "Sichtbar.\n"),
    "target-link": ("Firmware - FW_\n\n.. _FW: https://example.org/fw\n",
                    "Firmware - [FW](https://example.org/fw)\n"),
}


@pytest.mark.parametrize("text, expected", MEDIA.values(), ids=MEDIA.keys())
def test_figures_are_their_text_and_markup_is_dropped(tmp_path, text, expected):
    assert markdown(tmp_path, text) == expected


# -- inline markup: roles, literals, substitutions ----------------------------------------------
INLINE = {
    "ref-with-text": ("Siehe :ref:`die Quota <quota-label>`.", "Siehe die Quota."),
    "ref-resolved": ("Siehe :ref:`quota-label`.", "Siehe Quota setzen."),
    "ref-unresolved": ("Siehe :ref:`fehlt-label`.", "Siehe fehlt-label."),
    "doc-resolved": ("Siehe :doc:`netz/vpn`.", "Siehe VPN einrichten."),
    "doc-with-text": ("Siehe :doc:`Kapitel <netz/vpn>`.", "Siehe Kapitel."),
    "term-kbd-guilabel": (":term:`LINBO`, :kbd:`Strg+C`, :guilabel:`&Speichern`",
                          "LINBO, Strg+C, Speichern"),
    "menuselection": (":menuselection:`System --> Einstellungen --> Protokoll`",
                      "System › Einstellungen › Protokoll"),
    "code-roles": (":file:`/etc/hosts`, :command:`ls`, :code:`a = 1`",
                   "`/etc/hosts`, `ls`, `a = 1`"),
    "literal": ("Mit ``sophomorix-check`` prüfen.", "Mit `sophomorix-check` prüfen."),
    "emphasis-strong-kept": ("*kann* und **muss**", "*kann* und **muss**"),
    "links": ("`Forum <https://ask.example.org>`_ und `<https://a.example.org>`_",
              "[Forum](https://ask.example.org) und <https://a.example.org>"),
    "download": (":download:`Übersicht als PDF <media/a.pdf>`", "Übersicht als PDF"),
    "substitutions": ("OPNsense |reg| und |zb| Linux |LTS|.", "OPNsense® und z. B. Linux 24.04."),
    "unknown-substitution-stays": ("a |fehlt| b", "a |fehlt| b"),
    "escapes": ("``a``\\ s und \\*kein\\*", "`a`s und *kein*"),
}
SUBST = (".. Kommentar\n\n   .. include:: /subst.txt\n\n"
         ".. |reg| unicode:: U+00AE .. Marke\n   :ltrim:\n\n"
         ".. |zB| unicode:: z. U+00A0 B. .. zum Beispiel\n\n.. |LTS| replace:: 24.04\n")
OTHER_PAGES = {"quota.rst": ".. _quota-label:\n\nQuota setzen\n============\n\nText\n",
               "netz/vpn.rst": "VPN einrichten\n**************\n\nText\n", "subst.txt": SUBST}


@pytest.mark.parametrize("text, expected", INLINE.values(), ids=INLINE.keys())
def test_inline_markup_becomes_text(tmp_path, text, expected):
    page = f".. include:: /subst.txt\n\n{text}\n"
    assert markdown(tmp_path, page, OTHER_PAGES) == expected + "\n"


def test_toctree_is_the_list_of_children(tmp_path):
    page = ("Handbuch\n========\n\n.. toctree::\n   :maxdepth: 2\n   :caption: Netz\n"
            "   :hidden:\n\n   netz/vpn\n   Kontingente <quota>\n   fehlt/index\n   self\n")
    assert markdown(tmp_path, page, OTHER_PAGES, rel="index.rst") == (
        "# Handbuch\n\nNetz:\n- VPN einrichten\n- Kontingente\n- index\n")
    nested = "Netz\n====\n\n.. toctree::\n   :glob:\n\n   *\n"
    out = markdown(tmp_path, nested, OTHER_PAGES, rel="netz/index.rst")
    assert out == "# Netz\n\n- VPN einrichten\n"


def test_include_outside_the_wiki_is_refused_with_a_problem(tmp_path):
    (tmp_path / "geheim.txt").write_text("Geheimnis\n", encoding="utf-8")
    wiki = write_wiki(tmp_path / "wiki", {"a.rst": ".. include:: ../geheim.txt\n\nText\n"})
    text = (wiki / "a.rst").read_text(encoding="utf-8")
    out, problems = rst.to_markdown("a.rst", text, rst.Project(wiki, ["a.rst"]))
    assert out == "Text\n"
    assert problems == ["include ../geheim.txt liegt außerhalb des Wikis – übersprungen"]


# -- tables ------------------------------------------------------------------------------------
TABLES = {
    "grid-with-header": ("+------+------+\n| Name | Tel  |\n+======+======+\n| Meier| 4711 |\n"
                         "|      | 4712 |\n+------+------+\n| Ott  | 1    |\n+------+------+\n",
                         "| Name | Tel |\n| --- | --- |\n| Meier | 4711 4712 |\n| Ott | 1 |\n"),
    "grid-span": ("+-----------+\n| Firma     |\n+-----+-----+\n| User| PC  |\n+=====+=====+\n"
                  "| 50  | 50  |\n+-----+-----+\n",
                  "| Firma User | PC |\n| --- | --- |\n| 50 | 50 |\n"),
    "grid-no-header-inline": ("+-----+---------+\n| Url | ``x|y`` |\n| IP  | a  (b)  |\n"
                              "+-----+---------+\n", "| Url IP | `x\\|y` a (b) |\n"),
    "simple-with-header": ("=====  =====\nA      B\n=====  =====\n1      2\n3      4\n"
                           "=====  =====\n",
                           "| A | B |\n| --- | --- |\n| 1 | 2 |\n| 3 | 4 |\n"),
    "simple-continuation": ("=====  =========\nRAM    4 GB\nNIC    - zwei\n       - drei\n"
                            "=====  =========\n", "| RAM | 4 GB |\n| NIC | - zwei - drei |\n"),
    "simple-span": ("=====  ====  ====\n\\      Platte\n-----  ----------\nTyp    Std   Max\n"
                    "=====  ====  ====\nklein  1     2\n=====  ====  ====\n",
                    "| Typ | Platte Std | Max |\n| --- | --- | --- |\n| klein | 1 | 2 |\n"),
}


@pytest.mark.parametrize("text, expected", TABLES.values(), ids=TABLES.keys())
def test_tables_become_pipe_tables(tmp_path, text, expected):
    assert markdown(tmp_path, text) == expected


# -- build_index.py on .rst pages --------------------------------------------------------------
def chunk_rows(db):
    with sqlite3.connect(db) as conn:
        query = "SELECT path, heading, content FROM docs ORDER BY path, chunk_index"
        return conn.execute(query).fetchall()


def test_build_index_reads_rst_pages_and_rechunks_when_a_title_changes(tmp_path, fake_embedding):
    wiki = write_wiki(tmp_path / "wiki", {"index.rst": "Start\n=====\n\n.. toctree::\n\n   vpn\n",
                                          "vpn.rst": "VPN\n===\n\nClient starten.\n"})
    assert run_script("build_index.py", "--wiki", wiki, env=fake_embedding).returncode == 0
    assert chunk_rows(fake_embedding["RAG_DB"]) == [("index.rst", "Start", "- VPN"),
                                                    ("vpn.rst", "VPN", "Client starten.")]
    (wiki / "vpn.rst").write_text("VPN-Zugang\n==========\n\nClient starten.\n", encoding="utf-8")
    result = run_script("build_index.py", "--wiki", wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    assert chunk_rows(fake_embedding["RAG_DB"]) == [("index.rst", "Start", "- VPN-Zugang"),
                                                    ("vpn.rst", "VPN-Zugang", "Client starten.")]


LEFTOVER = re.compile(r"^\s*\.\.(?: |$)|\.\. [\w:-]+::|:ref:|::\s*$|:alt:|:[a-z]+:`"
                      r"|^\s*:[\w-]+:(?: |$)", re.M)  # directives, roles, options, "::" at the end
FENCED = re.compile(r"^\s*(```|~~~).*?^\s*\1\s*$", re.M | re.S)


def test_no_directive_syntax_reaches_a_chunk_of_the_linuxmuster_handbook(tmp_path, fake_embedding):
    if not CORPUS.is_dir():
        pytest.skip(f"Korpus fehlt: {CORPUS} (liegt neben dem Repository, nicht darin)")
    result = run_script("build_index.py", "--wiki", CORPUS, env=fake_embedding, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = [row for row in chunk_rows(fake_embedding["RAG_DB"]) if rst.is_rst(row[0])]
    assert len({path for path, _, _ in rows}) == 95 and len(rows) > 800
    found = [(path, m.group(0)) for path, heading, content in rows
             for m in LEFTOVER.finditer(heading + "\n" + FENCED.sub("", content))]
    assert found == []
    titled = {path for path, heading, _ in rows if heading}
    assert len(titled) == 95  # every page has its title as a heading path
