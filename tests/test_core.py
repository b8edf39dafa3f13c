"""rag/core.py, the pipeline every front door calls: its events, its result, its errors.

The terminal, the web page, the OpenAI-compatible API and the MCP server only turn these events
into their own formats, so what is asserted here holds for all of them.
"""
import dataclasses
import json

import pytest

from conftest import run_script
from fake_server import GEMMA_TEMPLATE, FakeLlamaServer
from rag import core
from rag.models import llm
from rag.search import expand
from rag.search import wiki_words

QUESTION = "Wie lege ich eine Mailbox an?"


@pytest.fixture
def settings(fake_embedding, small_wiki, monkeypatch):
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    for key, value in fake_embedding.items():
        monkeypatch.setenv(key, value)
    return core.Settings(db=fake_embedding["RAG_DB"], model=fake_embedding["RAG_EMBED_MODEL"],
                         embedding_bin=fake_embedding["LLAMA_EMBEDDING"], audit=fake_embedding["RAG_AUDIT"],
                         steps="model")  # the fake model's answers; the verbatim steps are tested below


def test_events_come_in_pipeline_order_and_end_with_the_answer(settings):
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Mit cm", " [1]", "."]) as server:
        settings.server = server.url
        events = list(core.ask(QUESTION, settings))
    kinds = [e.kind for e in events]
    assert kinds == ["sources", "chosen", "asking", "prompt", "piece", "piece", "piece", "checks",
                     "done"]
    choice = events[1].data  # a how-to question's section choice
    assert choice is events[-1].data.choice and choice.order
    assert events[2].data == "answer"  # no threshold measured for the fake model: no check
    done = events[-1].data
    assert "".join(e.data for e in events if e.kind == "piece") == done.text == "Mit cm [1]."
    assert done.llm_called and done.citations == {"cited": [1], "valid": [1], "unknown": []}
    assert events[0].data is done.retrieval and done.retrieval.sources[0].path == "mail/mailbox-anlegen.md"
    out = done.as_json()
    assert json.loads(json.dumps(out))["answer"] == "Mit cm [1]." and out["sources"][0]["path"].startswith("mail/")
    entry = json.loads(open(settings.audit, encoding="utf-8").read())
    assert entry["answer"] == done.text and len(entry["chunks"]) == len(done.retrieval.sources)


def test_the_prompt_comes_from_the_one_builder_and_the_steps_run_in_order(settings, monkeypatch):
    from rag.answer import prompt as answer
    built, steps = [], []
    real = answer.build_prompt
    monkeypatch.setattr(answer, "build_prompt", lambda *a, **k: built.append(real(*a, **k)) or built[-1])
    for name in ("embed", "rank", "protect", "prepare", "stream", "check", "write_audit"):
        step = getattr(core, name)
        monkeypatch.setattr(core, name, lambda *a, _step=step, _name=name, **k: steps.append(_name) or _step(*a, **k))
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Mit cm", " [1]", "."]) as server:
        settings.server = server.url
        done = core.run(QUESTION, settings)
    # the post's order: the prompt, then the model is asked
    assert steps == ["embed", "rank", "protect", "prepare", "stream", "check", "write_audit"]
    assert built == [done.prompt] and done.prompt.startswith(answer.context_part(done.question, done.retrieval.sources,
                                                                                  True, None).split("<<<")[0])


def test_the_post_steps_one_call_each_yield_what_ask_yields(settings):
    """ask_rag.py runs core.Run's steps itself (embed → rank → prompt → ask, then check); the doors
    take core.ask(), the same chain."""
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Mit cm", " [1]", "."]) as server:
        settings.server = server.url
        run = core.Run(QUESTION, settings)
        steps = [[e.kind for e in step()]
                 for step in (run.embed, run.rank, run.prompt, run.ask, run.check)]
        whole = list(core.ask(QUESTION, settings))
    assert steps == [[], ["sources", "chosen"], [], ["asking", "prompt", "piece", "piece", "piece"],
                     ["checks", "done"]]
    assert [k for step in steps for k in step] == [e.kind for e in whole]
    assert run.result.text == whole[-1].data.text == "Mit cm [1]."
    assert [c.name for c in run.result.checks] == [c.name for c in whole[-1].data.checks]


def test_a_wrong_citation_is_corrected_in_the_answer_the_json_and_the_audit(settings):
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Die Mailbox bekommt eine Quota von 2 GB", " [9]."]) as server:
        settings.server = server.url
        events = list(core.ask(QUESTION, settings))
    done = events[-1].data
    n = next(i for i, s in enumerate(done.retrieval.sources, start=1) if "2 GB" in s.content)
    assert "".join(e.data for e in events if e.kind == "piece").endswith("[9].")  # streamed as the model wrote it
    assert done.text == f"Die Mailbox bekommt eine Quota von 2 GB [{n}]."  # then pointed at the supporting source
    assert done.citations == {"cited": [n], "valid": [n], "unknown": []}
    (statement,) = done.support
    assert statement["verdict"] == "anderes Zitat" and statement["corrected"] == [9] and statement["best"] == n
    entry = json.loads(open(settings.audit, encoding="utf-8").read())
    assert entry["answer"] == done.text and entry["support"][0]["corrected"] == [9]


@pytest.mark.parametrize("question, said, withdrawn, why", [
    # "2 GB" stands in the wiki, said of the mailbox
    ("Wie viel Speicher hat der Fileserver im Keller?", "Es sind 2 GB", True, "Anteil der Fragewörter"),
    ("Wie groß ist die Quota einer Mailbox?", "Es sind 2 GB", False, ""),
    # the question's words stand around "2 GB" (Quota, Mailbox), the noun the answer repeats (Archiv) does not
    ("Wie groß ist die Quota einer Mailbox im Archiv?", "Das Archiv hat 2 GB", True, "Anteil der Substantive"),
])
def test_a_fact_said_of_something_else_is_withdrawn(settings, question, said, withdrawn, why):
    settings.no_floor = True  # the model is asked, whatever the search found
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=[said, " [1]."]) as server:
        settings.server = server.url
        events = list(core.ask(question, settings))
    done, checks = events[-1].data, next(e.data for e in events if e.kind == "checks")
    assert done.kind == "fact" and done.grounding["facts"] == ["2 GB"] and checks["grounding"] == done.grounding
    assert done.grounding["refused"] is withdrawn and done.grounding["why"].startswith(why), done.grounding
    assert (done.text == "Dazu habe ich keine Information.") is withdrawn
    entry = json.loads(open(settings.audit, encoding="utf-8").read())
    assert entry["grounding"] == done.grounding and entry["answer"] == done.text
    if withdrawn:  # what the model said stays auditable
        assert done.grounding["answer"] == f"{said} [1]." and done.citations["cited"] == []


def test_a_follow_up_marker_the_model_copies_is_not_part_of_the_answer(settings):
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "Mit cm [1]."}]
    copied = f" (Folgefrage zu: „{QUESTION}“)"
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Die Quota ist 2 GB [1].", copied]) as server:
        settings.server = server.url
        events = list(core.ask("Und welche Quota bekommt sie?", settings, history))
    assert server.completions()[-1]["body"]["messages"][-1]["content"].count("Folgefrage zu:") == 1  # it was read
    assert "".join(e.data for e in events if e.kind == "piece").endswith("“)")  # and streamed as written
    assert events[-1].data.text == "Die Quota ist 2 GB [1]."


def test_weak_evidence_skips_the_model(settings):
    with FakeLlamaServer() as server:
        settings.server = server.url
        done = core.run("Was gibt es heute in der Kantine?", settings)
    assert done.text == "Dazu habe ich keine Information." and not done.llm_called
    assert server.completions() == []


def test_retrieve_only_writes_no_audit_and_asks_nothing(settings):
    settings.retrieve_only = True
    done = core.run(QUESTION, settings)
    assert done.text is None and done.retrieval.sources
    with pytest.raises(FileNotFoundError):
        open(settings.audit)


def test_folder_filter_keeps_only_pages_below_it(settings):
    settings.retrieve_only, settings.under = True, "netzwerk"
    done = core.run(QUESTION, settings)
    assert done.retrieval.under == "netzwerk/"
    assert done.retrieval.sources and all(s.path.startswith("netzwerk/") for s in done.retrieval.sources)


@pytest.mark.parametrize("under", ["gibtsnicht/", "mai"])  # "mai" is no folder, though "mail/" starts with it
def test_unknown_folder_is_one_german_line(settings, under):
    settings.retrieve_only, settings.under = True, under
    with pytest.raises(core.CoreError, match="liegt keine Seite im Index"):
        core.run(QUESTION, settings)


@pytest.mark.parametrize("question", ["", "   ", None])
def test_empty_question_is_a_core_error(settings, question):
    with pytest.raises(core.CoreError, match="keine Frage"):
        core.run(question, settings)


def test_missing_index_names_the_build_command(settings, tmp_path):
    settings.db = str(tmp_path / "nope.db")
    with pytest.raises(core.CoreError, match="python3 build_index.py"):
        core.run(QUESTION, settings)


@pytest.mark.parametrize("p_yes, refused", [(0.2, True), (0.8, False)])
def test_answerability_check_refuses_below_the_threshold_before_the_answer(settings, p_yes, refused):
    settings.answer_threshold = 0.5
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Mit cm", " [1]."], p_yes=p_yes) as server:
        settings.server = server.url
        events = list(core.ask(QUESTION, settings))
        (check,) = server.checks()
        answers = server.completions()
    done = events[-1].data
    assert done.answerable == {"p_yes": pytest.approx(p_yes, abs=1e-3), "threshold": 0.5, "refused": refused}
    assert check["body"]["max_tokens"] == 1 and check["body"]["logprobs"] is True
    assert check["body"]["messages"][1]["content"].endswith("Antworte nur mit ja oder nein.")
    if refused:
        assert done.text == "Dazu habe ich keine Information." and answers == [] and "piece" not in [e.kind for e in events]
    else:
        assert done.text == "Mit cm [1]." and len(answers) == 1
        # the check and the answer share everything up to the question: llama-server reuses that prefix
        head = lambda body: body["messages"][1]["content"].split("\nBeantworten")[0].split("\nAntworte")[0]  # noqa: E731
        assert head(check["body"]) == head(answers[0]["body"]) and answers[0]["body"]["messages"][0] == check["body"]["messages"][0]


def test_no_measured_threshold_means_no_check(settings):
    with FakeLlamaServer(template=GEMMA_TEMPLATE) as server:
        settings.server = server.url
        done = core.run(QUESTION, settings)
    assert server.checks() == [] and done.answerable is None and done.llm_called


# -- what the model read before the first token (rag/models/llm.py read_entry) --------------------------
def test_the_tokens_read_before_the_first_token_are_summed_over_every_call_without_the_cache(settings):
    from fake_server import prompt_tokens
    settings.answer_threshold, settings.rewrite = 0.5, True
    with FakeLlamaServer(template=GEMMA_TEMPLATE, replies=['"Welche Quota bekommt die Mailbox?"'], answer=["2 GB [1]."],
                         cached=100) as server:  # llama-server has 100 tokens of each cached prompt already
        settings.server = server.url
        done = core.run(FOLLOW_UP, settings, MAILBOX_TURN)
        (rewrite,), (check,), (answer_request,) = server.structured(), server.checks(), server.completions()
    total = [prompt_tokens(r["body"]) for r in (rewrite, check, answer_request)]
    assert done.timings["read"] == [{"call": "search", "prompt_n": total[0], "cached": 0},  # sent without the cache
                                    {"call": "check", "prompt_n": total[1] - 100, "cached": 100},
                                    {"call": "answer", "prompt_n": total[2] - 100, "cached": 100}]
    assert done.timings["read_before_first_token"] == sum(total) - 200 > 0
    entry = json.loads(open(settings.audit, encoding="utf-8").read())
    assert entry["timings"]["read_before_first_token"] == done.as_json()["timings"]["read_before_first_token"] \
        == sum(total) - 200


def test_a_server_without_timings_reads_an_unknown_number_not_zero(settings):
    settings.answer_threshold = 0.5
    with FakeLlamaServer(template=GEMMA_TEMPLATE, timings=False) as server:
        settings.server = server.url
        done = core.run(QUESTION, settings)
    assert done.timings["read"] == [{"call": "check", "prompt_n": None}, {"call": "answer", "prompt_n": None}]
    assert done.timings["read_before_first_token"] is None and done.llm_called


def test_a_refused_question_read_only_the_check(settings):
    settings.answer_threshold = 0.5
    with FakeLlamaServer(template=GEMMA_TEMPLATE, p_yes=0.1) as server:
        settings.server = server.url
        done = core.run(QUESTION, settings)
        (check,) = server.checks()
    from fake_server import prompt_tokens
    assert done.answerable["refused"] and [e["call"] for e in done.timings["read"]] == ["check"]
    assert done.timings["read_before_first_token"] == prompt_tokens(check["body"])


# -- follow-ups and expansion (rag/search/expand.py) ------------------------------------------------------
MAILBOX_TURN = [{"role": "user", "content": "Wie lege ich eine Mailbox an?"},
                {"role": "assistant", "content": "Mit cm [1]."}]
FOLLOW_UP = "Und wie viel Platz hat sie?"


def test_without_rewrite_the_model_is_not_asked_but_the_question_before_is_searched_too(settings):
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["2 GB [1]."]) as server:
        settings.server = server.url
        alone = list(core.ask(FOLLOW_UP, settings))
        with_history = list(core.ask(FOLLOW_UP, settings, MAILBOX_TURN))
        standalone = list(core.ask(QUESTION, settings, MAILBOX_TURN))  # needs no context: the history changes nothing
    assert server.structured() == []  # no rewrite asked of the model
    assert "searched" not in [e.kind for e in alone] and alone[-1].data.searched is None
    assert [e.kind for e in with_history][:2] == ["searched", "sources"]
    searched = with_history[-1].data.searched
    assert searched.previous == MAILBOX_TURN[0]["content"] and not searched.rewritten
    assert searched.question == FOLLOW_UP and with_history[-1].data.question == FOLLOW_UP
    assert "searched" not in [e.kind for e in standalone] and standalone[-1].data.searched is None
    entries = [json.loads(line) for line in open(settings.audit, encoding="utf-8")]
    assert "searched" not in entries[0] and entries[1]["searched"]["previous"] == MAILBOX_TURN[0]["content"]


def test_a_follow_up_is_rewritten_shown_before_the_sources_and_audited_next_to_the_original(settings):
    settings.rewrite = True
    with FakeLlamaServer(template=GEMMA_TEMPLATE, replies=['"Welche Quota bekommt die Mailbox?"'],
                         answer=["2 GB [1]."]) as server:
        settings.server = server.url
        events = list(core.ask(FOLLOW_UP, settings, MAILBOX_TURN))
    kinds = [e.kind for e in events]
    assert kinds[:2] == ["searched", "sources"] and kinds[-1] == "done"
    searched, done = events[0].data, events[-1].data
    assert searched.rewritten and searched.question == "Welche Quota bekommt die Mailbox?"
    assert searched.original == FOLLOW_UP and done.question == searched.question and done.searched is searched
    (rewrite,) = server.structured()
    assert "Letzte Frage: Und wie viel Platz hat sie?" in rewrite["body"]["messages"][-1]["content"]
    assert rewrite["body"]["temperature"] == 0 and rewrite["body"]["seed"] == llm.SEED
    assert "Frage: Welche Quota bekommt die Mailbox?" in server.completions()[0]["body"]["messages"][1]["content"]
    assert done.retrieval.sources[0].path == "mail/mailbox-anlegen.md"
    entry = json.loads(open(settings.audit, encoding="utf-8").read())
    assert entry["question"] == searched.question and entry["searched"]["original"] == FOLLOW_UP
    assert "rewrite_s" in entry["timings"] and done.as_json()["searched"]["rewritten"] is True


def test_expansion_searches_the_phrases_too_and_embeds_everything_in_one_call(settings, tmp_path, monkeypatch):
    log = tmp_path / "embed.log"
    monkeypatch.setenv("FAKE_EMBED_LOG", str(log))
    settings.retrieve_only, settings.top_k = True, 3
    question = "Wie arbeite ich von zu Hause aus?"  # no word of the wiki
    plain = core.run(question, settings)
    phrases = ["VPN-Client starten", "VPN anmelden", "VPN Firmennetz"]
    with FakeLlamaServer(replies=[json.dumps(phrases)]) as server:
        settings.server, settings.expand = server.url, "phrases"
        events = list(core.ask(question, settings))
    done = events[-1].data
    # a how-to question: the one chooser's choice comes with the sources, also without the model
    assert [e.kind for e in events] == ["searched", "sources", "chosen", "done"]
    assert server.completions() == []
    assert done.searched.expansions == phrases and done.searched.weights == [1.0, 0.5, 0.5, 0.5]
    (call,) = server.structured()
    assert call["body"]["response_format"]["json_schema"]["schema"]["type"] == "array"
    assert done.retrieval.sources[0].path == "netzwerk/vpn.md" and "expanded" in done.retrieval.sources[0].ranks
    assert plain.retrieval.sources[0].path != "netzwerk/vpn.md"
    assert len(log.read_text().splitlines()) == 2  # one llama-embedding call each: question + phrases together
    assert done.as_json()["searched"]["expansions"] == phrases and "expand_s" in done.timings


def test_the_model_s_choice_among_the_first_results_moves_it_up(settings):
    settings.retrieve_only, settings.top_k = True, 3
    plain = core.run(QUESTION, settings)
    with FakeLlamaServer(replies=["[3]"]) as server:
        settings.server, settings.expand = server.url, "choose"
        done = core.run(QUESTION, settings)
    (call,) = server.structured()  # "choose" writes no phrases: one call, the numbered headings
    listed = call["body"]["messages"][1]["content"].split("\n")
    assert listed[:3] == [f"Nachricht: {QUESTION}", "", "Abschnitte:"] and listed[3].startswith("1. ")
    (chosen,) = [s for s in done.retrieval.sources if "chosen" in s.ranks]
    assert chosen.ranks["chosen"] == 1 and listed[5] == f"3. {wiki_words.label(chosen.heading)}"
    position = lambda retrieval: [s.doc_id for s in retrieval.sources].index(chosen.doc_id)  # noqa: E731
    assert position(done.retrieval) < position(plain.retrieval)  # one more ranking, not a new order
    assert done.searched.chosen == [wiki_words.label(chosen.heading)]
    assert done.searched.expansions == []
    assert "choose_s" in done.timings


def test_an_unreachable_server_leaves_the_question_as_it_is_with_one_warning(settings):
    settings.retrieve_only, settings.expand, settings.server = True, "phrases", "http://127.0.0.1:9"
    events = list(core.ask(QUESTION, settings))
    assert [e.kind for e in events] == ["searched", "sources", "chosen", "done"]
    searched = events[0].data
    assert "nicht erreichbar" in searched.warning and searched.expansions == [] and not searched.rewritten
    plain = core.run(QUESTION, dataclasses.replace(settings, expand=None))
    assert [s.doc_id for s in events[-1].data.retrieval.sources] == [s.doc_id for s in plain.retrieval.sources]


# -- how-to answers: the procedure's steps verbatim (rag/answer/prompt.py steps_answer) --------------------
PROCEDURE_WIKI = {
    "mail/mailbox-anlegen.md": """\
        # Mailbox anlegen

        ## Mailbox anlegen mit cyradm

        1. Per SSH auf dem Mailserver anmelden (siehe Handbuch [7]).
        2. `cyradm --user cyrus localhost` starten. Das Passwort steht im Tresor.
        3. Die Mailbox mit `cm user/vorname.nachname` anlegen.
        4. Mit `sq user/vorname.nachname 2048000` die Quota setzen.
        """,
    "netzwerk/vpn.md": "# VPN\n\nDas VPN verbindet das Notebook mit dem Firmennetz.\n",
}


@pytest.fixture
def procedure_settings(fake_embedding, tmp_path, monkeypatch):
    return indexed(PROCEDURE_WIKI, fake_embedding, tmp_path, monkeypatch)


def indexed(pages, fake_embedding, tmp_path, monkeypatch):
    """Settings of the core over an index of `pages` ({path: text}), with the fake embedder."""
    from conftest import write_wiki
    wiki = write_wiki(tmp_path / "procedure-wiki", pages)
    result = run_script("build_index.py", "--wiki", wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    for key, value in fake_embedding.items():
        monkeypatch.setenv(key, value)
    return core.Settings(db=fake_embedding["RAG_DB"], model=fake_embedding["RAG_EMBED_MODEL"],
                         embedding_bin=fake_embedding["LLAMA_EMBEDDING"], audit=fake_embedding["RAG_AUDIT"])


def test_a_how_to_answer_is_the_procedure_s_steps_verbatim_after_the_check(procedure_settings):
    procedure_settings.answer_threshold = 0.5
    with checking_server() as server:
        procedure_settings.server = server.url
        events = list(core.ask("Wie lege ich mit cyradm eine Mailbox an?", procedure_settings))
        checks, answers = server.checks(), server.completions()
    done = events[-1].data
    assert done.answered_by == "source" and len(checks) == 1 and answers == []  # the model only checked
    lines = done.text.split("\n")
    assert lines[0] == "Laut Quelle [1]:" and lines[1] == "1. Per SSH auf dem Mailserver anmelden (siehe Handbuch [7])."
    assert lines[2] == "2. `cyradm --user cyrus localhost` starten. Das Passwort steht im Tresor."  # whole, verbatim
    assert lines[4] == "4. Mit `sq user/vorname.nachname 2048000` die Quota setzen." and len(lines) == 5
    assert done.citations == {"cited": [1], "valid": [1], "unknown": []}  # the wiki's own "[7]" is no citation
    assert done.timings["first_token_s"] >= 0
    from fake_server import prompt_tokens  # no answer request: what was read before the lines is the check
    assert done.timings["read_before_first_token"] == prompt_tokens(checks[0]["body"]) > 0
    assert all(s["verdict"] == "gestützt" for s in done.support if "Handbuch" not in s["text"])
    kinds = ["sources", "chosen", "asking", "piece", "checks", "done"]
    assert [e.kind for e in events] == kinds and events[2].data == "check"
    assert done.as_json()["answered_by"] == "source"


def test_with_steps_model_the_model_writes_the_how_to_answer(procedure_settings):
    procedure_settings.steps = "model"
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Laut Quelle [1]:\n1. SSH"]) as server:
        procedure_settings.server = server.url
        done = core.run("Wie lege ich mit cyradm eine Mailbox an?", procedure_settings)
        (request,) = server.completions()
    assert done.answered_by == "model" and request["body"]["messages"][-1]["content"].startswith("Laut Quelle [1]:")


def test_a_fact_question_is_still_answered_by_the_model(procedure_settings):
    procedure_settings.no_floor = True
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Die Quota ist 2048000 KB [1]."]) as server:
        procedure_settings.server = server.url
        done = core.run("Welche Quota bekommt eine neue Mailbox?", procedure_settings)
    assert done.answered_by == "model" and done.text == "Die Quota ist 2048000 KB [1]."


def checking_server():
    """A fake server with a chat template that says "ja" to the check (an answer request would fail the test)."""
    return FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["FALSCH: das Modell schrieb die Schritte"], p_yes=0.9)


# -- the model judges the section that will be printed (rag/answer/judge.py) ---------------------------------
@pytest.mark.parametrize("p_yes", [0.9, 0.1])
def test_with_a_section_threshold_the_check_reads_only_the_finalist_it_judges(procedure_settings, monkeypatch, p_yes):
    from rag.answer import answerable
    monkeypatch.setattr(answerable, "section_threshold", lambda model, path=None: 0.5)
    procedure_settings.answer_threshold, procedure_settings.no_floor = 0.5, True
    with checking_server() as server:
        server.p_yes = p_yes
        procedure_settings.server = server.url
        events = list(core.ask("Wie lege ich mit cyradm eine Mailbox an?", procedure_settings))
        checks, answers = server.checks(), server.completions()
    done = events[-1].data
    asked = [c["body"]["messages"][1]["content"] for c in checks]
    assert answers == [] and all("<<<QUELLE [1]" in a and "<<<QUELLE [2]" not in a for a in asked)
    assert done.answerable["on"] == "section" and [j["n"] for j in done.answerable["judged"]][0] == 1
    if p_yes > 0.5:  # the first finalist is accepted: one check, its steps verbatim
        assert len(checks) == 1 and done.answered_by == "source" and done.text.startswith("Laut Quelle [1]:")
    else:  # no finalist is accepted: every one was asked, then the refusal and the runners-up
        assert len(checks) == len(done.answerable["judged"]) >= 1 and done.answerable["refused"]
        assert done.text == "Dazu habe ich keine Information." and "piece" not in [e.kind for e in events]
    from fake_server import prompt_tokens
    assert done.timings["read_before_first_token"] == sum(prompt_tokens(c["body"]) for c in checks)


@pytest.mark.parametrize("sure, close", [(0.95, True), (0.5, False), (None, False)])
def test_a_section_accepted_only_just_is_printed_with_a_doubt(procedure_settings, monkeypatch, sure,
                                                             close):
    from rag.answer import answerable
    monkeypatch.setattr(answerable, "section_threshold", lambda model, path=None: 0.5)
    monkeypatch.setattr(answerable, "section_sure", lambda model, path=None: sure)
    procedure_settings.answer_threshold = 0.5
    with checking_server() as server:  # P(ja) 0.9
        procedure_settings.server = server.url
        done = list(core.ask("Wie lege ich mit cyradm eine Mailbox an?", procedure_settings))[-1].data
    assert done.answered_by == "source" and done.answerable["close"] is close
    assert done.why.endswith("vielleicht nicht") is close


def test_a_judged_how_to_answer_says_it_checks_the_section(procedure_settings, monkeypatch):
    from rag.answer import answerable
    from rag.doors import terminal
    monkeypatch.setattr(answerable, "section_threshold", lambda model, path=None: 0.5)
    procedure_settings.answer_threshold = 0.5
    with checking_server() as server:
        procedure_settings.server = server.url
        events = list(core.ask("Wie lege ich mit cyradm eine Mailbox an?", procedure_settings))
    asking = [e.data for e in events if e.kind == "asking"]
    assert asking == ["section"]
    assert terminal.status_line(2, "section") == "2 Quellen gefunden · prüfe, ob der beste Abschnitt die Frage beantwortet …"


def test_a_fact_answer_s_model_reads_only_two_sources_and_the_rest_stay_runners_up(settings):
    settings.no_floor = True
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Die Quota ist 2 GB [1]."]) as server:
        settings.server = server.url
        done = core.run("Welche Quota bekommt eine neue Mailbox?", settings)
        (request,) = server.completions()
    sent = request["body"]["messages"][1]["content"]
    assert len(done.retrieval.sources) > core.FACT_SOURCES == 2
    read = [n for n in range(1, len(done.retrieval.sources) + 1) if f"<<<QUELLE [{n}]" in sent]
    assert read[0] == 1 and len(read) == 2 and done.prompt.count("<<<ENDE QUELLE") == 2  # numbers as listed
    assert all(e["n"] > 1 for e in done.see_also) and len(done.as_json()["sources"]) == len(done.retrieval.sources)
    settings.fact_sources = 4  # --fact-sources 4: every source, as before
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=["Die Quota ist 2 GB [1]."]) as server:
        settings.server = server.url
        assert core.run("Welche Quota bekommt eine neue Mailbox?", settings).prompt.count("<<<ENDE QUELLE") == \
            len(done.retrieval.sources)


def test_a_model_stuck_in_a_loop_is_cut_after_three_repeats_and_kept_once(settings):
    settings.no_floor = True
    loop = ["Die Quota ist 2 GB [1]"] + [" und 2 GB [1]"] * 40
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=loop) as server:
        settings.server = server.url
        done = core.run("Welche Quota bekommt eine neue Mailbox?", settings)
    assert done.text.startswith("Die Quota ist 2 GB") and done.text.count("und 2 GB") == 1, done.text


@pytest.mark.parametrize("said, shown", [
    (["Die Quota ist 2 GB [1].", " Dazu habe ich keine Information."], "Die Quota ist 2 GB [1]."),  # contradicts itself
    (["Dazu habe ich keine Information."], "Dazu habe ich keine Information."),  # a refusal stays one
    (["Die Quota ist 2 GB [QUELLE [1]]."], "Die Quota ist 2 GB [1]."),  # a citation in the model's own form
    (["Die Quota ist 2 GB [Quelle 1]."], "Die Quota ist 2 GB [1]."),
    (["Die Quota ist 2 GB [1].", " [ENDE QUELLE [1]]"], "Die Quota ist 2 GB [1]."),  # its delimiter
    (["Die Quota ist 2 GB [1]. [Ende", " Quelle 1]"], "Die Quota ist 2 GB [1]."),
    # the fact task's words copied after the answer; its number, where the answer cites nothing
    (["Die Quota ist 2 GB [1].", " Nummer der Quelle: [1]"], "Die Quota ist 2 GB [1]."),
    (["Die Quota ist 2 GB. Die Nummer der", " Quelle ist [1]."], "Die Quota ist 2 GB [1]."),
    (["Die Quota ist 2 GB [1]. Dies ist die Nummer der Quelle [1]."], "Die Quota ist 2 GB [1]."),
])
def test_an_answer_that_says_something_and_then_refuses_keeps_what_it_said(settings, said, shown):
    settings.no_floor = True
    with FakeLlamaServer(template=GEMMA_TEMPLATE, answer=said) as server:
        settings.server = server.url
        done = core.run("Welche Quota bekommt eine neue Mailbox?", settings)
    assert done.text == shown
    assert not [s for s in done.support if s["verdict"] == "nicht gestützt"]  # no statement "Dazu habe ich …" left


NOTE_FIRST = """\
    # Mailbox anlegen

    ## Mailbox anlegen mit cyradm

    !!! note "Hinweis"
        In dieser Anleitung legt die IT eine Mailbox für neue Mitarbeitende an.

    1. Per SSH auf dem Mailserver anmelden.
    2. Die Mailbox mit `cm user/vorname.nachname` anlegen.
    """


def test_a_note_before_the_steps_is_said_once_and_the_evidence_is_a_step(fake_embedding, tmp_path,
                                                                         monkeypatch):
    pages = {**PROCEDURE_WIKI, "mail/mailbox-anlegen.md": NOTE_FIRST}
    settings = indexed(pages, fake_embedding, tmp_path, monkeypatch)
    with FakeLlamaServer() as server:
        settings.server = server.url
        done = core.run("Wie lege ich mit cyradm eine Mailbox an?", settings)
    lines = done.text.split("\n")
    assert done.answered_by == "source" and lines[1].startswith("Hinweis: In dieser"), lines
    assert [e["text"] for e in done.evidence] == [lines[2]], done.evidence  # step 1, not the note


def test_the_product_ranks_with_the_second_stage(settings, monkeypatch):
    from rag.search import finalists
    calls = []
    real = finalists.rerank

    def spy(*args, **kwargs):
        calls.append(len(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(finalists, "rerank", spy)
    settings.retrieve_only = True
    done = core.run("Wie lege ich eine Mailbox an?", settings)
    assert calls and calls[0] >= len(done.retrieval.sources)  # it saw the whole fused list
    sections = [(s.path, s.heading) for s in done.retrieval.sources]
    assert len(sections) == len(set(sections))  # one chunk per section
