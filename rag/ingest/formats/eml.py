"""Saved e-mails (.eml) as Markdown, with the standard library's email package.

    eml_to_markdown(eml_bytes, "freigabe.eml", notes, read_attachment, is_document)
    -> "# Freigabe Budget\\n\\nVon: Jens Hollander <j.hollander@…>\\nAn: …
        \\nDatum: 06.05.2024 09:15\\n\\nText …"
       "\\n\\n## Anhang: angebot.docx – Angebot\\n\\n…"

The subject is the H1; sender, recipients (An, Cc) and date follow as lines (personal data in them
is masked at question time like all text, rag/privacy/); then the text body, or the HTML body
through html.py when there is no plain one. Attachments of the formats read here (PDF, Word,
OpenDocument, Excel, PowerPoint, HTML, images, further e-mails up to MAX_DEPTH) become sections of
their own, "## Anhang: name", their headings one level down; one that cannot be read is named in
notes.messages.

Does not handle: signed or encrypted mails (S/MIME, PGP: the readable parts only), .msg files of
Outlook, mbox files with many mails, text in attachments of other kinds (named, not read).
"""
import re

from rag.ingest.formats import html
from rag.ingest.formats.base import FormatError, Notes, join_blocks, protect

MAX_DEPTH = 2  # an e-mail attached to an e-mail attached to an e-mail is not read further
HEADERS = (("from", "Von"), ("to", "An"), ("cc", "Cc"))  # header lines shown under the subject
HEADING = re.compile(r"^(#{1,6})(\s)")
FENCE = re.compile(r"^\s*(```|~~~)")


def demote(markdown, title=None):
    """An attachment's Markdown below the mail: its H1 becomes "## Anhang: title" (title None:
    dropped, for an HTML body), other headings one level down.

    Example: demote("# Angebot\\n\\n## Preis\\n\\nx\\n", "a.docx")
             -> "## Anhang: a.docx – Angebot\\n\\n### Preis\\n\\nx"
    """
    lines, fence, first = [], None, True
    for line in markdown.strip("\n").split("\n"):
        marker = FENCE.match(line)
        if marker and (fence is None or marker.group(1) == fence):
            fence = marker.group(1) if fence is None else None
        elif fence is None and HEADING.match(line):
            if first and line.startswith("# "):
                first, own = False, line[2:].strip()
                if title is not None:
                    lines.append(f"## Anhang: {title}" + (f" – {own}" if own != title else ""))
                continue
            line = "#" + line if not line.startswith("######") else line
        lines.append(line)
    if first and title is not None:
        lines.insert(0, f"## Anhang: {title}\n")
    return "\n".join(lines).strip("\n")


def header_lines(message):
    """The sender, recipient and date lines. Example: From "A <a@x.de>"
    -> ["Von: A <a@x.de>", …]"""
    from email.utils import parsedate_to_datetime
    lines = [f"{label}: {' '.join(str(message[key]).split())}" for key, label in HEADERS
             if message[key]]
    if message["date"]:
        try:
            lines.append(f"Datum: {parsedate_to_datetime(str(message['date'])):%d.%m.%Y %H:%M}")
        except (TypeError, ValueError):
            lines.append(f"Datum: {' '.join(str(message['date']).split())}")
    return [protect(line) for line in lines]


def body_blocks(message, notes):
    """The mail's text: the plain body as paragraphs, else the HTML body through html.py (without
    its H1)."""
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        return []
    try:
        content = body.get_content()
    except (LookupError, UnicodeError, AssertionError):
        content = (body.get_payload(decode=True) or b"").decode("utf-8", "replace")
    if body.get_content_subtype() == "html":
        markdown = html.html_to_markdown(content.encode("utf-8"), "", notes)
        return [demote(markdown)]
    text = content.replace("\r\n", "\n").replace("\r", "\n")
    return ["\n".join(protect(line.rstrip()) for line in text.split("\n")).strip("\n")]


def attachment_blocks(message, notes, convert, is_document, depth):
    """One section per attachment of a readable kind; the others and the broken ones named in
    notes.messages."""
    blocks = []
    for part in message.iter_attachments():
        name = (part.get_filename() or "").replace("/", "_").strip() or "Anhang"
        if not is_document(name) or (name.lower().endswith(".eml") and depth >= MAX_DEPTH):
            notes.messages.append(f"Anhang {name} nicht gelesen (Format hier nicht lesbar)")
            continue
        inner = Notes()
        try:
            markdown = convert(name, part.get_payload(decode=True) or b"", inner, depth + 1)
        except FormatError as exc:
            notes.messages.append(f"Anhang {name}: {exc}")
            continue
        notes.hidden.update(inner.hidden)
        notes.messages.extend(f"Anhang {name}: {m}" for m in inner.messages)
        notes.ocr_missing = notes.ocr_missing or inner.ocr_missing
        if inner.empty_pages:
            notes.messages.append(f"Anhang {name}: Seiten {', '.join(map(str, inner.empty_pages))} "
                                  "ohne Text")
        if inner.low_confidence:
            notes.messages.append(f"Anhang {name}: Seiten "
                                  f"{', '.join(map(str, inner.low_confidence))} per OCR mit "
                                  "geringer Sicherheit gelesen")
        blocks.append(demote(markdown, name))
    return blocks


def eml_to_markdown(data, title, notes, convert, is_document, depth=0):
    """E-mail bytes -> Markdown; convert(name, bytes, notes, depth) reads an attachment
    (formats.to_markdown).

    FormatError for data that is no e-mail (no header of one, no body).
    """
    from email import policy
    from email.parser import BytesParser
    if b"\x00" in data[:4096]:
        raise FormatError("Binärdaten, keine E-Mail – als .eml speichern")
    message = BytesParser(policy=policy.default).parsebytes(data)
    if not any(message[key] for key in ("from", "to", "subject", "date", "message-id")):
        raise FormatError("keine E-Mail (keine Kopfzeilen wie From, To, Subject) – als .eml "
                          "speichern")
    subject = " ".join(str(message["subject"] or "").split()) or title
    blocks = [f"# {subject}", "\n".join(header_lines(message))]
    blocks += body_blocks(message, notes)
    blocks += attachment_blocks(message, notes, convert, is_document, depth)
    return join_blocks(blocks)
