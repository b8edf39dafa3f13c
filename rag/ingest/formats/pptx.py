"""PowerPoint decks (.pptx) as Markdown, with zipfile and xml.etree: one section per slide, notes
included.

    pptx_to_markdown(pptx_bytes, "schulung.pptx")
    -> "# schulung.pptx\\n\\n## Folie 1: Willkommen\\n\\nAblauf des Tages
        \\n\\nNotizen: Pause um 10 Uhr\\n…"

Slides come in the order of ppt/presentation.xml; each becomes "## Folie N: title" (the title or
ctrTitle placeholder; without one, "## Folie N"), its text shapes and table rows below, then the
speaker notes as "Notizen: …". A slide marked show="0" (hidden) is dropped with its notes and
counted in notes.hidden (rag/ingest/hidden.py).

Does not handle: old .ppt files, password-protected files, text in charts, SmartArt and grouped
shapes' order on the slide (document order is kept), slide layouts' and masters' text, comments.
"""
import posixpath

from rag.ingest import hidden
from rag.ingest.formats import base
from rag.ingest.formats.base import FormatError, join_blocks, protect

P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PR = "{http://schemas.openxmlformats.org/package/2006/relationships}"
TITLES = ("title", "ctrTitle")  # placeholder types that hold the slide's title
# placeholders of a notes page that are not the notes
NOTES_SKIP = ("sldImg", "sldNum", "dt", "ftr", "hdr")


def relationships(archive, part):
    """{relationship id: zip path} of a part's .rels file.

    Example: "ppt/slides/slide1.xml" -> {"rId2": "ppt/notesSlides/notesSlide1.xml"}
    """
    folder, name = posixpath.split(part)
    rels = base.read_xml(archive, f"{folder}/_rels/{name}.rels", ".pptx")
    out = {}
    for rel in (rels.iter(PR + "Relationship") if rels is not None else ()):
        target = rel.get("Target") or ""
        out[rel.get("Id")] = target.lstrip("/") if target.startswith("/") else \
            posixpath.normpath(posixpath.join(folder, target))
    return out


def placeholder(shape):
    """The placeholder type of a p:sp ("title", "body", …), "" for a shape that is none."""
    ph = shape.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
    return (ph.get("type") or "body") if ph is not None else ""


def paragraphs(body):
    """The text lines of a text body: one per a:p, runs and fields joined, a:br as a space."""
    lines = []
    for para in body.iter(A + "p"):
        text = "".join((node.text or "") if node.tag == A + "t" else " " for node in para.iter()
                       if node.tag in (A + "t", A + "br"))
        if text.strip():
            lines.append(" ".join(text.split()))
    return lines


def shapes(slide, skip=()):
    """(title or "", [text lines]) of a slide or notes page: text shapes and table rows in document
    order."""
    title, lines = "", []
    for node in slide.iter():
        if node.tag == P + "sp":
            kind, body = placeholder(node), node.find(P + "txBody")
            if body is None or kind in skip:
                continue
            if kind in TITLES and not title:
                title = " ".join(paragraphs(body))
            else:
                lines.extend(paragraphs(body))
        elif node.tag == A + "tr":
            cells = [" ".join(" ".join(paragraphs(cell)).split())
                     for cell in node.findall(A + "tc")]
            if any(cells):
                lines.append(" | ".join(cells))
    return title, lines


def slide_blocks(number, slide, notes):
    """Markdown blocks of one slide: heading, text lines, "Notizen: …" (notes: the parsed notes
    page or None)."""
    title, lines = shapes(slide)
    blocks = [f"## Folie {number}: {title}" if title else f"## Folie {number}",
              "\n".join(protect(line) for line in lines)]
    if notes is not None:
        _, said = shapes(notes, skip=NOTES_SKIP)
        if said:
            blocks.append(protect("Notizen: " + " ".join(said)))
    return blocks


def pptx_to_markdown(data, title, notes=None):
    """PowerPoint (.pptx) bytes -> Markdown; FormatError for encrypted, non-zip or broken files;
    hidden slides in notes."""
    counts = notes.hidden if notes is not None else hidden.Counter()
    blocks = []
    with base.open_zip(data, ".pptx") as archive:
        deck = base.read_xml(archive, "ppt/presentation.xml", ".pptx", required=True,
                             kind="PowerPoint-Datei")
        core = base.read_xml(archive, "docProps/core.xml", ".pptx")
        targets = relationships(archive, "ppt/presentation.xml")
        for number, entry in enumerate(deck.iter(P + "sldId"), 1):
            path = targets.get(entry.get(R + "id"))
            slide = base.read_xml(archive, path, ".pptx") if path else None
            if slide is None:
                raise FormatError(f"defekt (Folie {number} fehlt) – als .pptx neu speichern")
            if (slide.get("show") or "1").lower() in ("0", "false"):
                counts[hidden.SLIDE] += 1
                continue
            notes_path = next((p for p in relationships(archive, path).values()
                               if "/notesSlides/" in p), None)
            notes_page = base.read_xml(archive, notes_path, ".pptx") if notes_path else None
            blocks.extend(slide_blocks(number, slide, notes_page))
    return join_blocks([f"# {base.document_title(core, title)}"] + blocks)
