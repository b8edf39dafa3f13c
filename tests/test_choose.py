"""Which section a how-to answer shows verbatim (rag/answer/choose.py), and its measurement
(`evaluate.py --sections`, eval/measure/sections.py) on the fake index."""
import json

import pytest

from conftest import assert_one_error_line, run_script
from rag.answer import choose, context
from rag.search.ranking import Source
from rag.text import german

STEPS = "1. Den VPN-Client aus dem Softwarecenter laden.\n2. Mit dem Firmenkonto anmelden.\n3. `vpn connect firma` ausführen."


def src(heading, content, cosine):
    return Source(1, "vpn.md", 0, heading, content, [], cosine=cosine)


def best(question, *sources):
    terms = german.query_terms(question, set())
    return choose.best(list(sources), terms, [1.0] * len(terms), set())


@pytest.mark.parametrize("pointer", [
    src("VPN", "Siehe [VPN-Client einrichten](vpn-client.md).", 0.915),  # the page's opening, only a link
    src("VPN › Mehr dazu", "Weitere Informationen: siehe [Anleitung](https://intra/vpn).", 0.915),  # a subsection
])
def test_a_section_that_only_points_elsewhere_loses_to_the_steps(pointer):
    steps = src("VPN › Client einrichten", STEPS, 0.90)
    assert choose.is_pointer(pointer.content) and not choose.is_pointer(steps.content)
    assert best("Wie richte ich den VPN-Client ein?", pointer, steps) == 1


@pytest.mark.parametrize("question, expected", [
    ("Wie setze ich die Quota einer Mailbox?", 1),  # "Quota" stands in the second heading only
    ("Wie lege ich eine Mailbox an?", 0),           # no heading names it: the better rank and cosine win
])
def test_heading_words_win_over_a_closer_one_line_section(question, expected):
    one_line = Source(1, "mail.md", 1, "Mail › Allgemeines", "Mailboxen gibt es für alle.", [], cosine=0.92)
    quota = Source(1, "mail.md", 2, "Mail › Quota setzen",
                   "Die Quota setzt die IT mit `sq user/name 2048000`; der Wert ist in KB.", [], cosine=0.91)
    assert best(question, one_line, quota) == expected
    assert context.best_section([one_line, quota]) == 0  # the cosine alone picked the one-liner


def test_ties_keep_the_better_rank():
    a, b = src("VPN › A", STEPS, 0.9), src("VPN › B", STEPS, 0.9)
    rows = [choose.Signals(1, 0, 0, 0, 0, 0, 0)] * 3
    assert choose.pick(rows, choose.Signals(0, 0, 0, 0, 0, 0, 0)) == 0  # all equal: the first
    assert best("Wie geht das?", a, a) == 0 and best("Wie geht das?", b, a) == 0
    assert choose.best([]) is None and choose.pick([]) is None


@pytest.mark.parametrize("content, chars", [
    ("Hinweis:\nSiehe [Anleitung](a.md).\n1. `vpn up`", 15),  # label line and link text do not count
    ("## Titel\n![Bild](b.png)", 0),
    ("Text ohne Link.", 13),  # "TextohneLink."
])
def test_substance_counts_only_own_text(content, chars):
    assert choose.substance(content) == chars


def test_the_table_has_one_row_per_source_with_the_cosine_relative_to_the_best():
    rows = choose.table([src("VPN", "Siehe [x](y.md).", 0.8), src("VPN › Client", STEPS, 0.9)], [], [], set())
    assert [round(r.cosine, 6) for r in rows] == [-0.1, 0.0]
    assert [r.rank for r in rows] == [1.0, 0.5] and [r.intro for r in rows] == [1, 0]
    assert [r.shape for r in rows] == [0, 1] and [r.pointer for r in rows] == [1, 0]


# -- evaluate.py --sections on the fake index ------------------------------------------------------
def answer_set(tmp_path):
    lines = [{"question": "Wie lege ich eine Mailbox an?", "kind": "howto", "facts": [["cm"]],
              "source": "mail/mailbox-anlegen.md › Mailbox anlegen"},
             {"question": "Wie verbinde ich das VPN?", "kind": "howto", "facts": [["VPN-Client"]],
              "source": "netzwerk/vpn.md › VPN"},
             {"question": "Wie heißt der Drucker?", "kind": "fact", "facts": [["PR-204"]], "source": "drucker.md › Drucker"}]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def test_evaluate_sections_counts_the_howto_lines(tmp_path, fake_embedding, small_wiki):
    assert run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding).returncode == 0
    result = run_script("evaluate.py", "--sections", "--questions", answer_set(tmp_path), "--json", env=fake_embedding)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["weights"] == dict(choose.WEIGHTS._asdict())
    rows = found["sets"][str(tmp_path / "answers.jsonl")]
    assert rows["neu (choose)"] == [2, 2, 2, 2]  # right, among the sources, with runners-up, how-to questions
    assert rows["bisher (best_section)"][3] == 2  # the fact line is not counted


def test_evaluate_sections_wants_one_index_per_answer_set(tmp_path, fake_embedding):
    path = answer_set(tmp_path)
    result = run_script("evaluate.py", "--sections", "--questions", f"{path},{path}", "--db", "a.db",
                        env=fake_embedding)
    assert_one_error_line(result, "--sections", "--db")
