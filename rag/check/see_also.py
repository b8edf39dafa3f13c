"""The runners-up: up to two sources the answer did not cite, each from another section, so a reader
whose answer is the wrong section is one click from the right one. The core picks them once; every
door shows them.

    pick(sources, cited=[1])
    # [1] a.md › A, [2] a.md › A (the same section again), [3] b.md › B, [4] c.md › C
    -> [{"n": 3, "path": "b.md", "heading": "B"}, {"n": 4, "path": "c.md", "heading": "C"}]
    line(that, refused=False)  -> "Siehe auch: [3] b.md › B, [4] c.md › C"
    line(that, refused=True)   -> "Vielleicht hilft: [3] b.md › B, [4] c.md › C"
        (after "Dazu habe ich keine Information.")

A section is a page's heading path (path and heading): a chunk of the cited section is no runner-up,
and two chunks of one section count once. The sources keep their rank order, so the best come first.

Does not handle: sections that differ only in wording (two pages about the same thing both count).
"""
from rag.check.record import Check

LIMIT = 2  # runners-up at most: more would be a second source list


def pick(sources, cited=(), limit=LIMIT):
    """Up to `limit` sources as [{"n", "path", "heading"}] (n: 1-based, as in the numbered source
    list), best first, none from a cited section and no two from the same one. cited: the answer's
    valid [n]; numbers outside the list are ignored. A refusal cites nothing, so it gets the best
    sections."""
    seen = {(sources[n - 1].path, sources[n - 1].heading) for n in cited if 1 <= n <= len(sources)}
    found = []
    for n, source in enumerate(sources, start=1):
        section = (source.path, source.heading)
        if n in cited or section in seen:
            continue
        seen.add(section)
        found.append({"n": n, "path": source.path, "heading": source.heading})
        if len(found) == limit:
            break
    return found


def label(entry):
    """Example: {"n": 2, "path": "a.md", "heading": "A › B"} -> "[2] a.md › A › B";
    without heading "[2] a.md" """
    return f"[{entry['n']}] {entry['path']}" + (f" › {entry['heading']}" if entry.get("heading")
                                                else "")


def line(entries, refused=False):
    """The one line a door shows under the answer ("" without runners-up); refused: the answer is
    the refusal."""
    if not entries:
        return ""
    return (("Vielleicht hilft: " if refused else "Siehe auch: ")
            + ", ".join(label(e) for e in entries))


def run(case):
    """The check (rag/check/record.py): the runners-up the answer did not cite ("ok"; a refusal: the
    best)."""
    return Check("see_also", "ok", pick(case.sources, case.found["citations"].evidence["valid"]))
