"""A how-to question's sources with each problem section replaced by its solution section from the
same page, when the search found only the problem ("Kein Login … › Problem"
-> "Kein Login … › Lösung").

    follow(index, [Source(heading="Standort … › Problem"), Source(heading="Hotfixes")])
    -> [Source(heading="Standort … › Lösung"), Source(heading="Hotfixes")]
       (the solution keeps the problem's ranks)

The solution is looked up by its heading path next to the problem's (rag/text/roles.py
solution_headings), with the store's section() (so a page the reader may not read stays hidden), and
joined like search.whole_sections. A source that is a problem keeps its place in the list, so the
numbers [n] stay in rank order. Left alone: a problem whose solution is among the sources already, a
page without such a section, fact questions (a question after the error message wants the problem
section).

Does not handle: a solution section longer than search.SECTION_MAX (its first chunk is taken), a
solution on another page.
"""
import dataclasses

from rag.store import sqlite as store
from rag.search import ranking as search
from rag.text import roles


def follow(index, sources, max_chars=search.SECTION_MAX):
    """The sources, each problem section replaced by its solution section (see the module
    docstring)."""
    index = store.as_store(index)
    have = {(s.path, s.heading) for s in sources}
    out = []
    for source in sources:
        found = None
        if roles.role(source.heading) == -1:
            for heading in roles.solution_headings(source.heading):
                if (source.path, heading) in have:
                    break  # the search found the solution itself
                rows = index.section(source.path, heading)
                if rows:
                    found = (heading, rows)
                    break
        if found:
            heading, rows = found
            joined = "\n\n".join(content for _, content in rows)
            keep = rows if len(joined) <= max_chars else rows[:1]
            source = dataclasses.replace(source, heading=heading,
                                         content="\n\n".join(c for _, c in keep),
                                         chunk_index=keep[0][0], chunks=tuple(i for i, _ in keep))
            have.add((source.path, heading))
        out.append(source)
    return out
