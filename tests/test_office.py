"""Scans and office files (issue 32): OCR, OpenDocument, Excel, PowerPoint and e-mail, reader by reader, then build_index.py.

The documents are written here by scripts/make_office_pages.py (zips and messages in the spellings
the office programs use; scans rendered from text by pdftoppm, so their truth is known), and once more
by LibreOffice from flat OpenDocument and HTML (soffice: skipped locally when missing, a failure in CI). A fake
tesseract (a Python script printing tesseract's TSV) tests the OCR paths without tesseract; the real
OCR tests need tesseract with its German model and pdftoppm: skipped locally when missing, a failure
in CI (CI=true), like the `real` fixture.
"""
import importlib.util
import os
import sys

import pytest

from conftest import ROOT, SMALL_WIKI, missing_part, needs_tool, write_wiki
from test_formats import build, ok, rows, warnings
from rag.ingest import formats
from rag.ingest import hidden
from rag.ingest.formats import eml, ocr
from timeouts import REAL

spec = importlib.util.spec_from_file_location("make_office_pages", ROOT / "scripts" / "make_office_pages.py")
office = importlib.util.module_from_spec(spec)
spec.loader.exec_module(office)
sample = office.sample
INSTALL = "apt-get install tesseract-ocr tesseract-ocr-deu"
CANARY = "KANARIENVOGEL"  # text that must never reach the index


@pytest.fixture(scope="session")
def tesseract():
    """The real tesseract with the German model, and pdftoppm: skipped locally when missing, a failure in CI."""
    needs_tool("pdftoppm")  # renders the scans of the test set
    path = needs_tool("tesseract")
    if not ocr.has_german(path):
        missing_part(f"tesseract's German model missing – install with: {INSTALL}")
    return path


FAKE_TESSERACT = '''#!{python}
import sys
if sys.argv[1:] == ["--list-langs"]:
    print('List of available languages in "/x/" (2):\\neng\\ndeu'); sys.exit(0)
assert sys.argv[1:] == ["stdin", "stdout", "-l", "deu", "tsv"], sys.argv
data = sys.stdin.buffer.read()
if data.startswith(b"kaputt"):
    sys.stderr.write("Error in pixReadStream: Unknown format: no pix returned\\n"); sys.exit(1)
conf = "30" if data.startswith(b"blass") else "91"
head = "level\\tpage_num\\tblock_num\\tpar_num\\tline_num\\tword_num\\tleft\\ttop\\twidth\\theight\\tconf\\ttext"
rows = [(1, 1, 1, 1, "Kantine"), (1, 1, 1, 2, "geschlossen."), (1, 2, 1, 1, "Bistro")] if b"leer" not in data else []
print(head)
print("4\\t1\\t1\\t1\\t1\\t0\\t0\\t0\\t9\\t9\\t-1\\t")
for block, par, line, word, text in rows:
    print(f"5\\t1\\t{{block}}\\t{{par}}\\t{{line}}\\t{{word}}\\t0\\t0\\t9\\t9\\t{{conf}}\\t{{text}}")
'''


@pytest.fixture
def fake_tesseract(tmp_path, monkeypatch):
    path = tmp_path / "fake-tesseract"
    path.write_text(FAKE_TESSERACT.format(python=sys.executable), encoding="utf-8")
    path.chmod(0o755)
    monkeypatch.setenv("RAG_TESSERACT", str(path))
    return str(path)


# -- OCR with a fake tesseract ---------------------------------------------------------------------
def test_tsv_gives_lines_paragraphs_and_the_mean_word_confidence():
    tsv = ("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
           "5\t1\t1\t1\t1\t1\t0\t0\t1\t1\t90\tDer\n5\t1\t1\t1\t1\t2\t0\t0\t1\t1\t96\tVertrag\n"
           "5\t1\t1\t1\t2\t1\t0\t0\t1\t1\t-1\t \n5\t1\t1\t2\t1\t1\t0\t0\t1\t1\t93\t#Ende\n5\t1\t1\t2\t2\t1\t0\t0\t1\t1\t93\t# 3\n")
    assert ocr.read_tsv(tsv) == ("Der Vertrag\n\n#Ende\n\\# 3", 93.0)
    assert ocr.read_tsv(tsv.split("\n")[0]) == ("", None)


def test_image_is_read_with_its_confidence_in_the_heading(fake_tesseract):
    notes = formats.Notes()
    text = formats.to_markdown("aushang/Kantine.PNG", b"\x89PNG bild", notes=notes)
    assert text == "# Kantine.PNG\n\n## Bild · OCR 91 %\n\nKantine geschlossen.\n\nBistro\n"
    assert notes.ocr == {1: 91.0} and notes.low_confidence == []


@pytest.mark.parametrize("data, expected", [(b"kaputt", "Bild nicht lesbar (tesseract: Error in pixReadStream"),
                                            (b"leer", "kein Text im Bild erkannt"), (b"", "leeres Bild")])
def test_image_failures_name_the_reason(fake_tesseract, data, expected):
    with pytest.raises(formats.FormatError, match=expected.replace("(", r"\(")):
        formats.to_markdown("a.jpg", data)


def test_low_confidence_is_noted(fake_tesseract):
    notes = formats.Notes()
    assert "## Bild · OCR 30 %" in formats.to_markdown("a.tif", b"blass", notes=notes)
    assert notes.low_confidence == [1]


def test_build_names_low_confidence_and_unreadable_images_once_each(tmp_path, fake_embedding, fake_tesseract):
    wiki = write_wiki(tmp_path / "wiki", SMALL_WIKI)
    (wiki / "blass.jpg").write_bytes(b"blass")
    (wiki / "kaputt.png").write_bytes(b"kaputt")
    (wiki / "aushang.png").write_bytes(b"\x89PNG gut")
    result = ok(build(wiki, fake_embedding, RAG_TESSERACT=fake_tesseract))
    assert warnings(result) == [
        "Warnung: blass.jpg: per OCR mit geringer Sicherheit gelesen: Seite 1 (30 %) – indexiert; Scan prüfen oder "
        "besser scannen (300 dpi)",
        "Warnung: kaputt.png: Bild nicht lesbar (tesseract: Error in pixReadStream: Unknown format: no pix returned) – "
        "Datei neu speichern – übersprungen"]
    found = rows(fake_embedding["RAG_DB"])
    assert ("aushang.png", "aushang.png › Bild · OCR 91 %", "Kantine geschlossen.\n\nBistro") in found
    assert "blass.jpg" in {p for p, _, _ in found} and "kaputt.png" not in {p for p, _, _ in found}


def test_missing_tesseract_names_the_install_command_and_changes_the_version(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_TESSERACT", str(tmp_path / "gibt-es-nicht"))
    with pytest.raises(formats.ToolMissing, match=INSTALL):
        formats.to_markdown("a.png", b"\x89PNG")
    assert formats.version("a/Scan.PDF") == f"{formats.CONVERTER}, ohne OCR"  # read again once tesseract is there
    assert formats.version("a.docx") == formats.CONVERTER


def test_pages_are_read_in_parallel_up_to_the_cores():
    assert ocr.workers(1) == 1
    assert ocr.workers(1000) == (os.cpu_count() or 1)


# -- Excel -----------------------------------------------------------------------------------------
PHONE = [["Name", "Durchwahl", "Raum", "Summe"], ["Meier, Anna", 4711, "B2.17", ("=B2*2", 9422)],
         ["Schulz", 3.5, "", ("=A3", "Schulz")]]


def test_xlsx_rows_are_units_with_their_headers_and_formulas_give_cached_values():
    text = formats.to_markdown("telefon.xlsx", office.xlsx_bytes([{"name": "Telefonliste", "rows": PHONE}]))
    assert text == ("# telefon.xlsx\n\n## Telefonliste\n\nSpalten: Name | Durchwahl | Raum | Summe\n\n### Zeile 2\n\n"
                    "Name: Meier, Anna | Durchwahl: 4711 | Raum: B2.17 | Summe: 9422\n\n### Zeile 3\n\n"
                    "Name: Schulz | Durchwahl: 3,5 | Summe: Schulz\n")


@pytest.mark.parametrize("flag, state", [("1", "hidden"), ("true", "veryHidden"), ("True", "hidden")])
def test_xlsx_hidden_sheets_rows_and_columns_are_dropped_and_counted(flag, state):
    rows_ = [["Name", "Durchwahl", "Geheim"], ["Meier", 4711, CANARY], [CANARY, 1, ""], ["Schulz", 4712, ""]]
    data = office.xlsx_bytes([{"name": "Telefon", "rows": rows_, "hidden_rows": [3], "hidden_cols": [3], "flag": flag},
                              {"name": "Intern", "rows": [[CANARY]], "state": state}])
    notes = formats.Notes()
    text = formats.to_markdown("t.xlsx", data, notes=notes)
    assert CANARY not in text and "Intern" not in text and "Geheim" not in text
    assert "### Zeile 4\n\nName: Schulz | Durchwahl: 4712" in text
    assert notes.hidden == {hidden.SHEET: 1, hidden.ROW: 1, hidden.COLUMN: 1}


def test_xlsx_reads_inline_strings_booleans_errors_and_dates():
    sheet = (f'<worksheet xmlns="{office.NS_S}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>Tag</t></is></c>'
             '<c r="B1" t="inlineStr"><is><t>Offen</t></is></c><c r="C1" t="inlineStr"><is><t>Quote</t></is></c></row>'
             '<row r="2"><c r="A2" s="1"><v>45292</v></c><c r="B2" t="b"><v>1</v></c><c r="C2" t="e"><f>1/0</f>'
             '<v>#DIV/0!</v></c></row></sheetData></worksheet>')
    styles = (f'<styleSheet xmlns="{office.NS_S}"><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="14"/></cellXfs>'
              '</styleSheet>')
    data = office.xlsx_bytes([{"name": "Plan", "rows": []}], parts={"xl/worksheets/sheet1.xml": sheet,
                                                                   "xl/styles.xml": styles})
    assert "Tag: 01.01.2024 | Offen: WAHR | Quote: #DIV/0!" in formats.to_markdown("p.xlsx", data)


# -- PowerPoint ------------------------------------------------------------------------------------
def test_pptx_slides_with_titles_notes_and_a_hidden_slide():
    data = office.pptx_bytes([
        {"title": "Willkommen", "lines": ["Ablauf des Tages", "# 3 Pausen"], "notes": ["Pause um 10 Uhr ansagen"]},
        {"title": "Intern", "lines": [CANARY], "notes": [CANARY + " Notiz"], "hidden": True},
        {"title": "Ende", "lines": ["Fragen?"]}])
    notes = formats.Notes()
    text = formats.to_markdown("kurs/schulung.pptx", data, notes=notes)
    assert text == ("# schulung.pptx\n\n## Folie 1: Willkommen\n\nAblauf des Tages\n\\# 3 Pausen\n\n"
                    "Notizen: Pause um 10 Uhr ansagen\n\n## Folie 3: Ende\n\nFragen?\n")
    assert notes.hidden == {hidden.SLIDE: 1}


# -- OpenDocument ----------------------------------------------------------------------------------
ODT_STYLES = ('<style:style style:name="T1" style:family="text"><style:text-properties text:display="none"/>'
              '</style:style><style:style style:name="T2" style:family="text"><style:text-properties '
              'fo:color="#ffffff"/></style:style><text:list-style style:name="L1"><text:list-level-style-number '
              'text:level="1"/></text:list-style>')
ODT_BODY = ('<text:p text:style-name="Title">Notfallplan</text:p><text:h text:outline-level="1">Ablauf</text:h>'
            '<text:list text:style-name="L1"><text:list-item><text:p>Ruhe bewahren</text:p></text:list-item>'
            '<text:list-item><text:p>Leitstelle <text:s text:c="2"/>anrufen</text:p></text:list-item></text:list>'
            f'<text:p>Text <text:span text:style-name="T1">{CANARY}</text:span>sichtbar '
            f'<text:span text:style-name="T2">{CANARY}</text:span></text:p>'
            f'<text:p>Teil<text:hidden-text text:condition="ooow:1" text:string-value="{CANARY}"/></text:p>'
            f'<text:p><text:hidden-paragraph text:condition="ooow:1"/>{CANARY}</text:p>'
            f'<text:section text:name="S" text:display="none"><text:p>{CANARY}</text:p></text:section>'
            '<text:h text:outline-level="2">Räume</text:h><table:table><table:table-row><table:table-cell>'
            '<text:p>Raum</text:p></table:table-cell><table:table-cell><text:p>B2</text:p></table:table-cell>'
            '</table:table-row></table:table>'
            f'<text:p># kein Titel<office:annotation><text:p>{CANARY}</text:p></office:annotation></text:p>')


def test_odt_headings_lists_tables_and_hidden_text():
    notes = formats.Notes()
    text = formats.to_markdown("plan.odt", office.odf_bytes(".odt", ODT_BODY, ODT_STYLES), notes=notes)
    assert text == ("# Notfallplan\n\n## Ablauf\n\n1. Ruhe bewahren\n2. Leitstelle anrufen\n\nText sichtbar\n\nTeil\n\n"
                    "### Räume\n\nRaum | B2\n\n\\# kein Titel\n")
    assert notes.hidden == {hidden.OFFICE: 4, hidden.WHITE: 1}


def test_ods_sheets_with_repeats_and_hidden_parts():
    body = ('<table:table table:name="Telefon"><table:table-column/><table:table-column table:visibility="collapse"/>'
            '<table:table-column/><table:table-row><table:table-cell><text:p>Name</text:p></table:table-cell>'
            '<table:table-cell><text:p>Geheim</text:p></table:table-cell><table:table-cell><text:p>Durchwahl'
            '</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell><text:p>Meier</text:p>'
            f'</table:table-cell><table:table-cell><text:p>{CANARY}</text:p></table:table-cell><table:table-cell>'
            '<text:p>4711</text:p></table:table-cell><table:table-cell table:number-columns-repeated="16000"/>'
            f'</table:table-row><table:table-row table:visibility="filter"><table:table-cell><text:p>{CANARY}</text:p>'
            '</table:table-cell></table:table-row><table:table-row table:number-rows-repeated="1048000">'
            '<table:table-cell table:number-columns-repeated="1024"/></table:table-row><table:table-row>'
            '<table:table-cell><text:p>Schulz</text:p></table:table-cell></table:table-row></table:table>'
            f'<table:table table:name="Intern" table:style-name="ta2"><table:table-row><table:table-cell><text:p>{CANARY}'
            '</text:p></table:table-cell></table:table-row></table:table>')
    styles = '<style:style style:name="ta2" style:family="table"><style:table-properties table:display="false"/></style:style>'
    notes = formats.Notes()
    text = formats.to_markdown("t.ods", office.odf_bytes(".ods", body, styles), notes=notes)
    assert text == ("# t.ods\n\n## Telefon\n\nSpalten: Name | Durchwahl\n\n### Zeile 2\n\nName: Meier | Durchwahl: 4711"
                    "\n\n### Zeile 1048004\n\nName: Schulz\n")
    assert notes.hidden == {hidden.SHEET: 1, hidden.ROW: 1, hidden.COLUMN: 1}


def test_odp_slides_notes_and_a_hidden_slide():
    body = ('<draw:page draw:name="p1"><draw:frame presentation:class="title"><draw:text-box><text:p>Willkommen'
            '</text:p></draw:text-box></draw:frame><draw:frame presentation:class="outline"><draw:text-box><text:list>'
            '<text:list-item><text:p>Ablauf</text:p></text:list-item></text:list></draw:text-box></draw:frame>'
            '<presentation:notes><draw:frame presentation:class="notes"><draw:text-box><text:p>Pause um 10</text:p>'
            '</draw:text-box></draw:frame></presentation:notes></draw:page><draw:page draw:name="p2" '
            'draw:style-name="dp2"><draw:frame presentation:class="title"><draw:text-box><text:p>' + CANARY +
            '</text:p></draw:text-box></draw:frame></draw:page>')
    styles = ('<style:style style:name="dp2" style:family="drawing-page"><style:drawing-page-properties '
              'presentation:visibility="hidden"/></style:style>')
    notes = formats.Notes()
    text = formats.to_markdown("k.odp", office.odf_bytes(".odp", body, styles, title="Kurs"), notes=notes)
    assert text == "# Kurs\n\n## Folie 1: Willkommen\n\n- Ablauf\n\nNotizen: Pause um 10\n"
    assert notes.hidden == {hidden.SLIDE: 1}


# -- e-mail ----------------------------------------------------------------------------------------
ANGEBOT = sample.docx_bytes([("berschrift1", "Angebot"), (None, "Preis 4.200 Euro netto."), ("berschrift2", "Lieferung"),
                             (None, "In KW 22.")])


def test_eml_subject_headers_body_and_a_docx_attachment():
    data = office.eml_bytes("Freigabe Budget", "Jens Hollander <j.hollander@nordlicht.example>",
                            "Katrin Focke <k.focke@hansa.example>", "Hallo Katrin,\n\n# freigegeben.\n",
                            attachments=[("angebot.docx", ANGEBOT), ("logo.bmp", b"BM")])
    notes = formats.Notes()
    text = formats.to_markdown("mail/freigabe.eml", data, notes=notes)
    assert text == ("# Freigabe Budget\n\nVon: Jens Hollander <j.hollander@nordlicht.example>\nAn: Katrin Focke "
                    "<k.focke@hansa.example>\nDatum: 06.05.2024 09:15\n\nHallo Katrin,\n\n\\# freigegeben.\n\n"
                    "## Anhang: angebot.docx – Angebot\n\nPreis 4.200 Euro netto.\n\n### Lieferung\n\nIn KW 22.\n")
    assert notes.messages == ["Anhang logo.bmp nicht gelesen (Format hier nicht lesbar)"]


def test_eml_header_names_and_addresses_are_masked_like_all_text():
    from rag.privacy import mask
    data = office.eml_bytes("Freigabe", "Jens Hollander <j.hollander@nordlicht.example>",
                            "Katrin Focke <k.focke@hansa.example>", "Bitte bestellen.")
    text = formats.to_markdown("f.eml", data)
    masked = mask.Masker(active=True).mask_all([text])[0]
    assert "Von: [NAME 1] <[E-MAIL 1]>\nAn: [NAME 2] <[E-MAIL 2]>" in masked
    assert "Hollander" not in masked and "hansa.example" not in masked


def test_eml_html_body_goes_through_the_html_reader_with_its_hidden_text():
    data = office.eml_bytes("Info", "a@b.example", "c@d.example", "", html=f"<h2>Termin</h2><p>Montag</p>"
                            f"<p style='display:none'>{CANARY}</p>")
    data = data.replace(b"Content-Type: text/plain", b"Content-Type: text/x-ignored")  # only the HTML body is left
    notes = formats.Notes()
    text = formats.to_markdown("info.eml", data, notes=notes)
    assert "## Termin\n\nMontag" in text and CANARY not in text and notes.hidden == {hidden.ELEMENT: 1}


def test_eml_demote_keeps_fences():
    assert eml.demote("# A\n\n```\n# kein Titel\n```\n\n## B\n", "a.html") == \
        "## Anhang: a.html – A\n\n```\n# kein Titel\n```\n\n### B"


# -- damaged files, each kind ----------------------------------------------------------------------
DAMAGED = {  # name: (bytes, reason in the warning)
    "kaputt.xlsx": (b"PK\x03\x04 abgeschnitten", "kein ZIP-Archiv"),
    "ohne-mappe.xlsx": (office.xlsx_bytes([], parts={"xl/workbook.xml": None}), "xl/workbook.xml fehlt"),
    "kaputt.pptx": (office.pptx_bytes([{"title": "A"}], parts={"ppt/slides/slide1.xml": "<p:sld"}), "defekt"),
    "geheim.pptx": (formats.base.OLE_MAGIC + b"\x00" * 512, "verschlüsselt"),
    "kaputt.odt": (office.odf_bytes(".odt", "<text:p>x"), "defekt (content.xml"),
    "geheim.ods": (office.odf_bytes(".ods", "", parts={"META-INF/manifest.xml": "<manifest><encryption-data/>"
                                                                                  "</manifest>"}), "verschlüsselt"),
    "kaputt.odp": (b"kein zip", "kein ZIP-Archiv"),
    "kaputt.eml": (b"\x00\x01binary", "Binärdaten, keine E-Mail"),
    "leer.eml": (b"nur Text ohne Kopf", "keine E-Mail"),
}


@pytest.mark.parametrize("name", DAMAGED)
def test_damaged_file_of_each_kind_names_the_reason(name):
    data, reason = DAMAGED[name]
    with pytest.raises(formats.FormatError, match=reason.replace("(", r"\(")):
        formats.to_markdown(name, data)


# -- build_index.py over every kind ----------------------------------------------------------------
def office_wiki(root):
    """SMALL_WIKI plus one document of each new kind, with canaries in every hidden place, and one damaged file each."""
    wiki = write_wiki(root, SMALL_WIKI)
    (wiki / "office").mkdir()
    files = {
        "telefon.xlsx": office.xlsx_bytes([{"name": "Telefon", "rows": PHONE + [[CANARY, 1]], "hidden_rows": [4]},
                                           {"name": "Intern", "rows": [[CANARY]], "state": "hidden"}]),
        "schulung.pptx": office.pptx_bytes([{"title": "Drucker", "lines": ["Toner wechseln"], "notes": ["Fach 2"]},
                                            {"title": CANARY, "notes": [CANARY], "hidden": True}]),
        "plan.odt": office.odf_bytes(".odt", ODT_BODY, ODT_STYLES),
        "freigabe.eml": office.eml_bytes("Freigabe", "a@b.example", "c@d.example", "Bitte freigeben.",
                                         attachments=[("angebot.docx", ANGEBOT)])}
    for name, data in {**files, **{n: d for n, (d, _) in DAMAGED.items()}}.items():
        (wiki / "office" / name).write_bytes(data)
    return wiki


def test_build_reads_each_kind_drops_the_canaries_and_warns_once_per_damaged_file(tmp_path, fake_embedding):
    wiki = office_wiki(tmp_path / "wiki")
    result = ok(build(wiki, fake_embedding))
    found = rows(fake_embedding["RAG_DB"])
    assert not [r for r in found if CANARY in r[1] + r[2]]
    headings = {h for p, h, _ in found if p.startswith("office/")}
    assert {"telefon.xlsx › Telefon › Zeile 2", "schulung.pptx › Folie 1: Drucker", "Notfallplan › Ablauf",
            "Freigabe › Anhang: angebot.docx – Angebot"} <= headings
    lines = warnings(result)
    for name, (_, reason) in DAMAGED.items():
        assert len([w for w in lines if w.startswith(f"Warnung: office/{name}: ") and reason in w]) == 1, (name, lines)
    assert ("Warnung: office/telefon.xlsx: versteckter Text entfernt (1 ausgeblendete Zeile, 1 ausgeblendetes "
            "Tabellenblatt) – Seite trotzdem indexiert") in lines
    assert "Warnung: office/schulung.pptx: versteckter Text entfernt (1 ausgeblendete Folie) – Seite trotzdem indexiert" \
        in lines
    assert {p for p, _, _ in found} == set(SMALL_WIKI) | {f"office/{n}" for n in
                                                         ("telefon.xlsx", "schulung.pptx", "plan.odt", "freigabe.eml")}


# -- documents written by LibreOffice --------------------------------------------------------------
@pytest.fixture(scope="module")
def soffice_files():
    """The office files of the test set and their .ods/.odp/.docx siblings, converted by LibreOffice (about 25 s).

    soffice missing: skipped locally, a failure in CI (.ci/run installs LibreOffice)."""
    needs_tool("soffice", install=office.SOFFICE_INSTALL)
    targets = [("notfallplan.fodt", ".odt"), ("telefonliste.fods", ".xlsx"), ("stapler.fodp", ".pptx"),
               ("angebot.html", ".docx"), ("telefonliste.fods", ".ods"), ("stapler.fodp", ".odp"),
               ("notfallplan.fodt", ".docx")]
    return office.soffice_convert(office.soffice_sources(), targets)


SOFFICE_HIDDEN = {"notfallplan.odt": {hidden.OFFICE: 2}, "telefonliste.xlsx": {hidden.SHEET: 1, hidden.ROW: 1, hidden.COLUMN: 1},
                  "stapler.pptx": {hidden.SLIDE: 1}, "angebot.docx": {}, "telefonliste.ods":
                  {hidden.SHEET: 1, hidden.ROW: 1, hidden.COLUMN: 1}, "stapler.odp": {hidden.SLIDE: 1},
                  "notfallplan.docx": {hidden.WORD: 1}}  # LibreOffice's own spellings of each hidden flag


TWINS = {"telefonliste.ods": "telefonliste.xlsx", "stapler.odp": "stapler.pptx", "notfallplan.docx": "notfallplan.odt"}


def without_title(text):
    """Markdown below its first line (a sibling format's file name is its title). Example: "# a.ods\n\nx" -> "\nx" """
    return text.split("\n", 1)[1]


@pytest.mark.parametrize("name", SOFFICE_HIDDEN)
def test_soffice_documents_read_as_the_hand_written_ones_without_their_canaries(soffice_files, name):
    """What LibreOffice writes reads to the same Markdown as the hand-written set, every canary dropped and counted.

    Not the hidden section of the .docx: Word has no hidden sections, LibreOffice writes its text visible."""
    notes = formats.Notes()
    text = formats.to_markdown(name, soffice_files[name], notes=notes)
    if name == "notfallplan.docx":
        assert f"{CANARY} Zeichen" not in text and f"\n\n{CANARY} Bereich\n" in text
        text = text.replace(f"\n\n{CANARY} Bereich", "")
    assert CANARY not in text
    assert dict(notes.hidden) == SOFFICE_HIDDEN[name]
    twin = TWINS.get(name, name)
    hand = formats.to_markdown(twin, office.office_files()[twin])
    assert without_title(text) == without_title(hand) and (twin != name or text == hand)


def test_soffice_set_is_indexed_without_a_canary(tmp_path, fake_embedding, soffice_files):
    wiki = write_wiki(tmp_path / "wiki", SMALL_WIKI)
    for name in ("notfallplan.odt", "telefonliste.xlsx", "stapler.pptx"):
        (wiki / name).write_bytes(soffice_files[name])
    (wiki / "freigabe.eml").write_bytes(office.eml_bytes(*office.MAIL, attachments=[("angebot.docx", soffice_files["angebot.docx"])]))
    result = ok(build(wiki, fake_embedding))
    found = rows(fake_embedding["RAG_DB"])
    assert not [r for r in found if CANARY in r[1] + r[2]]
    assert "telefonliste.xlsx › Telefonliste › Zeile 1735" in {h for _, h, _ in found}
    assert "Warnung: telefonliste.xlsx: versteckter Text entfernt (1 ausgeblendete Zeile, 1 ausgeblendete Spalte, " \
           "1 ausgeblendetes Tabellenblatt) – Seite trotzdem indexiert" in warnings(result)


# -- real OCR --------------------------------------------------------------------------------------
def test_real_scanned_contract_is_read_page_by_page_with_97_percent_of_its_characters(tesseract):
    notes = formats.Notes()
    text = formats.to_markdown("vertraege/miete.pdf", office.scan_pdf(office.SCAN_TEXT), notes=notes)
    pages = text.split("\n## ")[1:]
    assert [p.split("\n")[0].split(" · ")[0] for p in pages] == ["Seite 1", "Seite 2"]
    for number, (page, truth) in enumerate(zip(pages, office.SCAN_TEXT), 1):
        read = page.split("\n", 1)[1]
        accuracy = office.char_accuracy("\n".join(truth), read)
        print(f"Seite {number}: Zeichengenauigkeit {accuracy:.4f}, Konfidenz {notes.ocr[number]}")
        assert accuracy >= 0.97, (accuracy, read)
        assert page.startswith(f"Seite {number} · OCR {round(notes.ocr[number])} %")
    assert notes.low_confidence == [] and notes.empty_pages == []


def test_real_mixed_pdf_keeps_its_text_page_and_reads_the_scan(tesseract):
    text_page = ("text", ["Anlage 1: Schlüsselliste", "", "Tor 7 und Tor 8 öffnet der Schlüssel mit der Nummer 4417."])
    notes = formats.Notes()
    text = formats.to_markdown("anlagen.pdf", office.scan_pdf([text_page, office.SCAN_TEXT[1]]), notes=notes)
    assert "## Seite 1\n\nAnlage 1: Schlüsselliste" in text and "Nummer 4417" in text
    assert "## Seite 2 · OCR " in text and "Kündigungsfrist beträgt neun Monate" in text
    assert list(notes.ocr) == [2]


def test_real_notice_photo_is_read(tesseract):
    text = formats.to_markdown("aushang/kantine.png", office.png_bytes(office.NOTICE_TEXT))
    assert text.startswith("# kantine.png\n\n## Bild · OCR ")
    assert "12. bis 16. August geschlossen" in text


def test_real_ocr_runs_only_on_changed_files(tmp_path, fake_embedding, tesseract):
    log = tmp_path / "tesseract.log"
    wrapper = tmp_path / "tesseract-logged"
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {tesseract} \"$@\"\n")
    wrapper.chmod(0o755)
    wiki = write_wiki(tmp_path / "wiki", SMALL_WIKI)
    (wiki / "miete.pdf").write_bytes(office.scan_pdf(office.SCAN_TEXT))
    (wiki / "kantine.png").write_bytes(office.png_bytes(office.NOTICE_TEXT))
    first = ok(build(wiki, fake_embedding, RAG_TESSERACT=str(wrapper)))
    assert warnings(first) == []
    reads = [line for line in log.read_text().splitlines() if line.startswith("stdin")]
    assert len(reads) == 3  # two contract pages, one notice
    headings = {h for p, h, _ in rows(fake_embedding["RAG_DB"]) if p == "miete.pdf"}
    assert any(h.startswith("miete.pdf › Seite 2 · OCR ") for h in headings), headings
    ok(build(wiki, fake_embedding, RAG_TESSERACT=str(wrapper)))
    assert [line for line in log.read_text().splitlines() if line.startswith("stdin")] == reads  # nothing read again


def test_real_build_without_tesseract_warns_once_and_reads_it_later(tmp_path, fake_embedding, tesseract):
    wiki = write_wiki(tmp_path / "wiki", SMALL_WIKI)
    (wiki / "miete.pdf").write_bytes(office.scan_pdf(office.SCAN_TEXT))
    (wiki / "kantine.png").write_bytes(office.png_bytes(office.NOTICE_TEXT))
    missing = ok(build(wiki, fake_embedding, RAG_TESSERACT=str(tmp_path / "kein-tesseract")))
    assert warnings(missing) == [f"Warnung: {ocr.MISSING}",  # once, at kantine.png; not again at miete.pdf
                                 "Warnung: miete.pdf: kein Textlayer – OCR nötig – übersprungen"]
    assert {p for p, _, _ in rows(fake_embedding["RAG_DB"])} == set(SMALL_WIKI)
    later = ok(build(wiki, fake_embedding, RAG_TESSERACT=tesseract))
    assert warnings(later) == []
    assert {"miete.pdf", "kantine.png"} <= {p for p, _, _ in rows(fake_embedding["RAG_DB"])}


# -- real model: each question of eval/questions_office.jsonl finds its page, sheet row or slide ---------
def office_questions():
    import json
    with open(ROOT / "eval" / "questions_office.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def office_index(real, tesseract, tmp_path_factory):
    """The whole test set indexed with the real model (the .xlsx with its 2,000 rows)."""
    from conftest import run_script
    tmp = tmp_path_factory.mktemp("office-real")
    for rel, data in office.test_set().items():
        (tmp / "wiki" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "wiki" / rel).write_bytes(data)
    env = {"LLAMA_EMBEDDING": real["embedding"], "RAG_EMBED_MODEL": real["model"], "RAG_DB": str(tmp / "office.db"),
           "RAG_WIKI": str(tmp / "wiki"), "RAG_AUDIT": str(tmp / "audit.jsonl")}
    built = run_script("build_index.py", "--quiet", env=env, timeout=REAL)
    assert built.returncode == 0, built.stderr
    assert [w for w in built.stderr.splitlines() if w.startswith("Warnung")] == [
        "Warnung: schulung/stapler.pptx: versteckter Text entfernt (1 ausgeblendete Folie) – Seite trotzdem indexiert"]
    return env


def test_real_each_document_finds_its_page_in_the_top_5_for_90_percent_of_its_questions(office_index):
    import json
    from conftest import run_script
    hits = {}
    for item in office_questions():
        expected = item["expected"][0]
        result = run_script("ask_rag.py", "--retrieve-only", "--json", "--top-k", "5", item["question"], env=office_index)
        assert result.returncode == 0, result.stderr
        sources = json.loads(result.stdout)["sources"][:5]
        hit = any(s["path"] == expected["file"] and expected["heading"] in s["heading"] for s in sources)
        hits.setdefault(expected["file"], []).append(hit)
        print(f"{'ok ' if hit else 'NEIN'} {item['question']} -> {[s['heading'] for s in sources[:2]]}")
    assert set(hits) == set(office.test_set())
    for path, found in hits.items():
        assert sum(found) / len(found) >= 0.9, (path, found)
