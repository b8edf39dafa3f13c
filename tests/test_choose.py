"""Which section a how-to answer shows verbatim (rag/answer/choose.py), and its measurement
(`evaluate.py --sections`, eval/measure/sections.py) on the fake index."""
import json

import pytest

from conftest import assert_one_error_line, load_json, run_script, write_wiki
from rag.answer import choose
from rag.search import solutions
from rag.search.ranking import Source
from rag.text import german, roles

STEPS = "1. Den VPN-Client aus dem Softwarecenter laden.\n2. Mit dem Firmenkonto anmelden.\n3. `vpn connect firma` ausführen."


def src(heading, content, cosine):
    return Source(1, "vpn.md", 0, heading, content, [], cosine=cosine)


def best(question, *sources):
    """The section the one chooser puts first (what the core prints verbatim), or None."""
    terms = german.query_terms(question, set())
    order = choose.choose(list(sources), terms, [1.0] * len(terms), set()).order
    return order[0] if order else None


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
    before = choose.choose([one_line, quota], signal_weights=choose.BEFORE)
    assert before.order == [0]  # the cosine alone picked the one-liner


def test_ties_keep_the_better_rank():
    a, b, c = src("VPN › A", STEPS, 0.9), src("VPN › B", STEPS, 0.9), src("VPN › C", STEPS, 0.9)
    rows = [choose.Signals(1, 0, 0, 0, 0, 0, 0)] * 3
    nothing = choose.Signals(0, 0, 0, 0, 0, 0, 0)
    assert choose.finalists([a, b, c], rows, 3, nothing) == [0, 1, 2]  # all equal: in order
    assert best("Wie geht das?", a, a) == 0 and best("Wie geht das?", b, a) == 0
    assert best("Wie geht das?") is None and choose.finalists([], []) == []


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
    # right, among the sources, with runners-up, how-to questions, all key steps printed: "Mailbox anlegen › Quota"
    # counts as the expected "Mailbox anlegen" (its heading path holds it), but printed it has no `cm`
    assert rows["neu (choose)"] == [2, 2, 2, 2, 1]
    assert rows["bisher (best_section)"][3] == 2  # the fact line is not counted


def test_evaluate_sections_wants_one_index_per_answer_set(tmp_path, fake_embedding):
    path = answer_set(tmp_path)
    result = run_script("evaluate.py", "--sections", "--questions", f"{path},{path}", "--db", "a.db",
                        env=fake_embedding)
    assert_one_error_line(result, "--sections", "--db")


# -- the solution, not the problem (rag/text/roles.py, rag/search/solutions.py) ------------------------------------
@pytest.mark.parametrize("heading, expected", [
    ("Kein Login nach Änderung des Session Timeouts › Lösung", 1), ("Standort › Lösungen", 1),
    ("Kein Login nach Änderung des Session Timeouts › Problem", -1), ("Probleme mit dem WLAN", -1),
    ("MariaDB › Fehlermeldungen", -1), ("Mailbox anlegen", 0), ("Problemlösung › Mailbox", 0), ("", 0),
    ("MariaDB › Möglicher Lösungsansatz", 1), ("Kein Login › Mögliche Lösungen", 1), ("Mögliche Fehler", 0),
])
def test_a_heading_s_last_part_says_whether_it_is_a_problem_or_its_solution(heading, expected):
    assert roles.role(heading) == expected


def test_a_how_to_answer_prefers_the_solution_over_the_problem_that_ranks_first():
    problem = src("Kein Login › Problem", "1. Session-Timeout auf 0 setzen.\n2. Speichern.\n3. Man fliegt raus.", 0.90)
    solution = src("Kein Login › Lösung", "1. In die Datenbank wechseln.\n2. `UPDATE isys_settings` ausführen.", 0.90)
    assert best("Wie komme ich nach Session-Timeout 0 wieder rein?", problem, solution) == 1
    rows = [choose.signals(problem, 0, 0.9, [], [], set())._replace(role=0),
            choose.signals(solution, 1, 0.9, [], [], set())._replace(role=0)]
    assert choose.finalists([problem, solution], rows) == [0]  # without the role: the rank


class Sections:
    """A store's section() over {(path, heading): [(chunk_index, content)]}; what a reader may not read is absent."""
    def __init__(self, sections):
        self.sections, self.asked = sections, []

    def section(self, path, heading):
        self.asked.append(heading)
        return self.sections.get((path, heading), [])


def test_a_problem_section_is_replaced_by_its_solution_from_the_same_page():
    index = Sections({("kb.md", "Kein Login › Lösung"): [(4, "1. In die Datenbank wechseln."), (5, "2. `UPDATE` ausführen.")]})
    problem = Source(7, "kb.md", 3, "Kein Login › Problem", "Man fliegt sofort raus.", [], cosine=0.9)
    other = Source(8, "vpn.md", 0, "VPN", "Das VPN.", [], cosine=0.8)
    first, second = solutions.follow(index, [problem, other])
    assert (first.heading, first.chunks, first.cosine) == ("Kein Login › Lösung", (4, 5), 0.9)
    assert first.content == "1. In die Datenbank wechseln.\n\n2. `UPDATE` ausführen." and second is other
    assert index.asked == ["Kein Login › Lösung"]  # a page's top heading (VPN) has no siblings to ask for


def test_a_problem_stays_when_its_solution_is_a_source_already_or_not_there():
    index = Sections({("kb.md", "Kein Login › Lösung"): [(4, "1. In die Datenbank wechseln.")]})
    problem = Source(7, "kb.md", 3, "Kein Login › Problem", "Man fliegt sofort raus.", [])
    solution = Source(9, "kb.md", 4, "Kein Login › Lösung", "1. In die Datenbank wechseln.", [])
    assert solutions.follow(index, [problem, solution]) == [problem, solution]
    assert solutions.follow(Sections({}), [problem]) == [problem]  # no such section, or one the reader may not read


def test_a_how_to_question_gets_the_solution_section_through_the_core(fake_embedding, tmp_path):
    wiki = write_wiki(tmp_path / "kb", {"kein-login.md": """\
        # Kein Login nach Änderung des Session Timeouts

        ## Problem

        Nach dem Setzen des Session-Timeouts auf 0 fliegt jeder nach dem Login sofort wieder raus.

        ## Lösung

        1. Mit der Datenbank verbinden.
        2. `UPDATE isys_settings SET isys_settings__value = 3600` ausführen.
        """})
    assert run_script("build_index.py", "--wiki", str(wiki), env=fake_embedding).returncode == 0
    question = "Wie komme ich wieder rein, wenn ich nach dem Login sofort rausfliege (Session-Timeout 0)?"
    found = load_json(run_script("ask_rag.py", "--retrieve-only", "--json", "--top-k", "1", question,
                                 env=fake_embedding).stdout)
    assert [s["heading"] for s in found["sources"]] == ["Kein Login nach Änderung des Session Timeouts › Lösung"]
