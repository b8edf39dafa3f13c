"""One question through all four doors: the terminal (--json), the page (SSE), /v1/chat/completions
and MCP (ask_wiki). Each door only turns the core's events into its own format, so the sources
and the checks must be the same everywhere (rag/doors/common.py, rag/doors/web.py, rag/doors/mcp_server.py).

Fakes: the keyword-count llama-embedding of conftest and the llama-server of fake_server.py. With
a fake llama-embedding there is no llama-server next to it, so --serve and --mcp embed with the
configured embedder (no warm one), as a reader's own llama-embedding would.
"""
import asyncio
import os
import sys

import pytest
import requests

from conftest import ROOT, load_json, run_script
from fake_server import FakeLlamaServer
from serving import Serving, sse_events
from timeouts import REQUEST, RUN

QUESTION = "Wie lege ich eine Mailbox an?"
ANSWER = ["Die IT legt sie mit cm an", " [2]; die Quota ist 5 GB [1]."]  # 5 GB: no source says it


@pytest.fixture
def env(fake_embedding, small_wiki):
    result = run_script("build_index.py", "--wiki", small_wiki, env=fake_embedding)
    assert result.returncode == 0, result.stderr
    return {**os.environ, **fake_embedding}


def without_timings(result):
    """The result without what differs per answer: its timings and its id (each answer has its own)."""
    return {k: v for k, v in result.items() if k not in ("timings", "id")}


def mcp_call(env, tool, arguments):
    """Call one tool through the official SDK's client, which starts `ask_rag.py --mcp` itself."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main():
        params = StdioServerParameters(command=sys.executable, args=[str(ROOT / "ask_rag.py"), "--mcp"], env=env,
                                       cwd=str(ROOT))
        async with stdio_client(params) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                result = await session.call_tool(tool, arguments)
                return result.model_dump(by_alias=True, mode="json")

    return asyncio.run(asyncio.wait_for(main(), RUN))


def test_four_doors_give_the_same_sources_and_checks(env):
    with FakeLlamaServer(answer=ANSWER) as fake:
        env["LLAMA_SERVER_URL"] = fake.url
        cli = run_script("ask_rag.py", "--json", QUESTION, env=env)
        assert cli.returncode == 0, cli.stderr
        cli = load_json(cli.stdout)
        with Serving(env) as server:
            with requests.post(server.url + "/api/ask", json={"question": QUESTION}, stream=True,
                               timeout=REQUEST) as r:
                page = sse_events(r)
            api = requests.post(server.url + "/v1/chat/completions", timeout=REQUEST,
                                json={"model": "wiki", "messages": [{"role": "user", "content": QUESTION}]}).json()
        mcp = mcp_call(env, "ask_wiki", {"question": QUESTION})
    assert cli["llm_called"] and cli["citations"]["valid"] == [1, 2] and cli["unsupported"] == ["5 GB"]
    page_done = page[-1][1]
    page_checks = next(data for kind, data in page if kind == "checks")
    results = {"page": page_done, "api": api["rag"], "mcp": mcp["structuredContent"]}
    for door, result in results.items():
        assert without_timings({k: v for k, v in result.items() if k in cli}) == without_timings(cli), door
        assert result["id"].startswith("a-") and result["id"] != cli["id"], door  # every door, its own
        assert result["checks"] == page_checks, door
    assert page_checks["citations"] == cli["citations"] and page_checks["unsupported"] == cli["unsupported"]
    page_sources = next(data for kind, data in page if kind == "sources")["sources"]
    assert [(s["path"], s["heading"]) for s in page_sources] == [(s["path"], s["heading"]) for s in cli["sources"]]
    assert len(fake.completions()) == 4  # one model call per door, none more


def test_the_refusal_is_the_same_through_every_door(env):
    question = "Was gibt es heute in der Kantine?"
    with FakeLlamaServer() as fake:
        env["LLAMA_SERVER_URL"] = fake.url
        cli = load_json(run_script("ask_rag.py", "--json", question, env=env).stdout)
        with Serving(env) as server:
            with requests.post(server.url + "/api/ask", json={"question": question}, stream=True,
                               timeout=REQUEST) as r:
                page = sse_events(r)
            api = requests.post(server.url + "/v1/chat/completions", timeout=REQUEST,
                                json={"messages": [{"role": "user", "content": question}]}).json()
        mcp = mcp_call(env, "ask_wiki", {"question": question})["structuredContent"]
    assert not cli["llm_called"] and cli["answer"] == "Dazu habe ich keine Information."
    for result in (page[-1][1], api["rag"], mcp):
        assert result["no_info"] and result["checks"] is None and not result["llm_called"]
        assert result["sources"] == cli["sources"]
    assert [kind for kind, _ in page] == ["sources", "done"] and fake.completions() == []
