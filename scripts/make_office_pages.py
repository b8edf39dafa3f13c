#!/usr/bin/env python3
"""Write a test set of office documents and scans whose text is known (stdlib + poppler's pdftoppm).

    python3 scripts/make_office_pages.py OUT             # -> OUT/vertraege/mietvertrag-scan.pdf, OUT/aushang.png, …
    python3 scripts/make_office_pages.py --soffice OUT   # the office files written by LibreOffice instead

The scans are rendered from text PDFs (scripts/make_sample_pages.py) by pdftoppm and wrapped back into a
PDF as greyscale images without a text layer, so the truth of an OCR run is the text they were made from
(SCAN_TEXT). The .xlsx, .pptx, .odt and .eml files are small zips and messages written here, in the
spellings Excel, PowerPoint, LibreOffice and mail programs use. The tests reuse the functions.

With --soffice, LibreOffice writes the .odt, .xlsx, .pptx and the mail's .docx: the same content as
flat OpenDocument (.fodt, .fods, .fodp) or HTML, converted by `soffice --headless --convert-to`, with
hidden canaries (a hidden sheet, row, column, slide with notes, hidden character style and section)
that must never reach the index. LibreOffice 7.4 does not keep the conditional fields
"versteckter Text"/"versteckter Absatz" of a flat file (their text becomes visible), and a .docx has
no hidden sections (the section's text becomes visible), so those canaries are left out.

Does not handle: real photographs (the notice is a clean rendering), compression other than zlib,
documents saved by Microsoft Office.
"""
import argparse
import email.message
import io
import os
import shutil
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_sample_pages as sample  # noqa: E402  (the text PDF writer)
from office_scan import char_accuracy, png_bytes, scan_pdf  # noqa: E402,F401  (the scans)
from office_soffice import SOFFICE_INSTALL, soffice_convert  # noqa: E402,F401  (LibreOffice)

ZIP_DATE = (2024, 5, 2, 8, 0, 0)  # fixed, so the bytes never change
CANARY = "KANARIENVOGEL"  # hidden text of the --soffice set that must never reach the index
NS_S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
NS_R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
NS_PR = "http://schemas.openxmlformats.org/package/2006/relationships"
NS_P = "http://schemas.openxmlformats.org/presentationml/2006/main"
NS_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
ODF_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
          'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
          'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
          'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
          'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
          'xmlns:dc="http://purl.org/dc/elements/1.1/"')
SCAN_TEXT = [  # the scanned two-page contract: one list of lines per page
    ["Mietvertrag Lagerfläche Halle 3", "", "Zwischen der Nordlicht Logistik GmbH und der Hafenlager",
     "Verwaltung KG wird folgender Mietvertrag geschlossen.", "", "Die Mietfläche beträgt 840 Quadratmeter",
     "in Halle 3, Tor 7. Die Kaltmiete beträgt 5.460 Euro im Monat.", "Die Kaution beträgt drei Monatsmieten."],
    ["Laufzeit und Kündigung", "", "Der Mietvertrag beginnt am 1. März 2024 und läuft fünf Jahre.",
     "Die Kündigungsfrist beträgt neun Monate zum Quartalsende.", "Schlüssel für Tor 7 gibt die Hausverwaltung",
     "nur gegen Unterschrift aus. Ansprechpartner ist Herr Brömmel."]]
NOTICE_TEXT = ["Aushang Kantine", "", "Wegen Umbau bleibt die Kantine vom", "12. bis 16. August geschlossen.",
               "Essensmarken gelten in dieser Zeit", "im Bistro am Empfang."]


def zip_bytes(files):
    """A zip of {name: text or bytes}, stored in the given order with a fixed date (mimetype first for ODF)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in files.items():
            if content is None:
                continue
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(info, content.encode("utf-8") if isinstance(content, str) else content)
    return out.getvalue()


def xml_text(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


# -- Excel -----------------------------------------------------------------------------------------
def xlsx_cell(ref, value, strings):
    """One <c>: str -> shared string, ("=F", cached) -> formula with its cached value, number -> <v>."""
    if isinstance(value, tuple):
        formula, cached = value
        kind = ' t="str"' if isinstance(cached, str) else ""
        return f'<c r="{ref}"{kind}><f>{xml_text(formula.lstrip("="))}</f><v>{xml_text(cached)}</v></c>'
    if isinstance(value, str):
        strings.setdefault(value, len(strings))
        return f'<c r="{ref}" t="s"><v>{strings[value]}</v></c>'
    return f'<c r="{ref}"><v>{value}</v></c>'


def xlsx_sheet(rows, strings, hidden_rows=(), hidden_cols=(), flag="1"):
    """A worksheet's XML: rows of values, rows (1-based) and columns (1-based) marked hidden with `flag`."""
    cols = "".join(f'<col min="{c}" max="{c}" hidden="{flag}" width="0"/>' for c in hidden_cols)
    body = []
    for number, row in enumerate(rows, 1):
        cells = "".join(xlsx_cell(f"{chr(65 + i)}{number}", v, strings) for i, v in enumerate(row) if v != "")
        attr = f' hidden="{flag}"' if number in hidden_rows else ""
        body.append(f'<row r="{number}"{attr}>{cells}</row>')
    return (f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{NS_S}">'
            + (f"<cols>{cols}</cols>" if cols else "") + f'<sheetData>{"".join(body)}</sheetData></worksheet>')


def xlsx_bytes(sheets, parts=None):
    """A minimal .xlsx: sheets are dicts name, rows, and optionally state, hidden_rows, hidden_cols, flag.

    Example: xlsx_bytes([{"name": "Telefon", "rows": [["Name", "Durchwahl"], ["Meier", 4711]]}]) -> b"PK…"
    """
    strings, files, entries, rels = {}, {}, [], []
    for number, sheet in enumerate(sheets, 1):
        files[f"xl/worksheets/sheet{number}.xml"] = xlsx_sheet(
            sheet["rows"], strings, sheet.get("hidden_rows", ()), sheet.get("hidden_cols", ()), sheet.get("flag", "1"))
        state = f' state="{sheet["state"]}"' if sheet.get("state") else ""
        entries.append(f'<sheet name="{xml_text(sheet["name"])}" sheetId="{number}"{state} r:id="rId{number}"/>')
        rels.append(f'<Relationship Id="rId{number}" Type="{NS_R}/worksheet" Target="worksheets/sheet{number}.xml"/>')
    shared = "".join(f"<si><t>{xml_text(s)}</t></si>" for s in strings)
    files = {"xl/workbook.xml": f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{NS_S}" '
             f'xmlns:r="{NS_R}"><sheets>{"".join(entries)}</sheets></workbook>',
             "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{NS_PR}">{"".join(rels)}</Relationships>',
             "xl/sharedStrings.xml": f'<sst xmlns="{NS_S}" count="{len(strings)}">{shared}</sst>', **files}
    return zip_bytes({**files, **(parts or {})})


# -- PowerPoint ------------------------------------------------------------------------------------
def pptx_shape(kind, lines):
    """A text shape: kind "title" or "body" placeholder, one <a:p> per line."""
    paragraphs = "".join(f"<a:p><a:r><a:t>{xml_text(line)}</a:t></a:r></a:p>" for line in lines)
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="1" name="{kind}"/><p:cNvSpPr/><p:nvPr><p:ph type="{kind}"/></p:nvPr>'
            f"</p:nvSpPr><p:txBody><a:bodyPr/>{paragraphs}</p:txBody></p:sp>")


def pptx_bytes(slides, parts=None):
    """A minimal .pptx: slides are dicts title, lines, and optionally notes (lines) and hidden (True).

    Example: pptx_bytes([{"title": "Start", "lines": ["Willkommen"], "notes": ["Kurz halten"]}]) -> b"PK…"
    """
    files, ids, rels = {}, [], []
    for n, slide in enumerate(slides, 1):
        show = ' show="0"' if slide.get("hidden") else ""
        shapes = pptx_shape("title", [slide["title"]]) + pptx_shape("body", slide.get("lines", []))
        files[f"ppt/slides/slide{n}.xml"] = (f'<p:sld xmlns:p="{NS_P}" xmlns:a="{NS_A}" xmlns:r="{NS_R}"{show}>'
                                             f"<p:cSld><p:spTree>{shapes}</p:spTree></p:cSld></p:sld>")
        if slide.get("notes"):
            files[f"ppt/slides/_rels/slide{n}.xml.rels"] = (
                f'<Relationships xmlns="{NS_PR}"><Relationship Id="rId2" Type="{NS_R}/notesSlide" '
                f'Target="../notesSlides/notesSlide{n}.xml"/></Relationships>')
            files[f"ppt/notesSlides/notesSlide{n}.xml"] = (
                f'<p:notes xmlns:p="{NS_P}" xmlns:a="{NS_A}"><p:cSld><p:spTree>{pptx_shape("sldImg", [])}'
                f'{pptx_shape("body", slide["notes"])}</p:spTree></p:cSld></p:notes>')
        ids.append(f'<p:sldId id="{255 + n}" r:id="rId{n}"/>')
        rels.append(f'<Relationship Id="rId{n}" Type="{NS_R}/slide" Target="slides/slide{n}.xml"/>')
    files = {"ppt/presentation.xml": f'<p:presentation xmlns:p="{NS_P}" xmlns:r="{NS_R}"><p:sldIdLst>'
             f'{"".join(ids)}</p:sldIdLst></p:presentation>',
             "ppt/_rels/presentation.xml.rels": f'<Relationships xmlns="{NS_PR}">{"".join(rels)}</Relationships>',
             **files}
    return zip_bytes({**files, **(parts or {})})


# -- OpenDocument ----------------------------------------------------------------------------------
ODF_TYPES = {".odt": ("text", "application/vnd.oasis.opendocument.text"),
             ".ods": ("spreadsheet", "application/vnd.oasis.opendocument.spreadsheet"),
             ".odp": ("presentation", "application/vnd.oasis.opendocument.presentation")}


def odf_bytes(suffix, body, styles="", title=None, parts=None):
    """An OpenDocument zip: mimetype, content.xml with `body` inside office:body/office:<kind>, meta.xml.

    Example: odf_bytes(".odt", '<text:h text:outline-level="1">Notfall</text:h>') -> b"PK…"
    """
    kind, mimetype = ODF_TYPES[suffix]
    meta = f"<office:meta><dc:title>{xml_text(title)}</dc:title></office:meta>" if title else "<office:meta/>"
    files = {"mimetype": mimetype,
             "content.xml": f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODF_NS} '
             f'office:version="1.3"><office:automatic-styles>{styles}</office:automatic-styles>'
             f"<office:body><office:{kind}>{body}</office:{kind}></office:body></office:document-content>",
             "meta.xml": f'<?xml version="1.0" encoding="UTF-8"?><office:document-meta {ODF_NS}>{meta}'
             "</office:document-meta>"}
    return zip_bytes({**files, **(parts or {})})


def flat_odf(suffix, body, styles="", title=None, master=""):
    """The same document as odf_bytes, as one flat XML file (.fodt, .fods, .fodp) for LibreOffice to open.

    Example: flat_odf(".odt", '<text:p>Hallo</text:p>') -> '<?xml …?><office:document … office:mimetype=…'
    """
    kind, mimetype = ODF_TYPES[suffix]
    meta = f"<office:meta><dc:title>{xml_text(title)}</dc:title></office:meta>" if title else ""
    return (f'<?xml version="1.0" encoding="UTF-8"?><office:document {ODF_NS} office:version="1.3" '
            f'office:mimetype="{mimetype}">{meta}<office:automatic-styles>{styles}</office:automatic-styles>{master}'
            f"<office:body><office:{kind}>{body}</office:{kind}></office:body></office:document>")


def fods_table(name, rows, hidden_rows=(), hidden_cols=(), style=None):
    """A <table:table> of rows (1-based hidden_rows and hidden_cols collapsed), numbers as float cells."""
    width = max((len(r) for r in rows), default=0)
    cols = "".join('<table:table-column table:visibility="collapse"/>' if c in hidden_cols else "<table:table-column/>"
                   for c in range(1, width + 1))
    body = []
    for number, row in enumerate(rows, 1):
        cells = "".join(
            f'<table:table-cell office:value-type="float" office:value="{v}"><text:p>{v}</text:p></table:table-cell>'
            if isinstance(v, (int, float)) else
            f'<table:table-cell office:value-type="string"><text:p>{xml_text(v)}</text:p></table:table-cell>'
            if v != "" else "<table:table-cell/>" for v in row)
        attr = ' table:visibility="collapse"' if number in hidden_rows else ""
        body.append(f"<table:table-row{attr}>{cells}</table:table-row>")
    attr = f' table:style-name="{style}"' if style else ""
    return f'<table:table table:name="{xml_text(name)}"{attr}>{cols}{"".join(body)}</table:table>'


HIDDEN_SHEET = '<style:style style:name="ta-hidden" style:family="table"><style:table-properties table:display="false"/></style:style>'


def fodp_slides(slides):
    """(styles, master, body) of a .fodp: slides as for pptx_bytes (title, lines, notes, hidden).

    LibreOffice keeps a frame's presentation:class (title, outline, notes) only with a presentation
    style and a master page; without them the title becomes a plain text box.
    """
    styles = ('<style:style style:name="pr1" style:family="presentation"/><style:style style:name="dp-hidden" '
              'style:family="drawing-page"><style:drawing-page-properties presentation:visibility="hidden"/>'
              "</style:style>")
    master = '<office:master-styles><style:master-page style:name="Standard"/></office:master-styles>'

    def frame(kind, lines, y):
        paragraphs = "".join(f"<text:p>{xml_text(line)}</text:p>" for line in lines)
        return (f'<draw:frame presentation:style-name="pr1" draw:layer="layout" svg:width="24cm" svg:height="4cm" '
                f'svg:x="2cm" svg:y="{y}cm" presentation:class="{kind}" presentation:placeholder="false" '
                f'presentation:user-transformed="true"><draw:text-box>{paragraphs}</draw:text-box></draw:frame>')
    pages = []
    for n, slide in enumerate(slides, 1):
        hidden = ' draw:style-name="dp-hidden"' if slide.get("hidden") else ""
        notes = (f'<presentation:notes>{frame("notes", slide["notes"], 14)}</presentation:notes>'
                 if slide.get("notes") else "")
        pages.append(f'<draw:page draw:name="Folie{n}" draw:master-page-name="Standard"{hidden}>'
                     f'{frame("title", [slide["title"]], 1)}{frame("outline", slide.get("lines", []), 6)}{notes}</draw:page>')
    return styles, master, "".join(pages)


# -- LibreOffice -----------------------------------------------------------------------------------
# -- e-mail ----------------------------------------------------------------------------------------
def eml_bytes(subject, sender, to, body, html=None, attachments=()):
    """An RFC 822 message: text body (and an HTML alternative), attachments [(file name, bytes)]."""
    message = email.message.EmailMessage()
    message["Subject"], message["From"], message["To"] = subject, sender, to
    message["Date"] = "Mon, 06 May 2024 09:15:00 +0200"
    message["Message-ID"] = "<test-1@nordlicht.example>"
    message.set_content(body)
    if html:
        message.add_alternative(html, subtype="html")
    for name, data in attachments:
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    if message.is_multipart():
        message.set_boundary("==grenze==")
        for n, part in enumerate(message.iter_parts()):
            if part.is_multipart():
                part.set_boundary(f"==grenze-{n}==")
    return message.as_bytes()


# -- the test set ----------------------------------------------------------------------------------
FIRST = ["Anna", "Bernd", "Carla", "Dieter", "Elif", "Frank", "Greta", "Hakan", "Ines", "Jonas", "Katrin", "Lukas",
         "Mara", "Nils", "Olga", "Paul", "Rita", "Sven", "Tanja", "Uwe"]
LAST = ["Albers", "Brandt", "Claußen", "Dreyer", "Ehlers", "Fuchs", "Grote", "Hinrichs", "Jansen", "Kröger",
        "Lüders", "Meyer", "Nissen", "Ohlsen", "Petersen", "Quast", "Rohde", "Schütt", "Thiele", "Vogt",
        "Wendt", "Ziegler", "Bruns", "Harms", "Lange", "Martens", "Peters", "Stoltenberg", "Timm", "Wulff",
        "Böhm", "Carstens", "Dittmer", "Evers", "Feddersen", "Gerdes", "Heitmann", "Iwersen", "Jürgens",
        "Kähler", "Lorenzen", "Möller", "Nagel", "Otten", "Prüß", "Reimers", "Sievers", "Tiedemann",
        "Voß", "Wiese"]  # 20 x 50 = 1000 names; a second site doubles them to 2000 rows
ROOMS = ["Verwaltung", "Lager", "Werkstatt", "Versand", "Einkauf"]


def phone_rows(count=2000):
    """The phone list: header row, then `count` rows; row N+1 holds person N (deterministic)."""
    rows = [["Name", "Vorname", "Durchwahl", "Raum", "Abteilung", "Standort"]]
    for n in range(count):
        first, last = FIRST[n % len(FIRST)], LAST[(n // len(FIRST)) % len(LAST)]
        site = "Hamburg" if n < len(FIRST) * len(LAST) else "Lüneburg"
        rows.append([last, first, 3000 + n, f"{'AB'[n % 2]}{n % 4 + 1}.{n % 37 + 1:02d}", ROOMS[n % len(ROOMS)], site])
    return rows


HANDBOOK = ('<text:h text:outline-level="1">Notfallplan Serverraum</text:h><text:h text:outline-level="2">'
            'Bei Wassereinbruch</text:h><text:list><text:list-item><text:p>Hauptsicherung S4 im Flur abschalten.'
            '{hidden_span}</text:p></text:list-item><text:list-item><text:p>Haustechnik unter Durchwahl 2290 rufen.'
            '</text:p></text:list-item></text:list>{hidden_section}<text:h text:outline-level="2">Zuständigkeiten'
            '</text:h><table:table>{columns}<table:table-row><table:table-cell><text:p>Klimaanlage</text:p>'
            '</table:table-cell><table:table-cell><text:p>Kältetechnik Reimers, Wartung jeden zweiten Dienstag</text:p>'
            '</table:table-cell></table:table-row><table:table-row><table:table-cell><text:p>USV</text:p>'
            '</table:table-cell><table:table-cell><text:p>Batterietausch alle vier Jahre, zuletzt 2022</text:p>'
            '</table:table-cell></table:table-row></table:table>')
SLIDES = [{"title": "Staplerschein", "lines": ["Unterweisung für Flurförderzeuge"]},
          {"title": "Prüfung", "lines": ["Theorie und Praxis am selben Tag"],
           "notes": ["Die praktische Prüfung dauert 45 Minuten auf dem Hof hinter Halle 2."]},
          {"title": "Alter Termin", "lines": ["Prüfung am 3. Februar"], "hidden": True,
           "notes": ["Dieser Termin entfällt."]}]
OFFER = [("berschrift1", "Angebot Etikettendrucker"),
         (None, "Zwölf Etikettendrucker Zebra ZT411 kosten zusammen 18.960 Euro netto."),
         ("berschrift2", "Lieferung"), (None, "Lieferung in Kalenderwoche 22 frei Haus.")]
MAIL = ("Freigabe Etikettendrucker", "Jens Hollander <j.hollander@nordlicht.example>",
        "Einkauf <einkauf@nordlicht.example>",
        "Hallo,\n\ndas Angebot im Anhang ist freigegeben. Bitte bis Freitag bestellen.\n\nJens Hollander")


def soffice_sources():
    """The office files of the test set as flat OpenDocument and HTML, with hidden canaries, for LibreOffice.

    Each canary sits where LibreOffice keeps the hidden flag in every target format: a character
    style with text:display="none", a hidden section (.odt only), a hidden sheet, row (after the last
    person) and column (a note per row), a hidden slide with notes.
    """
    hidden_span = f'<text:span text:style-name="T-hidden"> {CANARY} Zeichen</text:span>'
    hidden_section = f'<text:section text:name="Alt" text:display="none"><text:p>{CANARY} Bereich</text:p></text:section>'
    text_styles = '<style:style style:name="T-hidden" style:family="text"><style:text-properties text:display="none"/></style:style>'
    phones = [row + (["Notiz"] if n == 0 else [f"{CANARY} Spalte"] if n == 1 else []) for n, row in enumerate(phone_rows())]
    phones.append([f"{CANARY} Zeile", "", 9999])
    sheets = (fods_table("Telefonliste", phones, hidden_rows=[len(phones)], hidden_cols=[7])
              + fods_table("Intern", [[f"{CANARY} Blatt"]], style="ta-hidden"))
    slides = [dict(s) for s in SLIDES]
    slides[2]["lines"], slides[2]["notes"] = slides[2]["lines"] + [f"{CANARY} Folie"], [f"Dieser Termin entfällt. {CANARY} Notiz"]
    styles, master, pages = fodp_slides(slides)
    offer = "".join(f"<h{style[-1]}>{xml_text(text)}</h{style[-1]}>" if style else f"<p>{xml_text(text)}</p>"
                    for style, text in OFFER)
    return {
        "notfallplan.fodt": flat_odf(".odt", HANDBOOK.format(hidden_span=hidden_span, hidden_section=hidden_section,
                                                             columns='<table:table-column table:number-columns-repeated="2"/>'),
                                     text_styles),
        "telefonliste.fods": flat_odf(".ods", sheets, HIDDEN_SHEET),
        "stapler.fodp": flat_odf(".odp", pages, styles, master=master),
        "angebot.html": f'<!DOCTYPE html><html lang="de"><head><meta charset="utf-8"><title>{OFFER[0][1]}</title>'
                        f"</head><body>{offer}</body></html>"}


def office_files(soffice=None):
    """{name: bytes} of the .odt, .xlsx, .pptx and the mail's .docx: written by LibreOffice (soffice: its path)
    from soffice_sources(), or here (None)."""
    if soffice:
        return soffice_convert(soffice_sources(), [("notfallplan.fodt", ".odt"), ("telefonliste.fods", ".xlsx"),
                                                   ("stapler.fodp", ".pptx"), ("angebot.html", ".docx")], soffice)
    return {"notfallplan.odt": odf_bytes(".odt", HANDBOOK.format(hidden_span="", hidden_section="", columns="")),
            "telefonliste.xlsx": xlsx_bytes([{"name": "Telefonliste", "rows": phone_rows()}]),
            "stapler.pptx": pptx_bytes(SLIDES), "angebot.docx": sample.docx_bytes(OFFER)}


def test_set(soffice=None):
    """{path: bytes} of the test set: a scanned contract, a notice photo, a mixed PDF, .odt, .xlsx, .pptx, .eml.

    soffice: the path of LibreOffice's soffice, which then writes the office files (office_files).
    """
    mixed = [("text", ["Anlage 1: Schlüsselliste", "", "Tor 7 und Tor 8 öffnet der Schlüssel Nummer 4417."]),
             ["Hofordnung", "", "Die Hofeinfahrt wird um 22 Uhr verschlossen.", "Lkw warten auf dem Parkplatz Süd."]]
    made = office_files(soffice)
    return {
        "vertraege/mietvertrag-scan.pdf": scan_pdf(SCAN_TEXT),
        "aushang/kantine.png": png_bytes(NOTICE_TEXT),
        "vertraege/anlagen-gemischt.pdf": scan_pdf(mixed),
        "technik/notfallplan.odt": made["notfallplan.odt"],
        "verwaltung/telefonliste.xlsx": made["telefonliste.xlsx"],
        "schulung/stapler.pptx": made["stapler.pptx"],
        "mail/freigabe-etikettendrucker.eml": eml_bytes(*MAIL, attachments=[("angebot.docx", made["angebot.docx"])])}


def main():
    parser = argparse.ArgumentParser(description="Schreibt den Testsatz aus Scans und Office-Dateien in einen Ordner.")
    parser.add_argument("ordner", nargs="?", default="office-wiki", help="Zielordner (Standard: office-wiki)")
    parser.add_argument("--soffice", action="store_true",
                        help="die .odt, .xlsx, .pptx und den .docx-Anhang von LibreOffice schreiben lassen (aus flachem "
                             "OpenDocument und HTML); Programm: soffice aus PATH oder RAG_SOFFICE")
    args = parser.parse_args()
    out = Path(args.ordner)
    program = os.environ.get("RAG_SOFFICE", "soffice")
    soffice = shutil.which(program) if args.soffice else None
    if args.soffice and not soffice:
        raise SystemExit(f"Fehler: {program} nicht gefunden – LibreOffice installieren mit: {SOFFICE_INSTALL}")
    for rel, data in test_set(soffice).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
        print(f"{out / rel}: {len(data)} Bytes")


if __name__ == "__main__":
    main()
