"""A how-to source whose own text is no procedure, joined with its subsections when the steps
continue there.

    join(index, [Source(heading="MariaDB … › Möglicher Lösungsansatz",
                        content="Achtung: … Backup …")])
    -> [Source(heading="MariaDB … › Möglicher Lösungsansatz",
               content="Achtung: … Backup …\\n\\n### Schritt-für-Schritt-Anleitung\\n\\n1.
                        Verbinde dich via SSH …")]

Real handbooks put a warning or an introduction under a heading and the numbered steps one level
below it. The search often finds the parent (its heading holds the question's words), and printing
it alone shows no step. So a source without a procedure's shape (rag/text/units.py shaped) whose
page has subsections below its heading path, one of them shaped, becomes the parent with all of
them, each under its heading as a Markdown line, when the whole fits in search.SECTION_MAX
characters. The source keeps its heading path, rank and cosine; a later source that is one of those
subsections stays a candidate of its own (dropping it lost right sections: 110 -> 104). Not joined:
a parent one of whose subsections came earlier in the list.

Measured model-free (`python3 evaluate.py --sections`, the three answer sets together, how-to lines
whose printed section holds all key steps): 112 -> 116 of 164 (wiki 45 -> 46, ioBroker 30
-> 30, i-doit 37 -> 40), the right sections chosen unchanged (110).

The page's chunks come from the store's ids_below() and sources(), so a page the reader may not read
stays hidden. Does not handle: subsections on another page, a parent whose subsections are too long
together (it stays alone), fact questions.
"""
import dataclasses

from rag.search import ranking as search
from rag.store import sqlite as store
from rag.text.units import shaped


def below(index, source):
    """[(chunk_index, heading, content)] of the source page's chunks under its heading path, in page
    order."""
    prefix = f"{source.heading} › "
    rows = index.sources(index.ids_below(source.path)).values()
    return sorted((r.chunk_index, r.heading, r.content) for r in rows
                  if r.path == source.path and r.heading.startswith(prefix))


def joined(source, rows):
    """The source's text, then each subsection under a Markdown heading of its depth.

    Example: heading "A › B", rows [(4, "A › B › C", "1. x\\n2. y")]
             -> "<own text>\\n\\n### C\\n\\n1. x\\n2. y"
    """
    parts, last = [source.content], None
    for _, heading, content in rows:
        if heading != last:
            names = heading.split(" › ")
            parts.append(f"{'#' * min(6, len(names))} {names[-1]}")
            last = heading
        parts.append(content)
    return "\n\n".join(parts)


def join(index, sources, max_chars=search.SECTION_MAX):
    """The sources, each unshaped parent joined with its subsections (see the module docstring)."""
    # shown: path -> chunk indexes printed by an earlier source
    index, out, shown = store.as_store(index), [], {}
    for source in sources:
        own = set(source.chunks or (source.chunk_index,))
        rows = [] if shaped(source.content) else below(index, source)
        below_it = {i for i, _, _ in rows}
        if any(shaped(c) for _, _, c in rows) and not below_it & shown.get(source.path, set()):
            text = joined(source, rows)
            if len(text) <= max_chars:
                source = dataclasses.replace(source, content=text,
                                             chunks=tuple(sorted(own | {i for i, _, _ in rows})))
        shown.setdefault(source.path, set()).update(source.chunks or (source.chunk_index,))
        out.append(source)
    return out
