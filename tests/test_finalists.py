"""The second stage (rag/search/finalists.py): one chunk per section, the first sections scored again."""
import pytest

from rag.search import finalists
from rag.search.ranking import Source
from rag.text import german


def source(doc_id, path, heading, cosine=None, lexical=None, vector=None):
    ranks = {k: v for k, v in (("lexical", lexical), ("vector", vector)) if v}
    return Source(doc_id, path, 0, heading, "Text", [], ranks=ranks, cosine=cosine)


class Index:
    """A store that knows the cosines the scan did not return."""

    def __init__(self, cosines):
        self.cosines, self.asked = cosines, []

    def similarities(self, qvec, doc_ids):
        self.asked.extend(doc_ids)
        return {d: self.cosines[d] for d in doc_ids}

    def search_text(self, doc_id):
        return ""


def test_one_chunk_per_section_in_fused_order():
    ordered = [source(1, "a.md", "A"), source(2, "a.md", "A"), source(3, "b.md", "B"), source(4, "a.md", "A › C")]
    assert [s.doc_id for s in finalists.sections(ordered)] == [1, 3, 4]


def test_a_closer_section_further_down_comes_first():
    # fused: the lexical hit first, but the section at place 3 is much closer to the question
    ordered = [source(1, "a.md", "Quota", cosine=0.86, lexical=1), source(2, "b.md", "Drucker", cosine=0.85),
               source(3, "c.md", "Mailbox anlegen", cosine=0.95, lexical=4)]
    ranked = finalists.rerank(Index({}), ordered, [1.0], [], [], set())
    assert [s.doc_id for s in ranked] == [3, 1, 2]


def test_missing_cosines_are_asked_once_and_the_tail_keeps_its_order():
    ordered = [source(n, f"{n}.md", f"S{n}", cosine=None, lexical=n) for n in range(1, 6)]
    index = Index({1: 0.80, 2: 0.90, 3: 0.70, 4: 0.99, 5: 0.99})
    ranked = finalists.rerank(index, ordered, [1.0], [], [], set(), depth=3)
    assert index.asked == [1, 2, 3]
    assert [s.doc_id for s in ranked] == [2, 1, 3, 4, 5]  # 4 and 5 are behind the depth: unscored


def test_lexical_mode_changes_nothing_but_the_sections():
    ordered = [source(1, "a.md", "A", lexical=1), source(2, "a.md", "A", lexical=2), source(3, "b.md", "B")]
    assert [s.doc_id for s in finalists.rerank(Index({}), ordered, None, [], [], set())] == [1, 3]


@pytest.mark.parametrize("heading, expected", [("Mailbox › Quota setzen", 1.0), ("Drucker", 0.0)])
def test_the_heading_signal_is_the_share_of_the_question_in_the_heading_path(heading, expected):
    vocab = set()
    terms = german.query_terms("Quota setzen", vocab)
    row = finalists.signals([source(1, "a.md", heading, cosine=0.9)], terms, [1.0] * len(terms), vocab)[0]
    assert row.heading == pytest.approx(expected)
    assert row.cosine == 0.0


def test_ties_keep_the_fused_order():
    ordered = [source(1, "a.md", "A", cosine=0.9), source(2, "b.md", "B", cosine=0.9)]
    cosine_only = finalists.Signals(cosine=1.0, lexical=0.0, heading=0.0, fused=0.0)
    ranked = finalists.rerank(Index({}), ordered, [1.0], [], [], set(), tuned=cosine_only)
    assert [s.doc_id for s in ranked] == [1, 2]

