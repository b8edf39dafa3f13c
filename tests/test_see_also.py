"""The runners-up under an answer (rag/check/see_also.py): which sources, in which order, and
the line every door shows ("Siehe auch: …", after the refusal "Vielleicht hilft: …")."""
import pytest

from rag.check import see_also
from rag.check.citations import check_citations
from rag.search.ranking import Source


def source(path, heading, n):
    return Source(doc_id=n, path=path, chunk_index=0, heading=heading, content="…", flags=[], score=1.0 / n)


SOURCES = [source("mail/a.md", "Mailbox › Anlegen", 1), source("mail/a.md", "Mailbox › Voraussetzungen", 2),
           source("hr/onboarding.md", "Onboarding › Mailbox", 3), source("netz/vpn.md", "VPN", 4)]
SAME_HEADING = [source("mail/a.md", "Mailbox › Anlegen", 1), source("mail/a.md", "Mailbox › Anlegen", 2),
                source("mail/a.md", "Mailbox › Quota", 3), source("mail/a.md", "Mailbox › Quota", 4),
                source("netz/vpn.md", "VPN", 5)]


@pytest.mark.parametrize("sources, answer, expected", [
    (SOURCES, "Laut Quelle [1]:\n1. cm user/x\n2. Siehe [4]", [2, 3]),  # verbatim: only the first line's [n] counts
    (SOURCES, "Mit cm [2], dann sam [3].", [1, 4]),  # a model answer: its valid citations are left out
    (SOURCES, "Mit cm [2] und [9].", [1, 3]),  # a number no source has cites nothing
    (SOURCES, "Dazu habe ich keine Information.", [1, 2]),  # the refusal: the two best
    (SOURCES[:2], "Mit cm [1].", [2]),  # fewer than three sources: what is left
    (SOURCES[:1], "Mit cm [1].", []),  # the only source is the cited one
    ([], "Dazu habe ich keine Information.", []),  # nothing found: nothing to point to
    (SAME_HEADING, "Mit cm [1].", [3, 5]),  # [2] is the cited section again, [4] the same section as [3]
    (SAME_HEADING, "Mit cm [3].", [1, 5]),  # the cited section's other chunk [4] is no runner-up
])
def test_pick_leaves_out_the_cited_sections_and_repeats(sources, answer, expected):
    cited = check_citations(answer.split("\n", 1)[0], len(sources))["valid"]
    picked = see_also.pick(sources, cited)
    assert [e["n"] for e in picked] == expected
    assert all(e == {"n": e["n"], "path": sources[e["n"] - 1].path, "heading": sources[e["n"] - 1].heading}
               for e in picked)


def test_pick_keeps_the_limit():
    assert [e["n"] for e in see_also.pick(SOURCES, [], limit=3)] == [1, 2, 3]
    assert len(see_also.pick(SOURCES)) == see_also.LIMIT == 2


@pytest.mark.parametrize("refused, expected", [
    (False, "Siehe auch: [2] mail/a.md › Mailbox › Voraussetzungen, [4] netz/vpn.md"),
    (True, "Vielleicht hilft: [2] mail/a.md › Mailbox › Voraussetzungen, [4] netz/vpn.md"),
])
def test_line_names_number_path_and_heading_path(refused, expected):
    entries = [{"n": 2, "path": "mail/a.md", "heading": "Mailbox › Voraussetzungen"},
               {"n": 4, "path": "netz/vpn.md", "heading": None}]
    assert see_also.line(entries, refused) == expected
    assert see_also.line([], refused) == "" and see_also.line(None, refused) == ""
