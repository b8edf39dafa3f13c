#!/usr/bin/env python3
"""Write the sample PDF and Word pages of the wiki, byte for byte the same on every run (stdlib only).

    python3 scripts/make_sample_pages.py     # -> wiki/vertraege/wartungsvertrag-handscanner.pdf
                                             #    wiki/server/stromausfall-serverraum.docx

The PDF is the smallest valid kind: Helvetica and Helvetica-Bold with WinAnsiEncoding (so ä, ö,
ü, ß, „“, – and € come out right), one uncompressed content stream per page, an xref table with
exact byte offsets. The .docx is a zip of seven small XML parts (stored, not deflated, so the bytes do not
depend on the zlib version) with the style ids a German Word writes
("Titel", "berschrift1"; their names "Title", "heading 1" live in word/styles.xml) and a numbered
list in word/numbering.xml. The tests reuse pdf_bytes() and docx_bytes() for their own files.

Does not handle: compression, images, fonts other than Helvetica, characters outside Windows-1252,
more than one column, real Word features beyond headings, paragraphs, numbered lists and tables.
"""
import io
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PDF_PATH = ROOT / "wiki" / "vertraege" / "wartungsvertrag-handscanner.pdf"
DOCX_PATH = ROOT / "wiki" / "server" / "stromausfall-serverraum.docx"
FONT_SIZE, HEADING_SIZE, LEADING = 10.5, 12, 15  # points
LEFT, TOP = 60, 780  # first baseline on an A4 page (595 x 842 points)
WRAP = 88  # characters per line at FONT_SIZE in Helvetica, roughly
ZIP_DATE = (2024, 5, 2, 8, 0, 0)  # fixed, so the .docx bytes never change


# -- PDF -------------------------------------------------------------------------------------------
def pdf_string(text):
    """A PDF literal string in WinAnsi. Example: "Größe (neu)" -> b"(Gr\\xf6\\xdfe \\\\(neu\\\\))" """
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def page_stream(lines):
    """Content stream of one page: lines are text (a "## " prefix: bold, larger) or "" (a gap)."""
    out, y = [], TOP
    for line in lines:
        if line:
            bold = line.startswith("## ")
            font, size = ("/F2", HEADING_SIZE) if bold else ("/F1", FONT_SIZE)
            out.append(b"BT %s %g Tf %d %d Td %s Tj ET" % (font.encode(), size, LEFT, y,
                                                             pdf_string(line[3:] if bold else line)))
        y -= LEADING
    return b"\n".join(out)


def pdf_bytes(pages, title=None, encrypt=False):
    """A minimal PDF: pages is a list of line lists (see page_stream); [] draws a page without text.

    encrypt=True adds a standard security handler whose user password is not empty, so a reader
    without the password gets nothing (the tests' "encrypted PDF").
    Example: pdf_bytes([["Seite eins"], ["Seite zwei"]], "Test") -> b"%PDF-1.4 …"
    """
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", None,
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"]
    kids = []
    for lines in pages:
        stream = page_stream(lines) if lines else b"0.8 g 60 500 475 250 re f"  # a grey box: a "scan"
        kids.append(len(objects) + 1)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R "
                       b"/F2 4 0 R >> >> /Contents %d 0 R >>" % (len(objects) + 2))
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    trailer = b""
    if title:
        objects.append(b"<< /Title %s /Producer (scripts/make_sample_pages.py) >>" % pdf_string(title))
        trailer += b" /Info %d 0 R" % len(objects)
    if encrypt:
        objects.append(b"<< /Filter /Standard /V 1 /R 2 /P -44 /O <%s> /U <%s> >>" % (b"4f" * 32, b"55" * 32))
        trailer += b" /Encrypt %d 0 R /ID [<%s> <%s>]" % (len(objects), b"00" * 16, b"00" * 16)
    return pdf_file(objects, trailer)


def pdf_file(objects, trailer=b""):
    """The PDF file of numbered objects (1 is the catalog), with an xref table of exact byte offsets."""
    out, offsets = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer, xref)
    return bytes(out)


def layout(sections, first_lines=()):
    """Sections [(heading, [paragraph, …])] -> lines wrapped to WRAP, a gap between paragraphs."""
    lines = list(first_lines)
    for heading, paragraphs in sections:
        lines += ["", f"## {heading}", ""]
        for paragraph in paragraphs:
            lines += textwrap.wrap(paragraph, WRAP) + [""]
    return lines


CONTRACT_TITLE = "Wartungsvertrag Handscanner (MDE-Geräte) Lager Lüneburg"
CONTRACT = [  # one list of sections per PDF page
    [("§ 1 Vertragsparteien", [
        "Zwischen der Nordlicht Logistik GmbH, Hafenrandstraße 17, 20457 Hamburg (Auftraggeberin), und der "
        "Hansa Scantechnik GmbH, Stephanikirchweide 8, 28217 Bremen (Auftragnehmerin), wird folgender "
        "Wartungsvertrag Nr. WV-2023-044 geschlossen."]),
     ("§ 2 Vertragsgegenstand", [
        "Gegenstand des Vertrags ist die Wartung von 48 Handscannern vom Typ Zebra MC3300 und 6 Ladestationen "
        "mit je 4 Schächten im Lager Lüneburg. Die Seriennummern stehen in Anlage 1. Neu beschaffte Geräte "
        "desselben Typs werden auf Anzeige der Auftraggeberin zum Monatsersten in den Vertrag aufgenommen.",
        "Nicht Gegenstand des Vertrags sind die Lagerverwaltungssoftware, das WLAN NL-Scanner und "
        "Etikettendrucker."])],
    [("§ 3 Leistungen", [
        "Fällt ein Handscanner aus, liefert die Auftragnehmerin ein vorkonfiguriertes Austauschgerät. Geht die "
        "Meldung an einem Werktag bis 12:00 Uhr ein, ist das Austauschgerät am nächsten Werktag bis 10:00 Uhr "
        "im Lager Lüneburg. Das defekte Gerät holt der Kurier dabei ab; repariert wird in der Werkstatt "
        "in Bremen.",
        "Display- und Gehäuseschäden durch Sturz sind bis zu 5 Fällen pro Vertragsjahr abgedeckt. Jeder "
        "weitere Sturzschaden wird mit pauschal 189 Euro netto berechnet.",
        "Einmal im Jahr, im März, tauscht die Auftragnehmerin die Akkus aller Handscanner gegen neue aus. "
        "Zusätzlich hält sie im Lager einen Reservepool von 4 Austauschgeräten bereit; er steht im "
        "abschließbaren Schrank im Büro der Schichtleitung."]),
     ("§ 4 Störungsmeldung", [
        "Störungen meldet die Schichtleitung oder der IT-Helpdesk der Auftraggeberin unter der Hotline "
        "0421 555 3090 (Montag bis Freitag, 7:00 bis 17:00 Uhr) oder jederzeit per E-Mail an "
        "service@hansa-scantechnik.de. Anzugeben sind die Seriennummer und eine kurze Fehlerbeschreibung."])],
    [("§ 5 Vergütung", [
        "Die Wartungspauschale beträgt 14,50 Euro netto je Handscanner und Monat. Sie wird jährlich im Voraus "
        "zum 1. Juli in Rechnung gestellt und ist innerhalb von 30 Tagen zu zahlen."]),
     ("§ 6 Laufzeit und Kündigung", [
        "Der Vertrag beginnt am 1. Juli 2023 und läuft 36 Monate. Er verlängert sich danach um jeweils 12 "
        "Monate, wenn ihn keine Seite mit einer Frist von 6 Monaten zum Ende der Laufzeit kündigt. "
        "Die Kündigung bedarf der Schriftform.",
        "Hamburg und Bremen, den 14. Juni 2023 – Jens Hollander (IT-Leitung, Nordlicht Logistik GmbH) und "
        "Katrin Focke (Geschäftsführerin, Hansa Scantechnik GmbH)"])],
]


# -- DOCX ------------------------------------------------------------------------------------------
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
STYLES = [  # (style id as a German Word writes it, style name, outline level)
    ("Titel", "Title", None), ("berschrift1", "heading 1", 0), ("berschrift2", "heading 2", 1),
    ("Listenabsatz", "List Paragraph", None)]


def xml_text(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def docx_paragraph(style, text):
    """One w:p; style "list" is a numbered list paragraph, None plain body text."""
    ppr = ""
    if style == "list":
        ppr = ('<w:pPr><w:pStyle w:val="Listenabsatz"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>'
               '</w:pPr>')
    elif style:
        ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>'
    return f'<w:p>{ppr}<w:r><w:t xml:space="preserve">{xml_text(text)}</w:t></w:r></w:p>'


def docx_table(rows):
    cells = lambda row: "".join(f"<w:tc>{docx_paragraph(None, c)}</w:tc>" for c in row)  # noqa: E731
    return "<w:tbl>" + "".join(f"<w:tr>{cells(row)}</w:tr>" for row in rows) + "</w:tbl>"


def docx_bytes(items, title=None, parts=None):
    """A minimal .docx: items are (style, text) paragraphs or ("table", rows).

    parts overrides or removes (value None) zip entries, for the tests' broken files.
    Example: docx_bytes([("berschrift1", "Notfall"), (None, "Ruhe bewahren.")]) -> b"PK…"
    """
    body = "".join(docx_table(text) if style == "table" else docx_paragraph(style, text) for style, text in items)
    styles = "".join(
        f'<w:style w:type="paragraph" w:styleId="{sid}"><w:name w:val="{name}"/><w:basedOn w:val="Standard"/>'
        + (f'<w:pPr><w:outlineLvl w:val="{level}"/></w:pPr>' if level is not None else "") + "</w:style>"
        for sid, name, level in STYLES)
    files = {
        "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
        '<Override PartName="/word/styles.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>'
        '<Override PartName="/word/numbering.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/>'
        '<Override PartName="/docProps/core.xml" ContentType="application/'
        'vnd.openxmlformats-package.core-properties+xml"/></Types>',
        "_rels/.rels": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'officeDocument" Target="word/document.xml"/>'
        '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/'
        'core-properties" Target="docProps/core.xml"/></Relationships>',
        "word/_rels/document.xml.rels": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'styles" Target="styles.xml"/>'
        '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        'numbering" Target="numbering.xml"/></Relationships>',
        "word/document.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:document xmlns:w="{W_NS}"><w:body>{body}<w:sectPr/></w:body></w:document>',
        "word/styles.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:styles xmlns:w="{W_NS}"><w:style w:type="paragraph" w:default="1" w:styleId="Standard">'
        f'<w:name w:val="Normal"/></w:style>{styles}</w:styles>',
        "word/numbering.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:numbering xmlns:w="{W_NS}"><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/>'
        f'<w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum>'
        f'<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num></w:numbering>',
        "docProps/core.xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        f'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{xml_text(title or "")}</dc:title>'
        '</cp:coreProperties>',
    }
    files.update(parts or {})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:  # stored, not deflated: the bytes do not depend on the zlib version
        for name, text in files.items():
            if text is not None:
                info = zipfile.ZipInfo(name, ZIP_DATE)
                info.create_system, info.external_attr = 3, 0o644 << 16  # as on Linux, wherever it runs
                archive.writestr(info, text.encode("utf-8"))
    return out.getvalue()


PROCEDURE_TITLE = "Arbeitsanweisung: Stromausfall im Serverraum"
PROCEDURE = [
    ("Titel", PROCEDURE_TITLE),
    (None, "Gültig für die Zentrale in Hamburg, Serverraum U.10. Verantwortlich: Mira Koch; Stand: Mai 2024."),
    ("berschrift1", "Was die USV leistet"),
    (None, "Die unterbrechungsfreie Stromversorgung (USV) im Serverraum überbrückt einen "
           "Stromausfall für etwa 25 Minuten. Sie meldet jeden Wechsel auf Batteriebetrieb per SMS an die "
           "Rufbereitschaft. Ein Notstromaggregat gibt es in der Zentrale nicht."),
    ("berschrift1", "Ablauf bei Stromausfall"),
    ("berschrift2", "Die ersten 10 Minuten"),
    ("list", "Bei der Haustechnik unter Durchwahl 240 nachfragen, ob der Ausfall das ganze Gebäude betrifft."),
    ("list", "Beim Netzbetreiber die voraussichtliche Dauer erfragen; seine Störungsnummer klebt am "
              "Hauptverteiler im Keller."),
    ("list", "Im Ticket-System ein Ticket der Priorität 1 anlegen und die Uhrzeit des Ausfalls eintragen."),
    ("berschrift2", "Geordnet herunterfahren"),
    (None, "Ist der Strom nach 10 Minuten nicht zurück, fährt die Rufbereitschaft die Server in dieser "
           "Reihenfolge herunter, damit die USV für Firewall und Switche reicht:"),
    ("table", [["Reihenfolge", "System", "Hinweis"],
               ["1", "Terminalserver TS01 und TS02", "angemeldete Benutzer vorher per Nachricht warnen"],
               ["2", "ERP-Anwendungsserver", "Dienst über die Verwaltungskonsole beenden"],
               ["3", "Mailserver (Cyrus)", "erst nach dem ERP, weil das ERP Mails verschickt"],
               ["4", "Fileserver und Datenbankserver", "zuletzt, erst wenn alle anderen aus sind"]]),
    (None, "Firewall, Core-Switche und die Telefonanlage bleiben an, solange die USV Strom liefert."),
    ("berschrift1", "Nach dem Stromausfall"),
    (None, "Die Server werden in umgekehrter Reihenfolge gestartet: zuerst Fileserver und Datenbankserver, zum "
           "Schluss die Terminalserver. Danach prüft die IT die Datensicherung der vergangenen Nacht und "
           "dokumentiert den Ausfall mit Dauer und Ursache im Ticket."),
]


def contract_pdf():
    """The sample PDF: CONTRACT, one page per list entry, the title in bold on page 1."""
    return pdf_bytes([layout(page, [f"## {CONTRACT_TITLE}"] if n == 0 else ()) for n, page in enumerate(CONTRACT)],
                     CONTRACT_TITLE)


def procedure_docx():
    """The sample .docx: PROCEDURE."""
    return docx_bytes(PROCEDURE, PROCEDURE_TITLE)


def main():
    PDF_PATH.write_bytes(contract_pdf())
    DOCX_PATH.write_bytes(procedure_docx())
    for path in (PDF_PATH, DOCX_PATH):
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} Bytes")


if __name__ == "__main__":
    main()
