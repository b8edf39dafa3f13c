"""Leave one set out: a threshold is fit on the other sets and scored on the one left out
(eval/measure/answerable.py and judge.py held_out, printed by `evaluate.py --answerable/--judge`)."""
from eval.measure import answerable, judge


def refusal_row(name, p, inside):
    return {"set": name, "floor": False, "p_yes": p, "in_wiki": inside}


def test_the_answerability_threshold_of_a_set_comes_from_the_other_sets():
    rows = [refusal_row("a", p, True) for p in (0.9, 0.8)]
    rows += [refusal_row("a", p, False) for p in (0.3, 0.2)]
    rows += [refusal_row("b", p, True) for p in (0.5, 0.6)] + [refusal_row("b", 0.1, False)]
    own = answerable.tune_threshold([r for r in rows if r["set"] == "a"])
    held = answerable.held_out(rows)
    assert own == 0.3001  # fit on a itself: both out-of-wiki questions refused
    assert held["a"] == (0.1001, (0, 0, 2, 2))  # b's threshold lets a's two through
    assert held["b"] == (0.3001, (1, 0, 1, 2))


def judged_row(name, p_yes, hit, inside=True):
    return {"set": name, "floor": False, "in_wiki": inside,
            "judged": [{"read": 100, "p_yes": p_yes, "hit": hit}]}


def test_the_judge_s_setting_of_a_set_comes_from_the_other_sets():
    rows = [judged_row("a", 0.9, True), judged_row("a", 0.7, True), judged_row("a", 0.6, False, False)]
    rows += [judged_row("b", 0.5, True), judged_row("b", 0.45, True), judged_row("b", 0.2, False, False)]
    a_alone = judge.fit([r for r in rows if r["set"] == "a"])
    held = judge.held_out(rows)
    (setting, s) = held["a"]
    assert setting == judge.fit([r for r in rows if r["set"] == "b"]) != a_alone
    assert (s["right"], s["out_refused"]) == (2, 0)  # b's low threshold answers a's outsider
    assert held["b"][1]["wrong_refused"] == 2  # a's high threshold refuses b's answerable lines
