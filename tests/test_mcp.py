"""`ask_rag.py --mcp` (rag/doors/mcp_server.py) through the official MCP SDK's client, which starts the
server as a subprocess, and once as raw JSON-RPC lines on stdin."""
import asyncio
import json
import os
import sys

import pytest

from conftest import ROOT, run_script
from fake_server import FakeLlamaServer
from timeouts import RUN


@pytest.fixture
def env(fake_embedding, small_wiki):
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    return {**os.environ, **fake_embedding}


def session_run(env, steps, args=(), cwd=ROOT):
    """Start the server with the SDK's stdio client, initialize, run `steps(session)`, return what it returns."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main():
        params = StdioServerParameters(command=sys.executable, args=[str(ROOT / "ask_rag.py"), "--mcp", *args],
                                       env=env, cwd=str(cwd))
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                info = await session.initialize()
                return info.model_dump(by_alias=True, mode="json"), await steps(session)

    return asyncio.run(asyncio.wait_for(main(), RUN))


def dump(result):
    return result.model_dump(by_alias=True, mode="json")


def test_sdk_client_lists_the_tools_with_the_folders(env):
    async def steps(session):
        return dump(await session.list_tools())
    info, listed = session_run(env, steps)
    assert info["serverInfo"]["name"] == "rag-ohne-magie" and "tools" in info["capabilities"]
    tools = {t["name"]: t for t in listed["tools"]}
    assert set(tools) == {"search_wiki", "ask_wiki", "rate_answer"}
    assert tools["search_wiki"]["inputSchema"]["required"] == ["query"]
    assert tools["rate_answer"]["inputSchema"]["required"] == ["id", "vote"]
    assert "mail/, netzwerk/" in tools["ask_wiki"]["inputSchema"]["properties"]["folder"]["description"]


def test_search_wiki_returns_ranked_chunks_with_text(env):
    async def steps(session):
        return [dump(await session.call_tool("search_wiki", {"query": "Wie lege ich eine Mailbox an?", "k": 2})),
                dump(await session.call_tool("search_wiki", {"query": "Mailbox", "k": 3, "folder": "netzwerk"}))]
    _, (mail, netz) = session_run(env, steps)
    chunks = mail["structuredContent"]["chunks"]
    assert [c["n"] for c in chunks] == [1, 2] and {c["path"] for c in chunks} == {"mail/mailbox-anlegen.md"}
    assert any("cm user/vorname.nachname" in c["text"] for c in chunks) and all(c["heading"] for c in chunks)
    assert json.loads(mail["content"][0]["text"]) == mail["structuredContent"] and not mail["isError"]
    assert {c["path"] for c in netz["structuredContent"]["chunks"]} == {"netzwerk/vpn.md"}


def test_ask_wiki_answers_with_sources_and_checks(env):
    async def steps(session):
        return dump(await session.call_tool("ask_wiki", {"question": "Wie lege ich eine Mailbox an?"}))
    with FakeLlamaServer(answer=["Mit cm", " [2]."]) as fake:
        _, result = session_run({**env, "LLAMA_SERVER_URL": fake.url}, steps)
    out = result["structuredContent"]
    assert out["answer"] == "Mit cm [2]." and out["checks"]["citations"]["valid"] == [2] and out["sources"]
    runners_up = [{"n": 1, "path": "mail/mailbox-anlegen.md", "heading": "Mailbox anlegen › Quota"},
                  {"n": 3, "path": "drucker.md", "heading": "Drucker"}]  # uncited, each another section
    assert out["see_also"] == out["checks"]["see_also"] == runners_up
    assert out["see_also_line"] == ("Siehe auch: [1] mail/mailbox-anlegen.md › Mailbox anlegen › Quota, "
                                    "[3] drucker.md › Drucker")  # the line as the terminal shows it


def test_expected_failures_are_tool_errors_in_german(env):
    async def steps(session):
        results = [dump(await session.call_tool("search_wiki", {"query": "VPN", "folder": "gibtsnicht"}))]
        for bad in ({"query": "VPN", "k": 0}, {"query": ""}, {}):
            try:
                await session.call_tool("search_wiki", bad)
                results.append(None)
            except Exception as exc:  # the SDK raises the JSON-RPC error (MCPError / McpError by version)
                results.append(str(exc))
        return results
    _, (folder, k0, empty, missing) = session_run(env, steps)
    assert folder["isError"] and folder["content"][0]["text"].startswith("Fehler: unter gibtsnicht/ liegt keine Seite")
    assert "k muss eine ganze Zahl" in k0 and "query fehlt" in empty and "query fehlt" in missing


def test_raw_lines_get_json_rpc_replies_and_stdout_has_nothing_else(env):
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "ping"}, {"jsonrpc": "2.0", "id": 3, "method": "gibtsnicht"}]
    stdin = "\n".join(map(json.dumps, lines)) + "\nkein json\n"
    result = run_script("ask_rag.py", "--mcp", env=env, input=stdin)
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0 and [r.get("id") for r in replies] == [1, 2, 3, None]
    assert replies[0]["result"]["protocolVersion"] == "2024-11-05" and replies[1]["result"] == {}
    assert replies[2]["error"]["code"] == -32601 and replies[3]["error"]["code"] == -32700
    assert result.stderr.startswith("MCP-Server bereit (stdio)")


def test_without_an_index_it_says_so_and_serves(env, tmp_path):
    """Issue 28: a missing index no longer ends the server (the client saw only "Connection closed");
    it says so on stderr, and the tools answer with the line (next test)."""
    result = run_script("ask_rag.py", "--mcp", env={**env, "RAG_DB": str(tmp_path / "fehlt.db")},
                        input="")
    assert result.returncode == 0 and result.stdout == "" and "Traceback" not in result.stderr
    warning, ready = result.stderr.strip().splitlines()
    assert warning.startswith("Warnung: Index ") and "python3 build_index.py" in warning
    assert ready.startswith("MCP-Server bereit (stdio)")


def client_env(env):
    """What a client's config passes (Claude Desktop's "env"): the models, no RAG_DB; the SDK adds HOME, PATH …"""
    return {name: env[name] for name in ("LLAMA_EMBEDDING", "RAG_EMBED_MODEL", "RAG_AUDIT")}


def test_client_in_another_folder_finds_the_index_by_db_flag(env, tmp_path):
    elsewhere = tmp_path / "woanders"
    elsewhere.mkdir()

    async def steps(session):
        return dump(await session.call_tool("search_wiki", {"query": "Wie lege ich eine Mailbox an?", "k": 1}))
    _, found = session_run(client_env(env), steps, args=["--db", env["RAG_DB"]], cwd=elsewhere)
    assert not found["isError"]
    assert [c["path"] for c in found["structuredContent"]["chunks"]] == ["mail/mailbox-anlegen.md"]


def test_client_in_another_folder_without_db_gets_a_tool_error(env, tmp_path):
    elsewhere = tmp_path / "woanders"
    elsewhere.mkdir()

    async def steps(session):
        return [dump(await session.call_tool("search_wiki", {"query": "VPN"})),
                dump(await session.call_tool("ask_wiki", {"question": "Wie richte ich VPN ein?"}))]
    _, results = session_run(client_env(env), steps, cwd=elsewhere)
    for result in results:
        (line,) = [c["text"] for c in result["content"]]
        assert result["isError"] and line.startswith("Fehler: Index knowledge.db fehlt")
        assert f"gesucht in {elsewhere}" in line and "--db oder RAG_DB mit absolutem Pfad" in line
