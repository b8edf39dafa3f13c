"""Every number that tunes the search and the answer, in one table, each with where it comes from.

    value("support.SUPPORT")        -> 0.5
    TABLE["support.SUPPORT"].how    -> "by hand"   (TABLE[...].why says why it was not measured)
    EMBED_MODELS["multilingual-e5-small-q4_0.gguf"].value["floor_cosine"]  -> 0.862

Each Number says how it was set:
    fit       a command chose it on named sets by a stated rule (`evaluate.py … --tune`)
    measured  a command compared a few values on named sets; this one won
    by hand   typed in; `why` gives the reason (a number from the literature, a reference for the others,
              a bound that no set has tested)
with the command, the sets, the commit and its date, and the figures per corpus as docs/ report them.
The modules read their numbers from here (rag/search/ranking.py, rag/answer/choose.py, rag/check/support.py …)
and keep their names, so the code reads as before. `ask_rag.py --explain` without a question prints the table.

Precedence, as before: a number stored with the index (`evaluate.py --tune --store`: vector weight and cosine
thresholds) wins over EMBED_MODELS, and a threshold stored in the cache (`evaluate.py --answerable --tune
--store`, `--judge --tune --store`) over ANSWER_MODELS, for the model it names; a flag wins over both.

Does not handle: numbers that only size a thing without tuning it (timeouts, token limits, how many lines).
"""
from collections import namedtuple

Number = namedtuple("Number", "value how command sets commit figures why", defaults=("", "", "", "", ""))

QUESTIONS = "eval/questions.jsonl (138 questions, 14 without an answer; wiki/)"
THREE = "eval/answers.jsonl, answers_iobroker.jsonl, answers_idoit.jsonl (wiki/, ioBroker, i-doit)"
FOUR = "eval/answers.jsonl, answers_iobroker.jsonl, answers_idoit.jsonl, answers_office.jsonl"
SECTIONS = "python3 evaluate.py --sections --tune --questions <three answer sets> --db wiki.db,iob.db,idoit.db"
ANSWERS = "python3 evaluate.py --answers --questions <set> --db <index> (fact lines)"
BY_HAND_SHARE = "a share of one half, not measured: a unit with most of the statement's words"

# -- per embedding model: the fusion weight and the relevance floor (rag/search/ranking.py index_settings) --
EMBED_MODELS = {
    "multilingual-e5-small-q4_0.gguf": Number(
        {"vector_weight": 1.0, "floor_cosine": 0.862, "reject_cosine": 0.85}, "fit",
        "python3 evaluate.py --tune", QUESTIONS, "f6f4762 2026-12-01",
        "wiki/ hybrid: MRR@10 0.842 at weight 1.0 (0.766 at 0, 0.818 at 0.5); refused without an answer "
        "71 %, with one 2 % (rule: the most refused without, at most 5 % with an answer)"),
    "gemma-3-270m-q4_k_m.gguf": Number(
        {"vector_weight": 0.01, "floor_cosine": 0.956}, "fit",
        "python3 evaluate.py --tune --db gemma.db --model <gemma>", QUESTIONS, "cb6d24a 2026-11-30",
        "wiki/ hybrid: MRR@10 0.772 at 0.01, 0.371 at 1.0; refused without an answer 50 %, with one 5 %"),
}

# -- per answer model: when the model is asked whether the sources answer (rag/answer/answerable.py) ------
ANSWER_MODELS = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf": Number(
        {"threshold": 0.7051, "section_threshold": 0.55}, "fit",
        "python3 evaluate.py --answerable --tune --answer-questions <four answer sets> "
        "--db wiki.db,iob.db,idoit.db,office.db; the section threshold: python3 evaluate.py --judge --tune "
        "--questions <three answer sets> --db wiki.db,iob.db,idoit.db", FOUR, "3294740 2026-12-03",
        "facts (135 with an answer, 42 without, together): AUC 0.92, refused with an answer 8.1 %, without "
        "71.4 %; sections (how-to and out-of-corpus lines): refused with 9.4 %, without 73.5 % (rule: the most "
        "right decisions, at most 10 % of the answerable refused)"),
}

TABLE = {
    # -- ranking (rag/search/ranking.py, lexical.py) -------------------------------------------------------
    "ranking.VECTOR_WEIGHT": Number(
        0.01, "by hand", why="the default for an embedding model EMBED_MODELS does not name: its vectors barely "
        "count until `evaluate.py --tune` has measured them (Gemma's measured weight)"),
    "ranking.LEXICAL_WEIGHT": Number(1.0, "by hand", why="the reference the vector weight is fit against"),
    "ranking.RRF_K": Number(60, "by hand", why="Reciprocal Rank Fusion as Cormack et al. (2009) set it"),
    "ranking.MAX_PER_FILE": Number(
        3, "measured", "python3 evaluate.py --db OUT/k.db --questions OUT/questions.jsonl --comparable …",
        QUESTIONS + " and eval/one_file_wiki.py (every page in one file)", "f6f4762 2026-12-01",
        "docs/suche.md: a hard cap lost answers where one file holds almost everything"),
    "ranking.COMPARABLE": Number(
        0.98, "measured", "python3 evaluate.py --comparable …", QUESTIONS + " and eval/one_file_wiki.py",
        "f6f4762 2026-12-01", "docs/suche.md: the cap yields only to a candidate within 98 % of its score"),
    "ranking.MIN_COVERAGE": Number(
        0.25, "by hand", commit="cb6d24a 2026-11-30", why="set with the first relevance floor; `evaluate.py "
        "--tune` fits the cosine thresholds around it (docs/suche.md, Ehrliches Nein)"),
    "ranking.MAX_UNKNOWN": Number(
        0.45, "by hand", commit="cb6d24a 2026-11-30", why="as MIN_COVERAGE: the lexical half of the floor"),
    "ranking.FULL_COVERAGE": Number(
        0.999, "by hand", commit="3dde39b 2026-12-03", why="'every word of the question', less rounding; "
        "checked: none of 589 verdicts of five sets changed, two office questions no longer refused"),
    "followups.FOLLOWUP_WEIGHT": Number(
        0.25, "measured", "python3 evaluate.py --followups", "eval/followups.jsonl (39 pairs; wiki/)",
        "6dcc8df 2026-12-01", "MRR@10 with the question before: 0.25/1.0 best (0.5/1.0: 0.872; 1.0/1.0: 0.846)"),
    "followups.HISTORY_WEIGHT": Number(
        1.0, "measured", "python3 evaluate.py --followups", "eval/followups.jsonl (39 pairs; wiki/)",
        "6dcc8df 2026-12-01", "see FOLLOWUP_WEIGHT: the two are one setting"),
    "expand.EXPANSION_WEIGHT": Number(
        0.5, "by hand", commit="1ec5d9f 2026-12-01", why="--expand is off by default; a phrase of the model "
        "counts half the question itself"),
    "expand.CHOSEN_WEIGHT": Number(
        1.0, "by hand", commit="1ec5d9f 2026-12-01", why="--expand is off; the model's choice counts as the question"),
    "expand.PRF_WEIGHT": Number(
        0.25, "measured", "python3 evaluate.py --expand --expand-method prf --questions <set>",
        "eval/questions_layperson.jsonl, eval/questions.jsonl (wiki/)", "6dcc8df 2026-12-01",
        "the best of 24 settings on both sets (docs/suche.md); layperson Recall@5 0.793 -> 0.805"),
    "lexical.COVERAGE_POWER": Number(
        1, "measured", "python3 evaluate.py", QUESTIONS, "01841a2 2026-11-30", "BM25 × coverage: best MRR@10"),
    "ranking.SECTION_MAX": Number(
        4000, "measured", SECTIONS.replace(" --tune", ""), THREE, "d53a4e7 2026-12-03",
        "all key steps printed, 2000 / 4000 / 8000: wiki/ 45 / 45 / 45 of 53, ioBroker 27 / 30 / 31 of 43, "
        "i-doit 37 / 37 / 38 of 68"),
    # -- the chooser (rag/answer/choose.py) and the judge (rag/answer/judge.py) -----------------------------
    "choose.WEIGHTS": Number(
        {"rank": 0.02, "cosine": 1.0, "heading": 0.05, "shape": 0.01, "substance": 0.02, "intro": -0.02,
         "pointer": 0.0, "role": 0.02}, "fit", SECTIONS, THREE, "c216cf2 2026-12-03",
        "right sections of 164 how-to lines: 94 -> 107 (wiki/ 44 -> 45, ioBroker 26 -> 28, i-doit 24 -> 34); "
        "role: 105 -> 110, all on i-doit (32 -> 37); grid eval/measure/sections.py GRID, the most right "
        "summed, ties to fewer and smaller weights"),
    "choose.BEFORE": Number(
        {"rank": 0.0, "cosine": 1.0, "heading": 0.0, "shape": 0.01, "substance": 0.0, "intro": -0.01,
         "pointer": 0.0, "role": 0.0}, "measured", "python3 evaluate.py --sections",
        "how-to lines of eval/answers.jsonl", "b07d0ba 2026-12-03",
        "the choice WEIGHTS replaced (best_section of issue 29), kept as the table's 'bisher' row"),
    "choose.FINALISTS": Number(
        1, "fit", "python3 evaluate.py --judge --tune --questions <three answer sets> --db …", THREE,
        "c499c0c 2026-12-03", "fit together with the section threshold (ANSWER_MODELS)"),
    "judge.EXCERPT": Number(
        250, "measured", "python3 evaluate.py --judge", THREE, "c499c0c 2026-12-03",
        "~150 prompt tokens; 500 characters (~205 tokens) judged as well, 200 printed 103 -> 100 right"),
    "choose.PROCEDURE_MAX": Number(
        2000, "by hand", commit="12b09df 2026-12-01", why="the prompt of --steps model keeps a procedure whole "
        "up to about 600 tokens; a longer one is cut like any source"),
    "choose.SUBSTANCE_FULL": Number(
        400, "by hand", commit="b07d0ba 2026-12-03", why="a third of a chunk's 1 200 characters counts as a "
        "whole section's worth; its weight is fit (WEIGHTS)"),
    "choose.POINTER_CHARS": Number(
        120, "by hand", commit="b07d0ba 2026-12-03", why="one sentence beside a link; the pointer signal's "
        "weight was fit to 0 (3 of the 19 sources it flags are right)"),
    # -- what the model reads (rag/answer/context.py, rag/core.py) --------------------------------------------
    "core.TOP_K": Number(4, "by hand", why="the post's number of chunks in the prompt"),
    "core.FACT_SOURCES": Number(
        2, "measured", ANSWERS + " --top-k 2, --fact-sources 2", THREE, "c499c0c 2026-12-03",
        "facts four -> two sources: wiki/ 21 -> 22 of 26, ioBroker 8 -> 8 of 11, i-doit 8 -> 8 of 13; "
        "tokens read (median) 487 -> 293, 458 -> 307, 577 -> 310"),
    "context.BUDGET": Number(
        1600, "by hand", commit="12b09df 2026-12-01", why="~480 prompt tokens for all sources; 700 lowered "
        "what the model read only 419 -> 377 tokens (docs/messwerte.md), so it stayed"),
    "context.FIRST_SHARE": Number(
        0.45, "by hand", commit="12b09df 2026-12-01", why="the best-ranked source gets the largest share"),
    "context.KEEP_RATIO": Number(
        0.5, "by hand", commit="12b09df 2026-12-01", why="a unit half as good as its source's best still bears"),
    # -- the checks after the answer (rag/check/) --------------------------------------------------------------
    "grounding.GROUNDED": Number(
        0.3, "by hand", "python3 evaluate.py --answers", "eval/answers.jsonl (wiki/)", "6e29011 2026-12-02",
        "wiki/: answers to out-of-wiki questions at most 0.25, right answers at least 0.33",
        why="placed between the two observed values; not refit on the other corpora"),
    "support.SUPPORT": Number(0.5, "by hand", commit="ffc2e84 2026-12-01", why=BY_HAND_SHARE),
    "support.FACT_WEIGHT": Number(
        0.5, "by hand", commit="ce8cbf2 2026-12-02", why="a statement's facts together weigh half its words, so "
        "the unit that holds them wins over one that only shares the wording"),
    "support.SUBJECT_SHARE": Number(
        0.5, "by hand", commit="11e188c 2026-12-03", why="half the question's nouns the statement repeats; "
        "checked with bench/support_verdicts.py on the recorded answer runs"),
    "support.MIN_WORDS": Number(2, "by hand", commit="ffc2e84 2026-12-01", why="'Laut Quelle [2]:' is no claim"),
    "support.EVIDENCE_MAX": Number(3, "by hand", commit="ffc2e84 2026-12-01", why="lines under an answer"),
    "guard.COPY_WORDS": Number(
        6, "by hand", commit="661e2a2 2026-12-01", why="six words in a row of a removed sentence are a copy; "
        "the 78 attacks of docs/injektionen.md are measured with it"),
    "guard.LEAK_WORDS": Number(8, "by hand", commit="661e2a2 2026-12-01", why="as COPY_WORDS, for the prompt"),
}


def value(name):
    """The number itself. Example: value("core.TOP_K") -> 4"""
    return TABLE[name].value


def rows():
    """(name, value, how, where it comes from) for every number, the per-model ones first (--explain)."""
    out = [(f"embed: {m}", n.value, n.how, n) for m, n in EMBED_MODELS.items()]
    out += [(f"answer: {m}", n.value, n.how, n) for m, n in ANSWER_MODELS.items()]
    return out + [(name, n.value, n.how, n) for name, n in TABLE.items()]
