"""What several measurements share: JSON Lines, fact matching, ask_rag.py and build_index.py as processes.

    has_facts("Die Frist: 3 Monate [1].", [["3 Monate", "drei Monate"]]) -> True
    spread(list(range(10)), 3) -> [0, 3, 6]

Does not handle: scoring (each measurement's own module does that).
"""
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from rag import config
from rag.answer import prompt
from rag.models import llm
from rag.models.server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]  # the repository (ask_rag.py, build_index.py)

DEPTH = 10  # ranks looked at (MRR@10)
ASK_TIMEOUT = 600  # seconds one ask_rag.py run may take (2 cores: ~15 s typical)
MAX_WRONG_REFUSALS = 0.05  # --tune: at most this share of in-wiki questions may be refused


def read_jsonl(path, name, expected):
    """The objects of a JSON Lines file, or one German line naming the file and what was expected."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as exc:
        raise SystemExit(f"Fehler: {name} {path} nicht lesbar ({exc}) – {expected} erwartet.")


def load_jsonl(path, field, what):
    """The items of a JSON Lines file; each must have "question" and a list in `field` (else one German line)."""
    items = read_jsonl(path, "Fragen-Datei", "JSON Lines")
    for item in items:
        if "question" not in item or not isinstance(item.get(field), list):
            raise SystemExit(f"Fehler: {path}: jede Zeile braucht \"question\" und \"{field}\" ({what}).")
    return items


def spread(items, limit):
    """`limit` items spread evenly over the list (deterministic). Example: 10 items, limit 3 -> items 0, 3, 6."""
    if not limit or limit >= len(items):
        return items
    return [items[i * len(items) // limit] for i in range(limit)]


def fold(text):
    """Case and whitespace folded. Example: "Drei\u00a0 Monate" -> "drei monate" """
    return " ".join(text.casefold().split())


def contains_fact(answer, fact):
    """Is `fact` in `answer` (folded), not glued to a preceding word or, for numbers, to more digits?

    Example: contains_fact("Die Frist: 3 Monaten.", "3 Monate") -> True; contains_fact("18 Uhr", "8") -> False
    """
    f = re.escape(fold(fact))
    tail = r"(?!\d)" if fact[-1:].isdigit() else (r"(?!\w)" if len(fact) <= 3 else "")
    return re.search(r"(?<!\w)" + f + tail, fold(answer)) is not None


def has_facts(answer, groups):
    """Every group matched by one of its alternatives. Example: ("2 GB [1]", [["2 GB", "2048000"]]) -> True"""
    return all(any(contains_fact(answer, alt) for alt in group) for group in groups)


def ask_one(question, db, server, extra, env):
    """Run ask_rag.py --json as a reader does; returns (parsed JSON or None, wall seconds, stderr)."""
    cmd = [sys.executable, str(ROOT / "ask_rag.py"), "--json", "--no-audit", "--db", db, *extra, question]
    started = time.perf_counter()
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=ASK_TIMEOUT, cwd=ROOT,
                                env={**env, "LLAMA_SERVER_URL": server})
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - started, f"Zeitlimit {ASK_TIMEOUT} s überschritten"
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        return None, seconds, result.stderr.strip()
    try:
        return json.loads(result.stdout), seconds, ""
    except ValueError:
        return None, seconds, "keine JSON-Ausgabe"


def fresh_index(tmp, args):
    """Build an index of --wiki (default wiki/) with the default embedder into tmp; returns its path."""
    db = str(Path(tmp) / "knowledge.db")
    print(f"[answers] baue frischen Index über {args.wiki} mit {Path(args.model).name} …", file=sys.stderr, flush=True)
    env = {**os.environ, "LLAMA_EMBEDDING": args.embedding_bin, "RAG_EMBED_MODEL": args.model}
    result = subprocess.run([sys.executable, str(ROOT / "build_index.py"), "--rebuild", "--quiet", "--db", db,
                             "--wiki", args.wiki],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        raise SystemExit(f"Fehler: build_index.py endete mit Code {result.returncode}: "
                         f"{result.stderr.strip().splitlines()[-1:] or ''}")
    return db


def start_answer_server(args, tmp, label="answers"):
    """Start llama-server with the answer model (--llm-model, else the set-up one); one German line if it fails."""
    model = args.llm_model or config.default_llm_model()
    print(f"[{label}] starte llama-server mit {Path(model).name} …", file=sys.stderr, flush=True)
    try:
        server = ServerProcess(model=model, log_path=str(Path(tmp) / "server.log")).start()
    except RuntimeError as exc:
        raise SystemExit(f"Fehler: {exc}")
    llm.warm(server.url, prompt.SYSTEM)  # the first question reads no more than a later one (rag/models/llm.py)
    return server


def llm_info(url):
    """The answer server's /props as a dict ({"model": …}); one German line if it does not answer."""
    from rag.models import llm
    try:
        return llm.server_info(url)
    except llm.LLMError as exc:
        raise SystemExit(f"Fehler: {exc}")


def calibrate(url):
    """The answer server's reading speed from one request without the prompt cache (rag/models/llm.py
    prompt_speed): {"prompt_n", "prompt_ms", "tokens_per_s"}; None when the server cannot tell."""
    from rag.models import llm
    try:
        return llm.prompt_speed(url)
    except llm.LLMError:
        return None


def speed_line(calibration):
    """Example: {"prompt_n": 250, "prompt_ms": 1470.6, "tokens_per_s": 170.0}
    -> "Lesegeschwindigkeit des Antwort-Servers (Kalibrierung): 170.0 Tokens/s (250 Tokens ohne Prompt-Cache in 1471 ms)" """
    c = calibration
    speed = f"{c['tokens_per_s']:.1f} Tokens/s ({c['prompt_n']} Tokens ohne Prompt-Cache in {c['prompt_ms']:.0f} ms)" \
        if c else "– (der Server meldet keine timings)"
    return f"Lesegeschwindigkeit des Antwort-Servers (Kalibrierung): {speed}"


@contextlib.contextmanager
def answer_server(args, tmp, label="answers"):
    """The URL of a llama-server with the answer model: --server, else one started (and stopped) here."""
    server = None if args.server else start_answer_server(args, tmp, label)
    try:
        yield args.server or server.url
    finally:
        if server:
            server.stop()


def paired(questions, dbs, usage):
    """[(set, index)] from comma lists, one index per set; usage: the flags as the error message shows them.

    Example: paired("a.jsonl,b.jsonl", "a.db,b.db", "…") -> [("a.jsonl", "a.db"), ("b.jsonl", "b.db")]
    """
    questions, dbs = questions.split(","), dbs.split(",") if dbs else []
    if len(questions) != len(dbs):
        raise SystemExit(f"Fehler: {usage}")
    return list(zip(questions, dbs))
