"""rag/doors/flags.py: the flags build_index.py, ask_rag.py and evaluate.py share, and ask_rag.py's own."""
import argparse

import pytest

from rag import core
from rag.doors import flags


def shared(side, *argv):
    parser = argparse.ArgumentParser()
    flags.add_index(parser)
    flags.add_embedding(parser, side=side)
    flags.add_embed_server(parser, side=side)
    return parser.parse_args(list(argv)), {action.dest: action.help for action in parser._actions}


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("RAG_DB", "RAG_EMBED_URL", "LLAMA_SERVER_URL", "RAG_EMBED_MODEL_NAME", "RAG_API_KEY",
                 "RAG_EMBED_MODEL", "LLAMA_EMBEDDING"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_shared_flags_take_their_defaults_from_the_environment(clean_env):
    clean_env.setenv("RAG_DB", "/srv/wiki.db")
    clean_env.setenv("RAG_API_KEY", "geheim")
    clean_env.setenv("RAG_EMBED_MODEL", "/m/e5.gguf")
    clean_env.setenv("LLAMA_EMBEDDING", "/bin/llama-embedding")
    for side in ("question", "index"):
        args, _ = shared(side)
        assert (args.db, args.api_key, args.model, args.embedding_bin) == (
            "/srv/wiki.db", "geheim", "/m/e5.gguf", "/bin/llama-embedding")
        assert shared(side, "--db", "x.db")[0].db == "x.db"


def test_db_without_environment_is_knowledge_db_or_none_for_evaluate(clean_env):
    parser = argparse.ArgumentParser()
    flags.add_index(parser, help="Index (RAG_DB)", from_env=False)
    assert parser.parse_args([]).db is None
    assert shared("index")[0].db == "knowledge.db"


@pytest.mark.parametrize("env, question, index", [
    ({}, None, None),
    ({"LLAMA_SERVER_URL": "http://h:8080"}, None, "http://h:8080"),  # the question side: rag/core.py uses --server
    ({"LLAMA_SERVER_URL": "http://h:8080", "RAG_EMBED_URL": "http://e:9000"}, "http://e:9000", "http://e:9000"),
])
def test_embed_url_is_rag_embed_url_else_the_answer_server(clean_env, env, question, index):
    for name, value in env.items():
        clean_env.setenv(name, value)
    assert shared("question")[0].embed_url == question
    assert shared("index")[0].embed_url == index


def test_each_side_explains_the_flag_for_its_script(clean_env):
    _, asking = shared("question")
    _, building = shared("index")
    assert "Chat- und Embedding-Server" in asking["api_key"] and "des Embedding-Servers" in building["api_key"]
    assert "Standard: --server" in asking["embed_url"] and "sonst LLAMA_SERVER_URL" in building["embed_url"]
    assert asking["db"] == building["db"] == flags.DB_HELP


def test_parse_ask_joins_kinds_strips_v1_and_builds_the_settings(clean_env):
    args = flags.parse_ask(["--pii-kinds", "-ADRESSE", "--server", "http://h:8080/v1/", "--top-k", "2", "Wie?"])
    assert args.question == "Wie?" and args.server == "http://h:8080" and "ADRESSE" not in args.pii_kinds
    settings = flags.settings_from(args)
    assert isinstance(settings, core.Settings) and settings.top_k == 2 and settings.server == "http://h:8080"
    assert flags.settings_from(flags.parse_ask(["--no-audit", "x"])).audit == ""


def test_parse_ask_rejects_what_argparse_cannot_check(clean_env, capsys):
    clean_env.setenv("RAG_STEPS", "beides")
    with pytest.raises(SystemExit) as exit_:
        flags.parse_ask(["Wie?"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "Fehler: RAG_STEPS='beides' gibt es nicht – source oder model angeben\n"


SWITCHES = {"RAG_ANN": "ann", "RAG_EXPAND": "expand", "RAG_REWRITE": "rewrite",
            "RAG_AUDIT_NO_TEXT": "audit_no_text", "RAG_TRUST_PROXY_HEADER": "trust_proxy_header"}


@pytest.mark.parametrize("value, on", [("1", True), ("0", False), ("yes", False), ("", False)])
def test_only_1_in_its_environment_variable_turns_a_switch_on(monkeypatch, value, on):
    for name in SWITCHES:
        monkeypatch.delenv(name, raising=False)
    for name, dest in SWITCHES.items():
        monkeypatch.setenv(name, value)
        args = flags.parse_ask(["Wie?"])
        assert bool(getattr(args, dest)) is on, name
        assert not any(getattr(args, other) for other in SWITCHES.values() if other != dest)
        monkeypatch.delenv(name)
