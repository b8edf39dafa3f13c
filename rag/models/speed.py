"""How fast this machine reads prompts with the answer model, measured once at setup, and what a
reader should expect from it before the first word of an answer.

    expectation(161.6) -> "Antwortmodell liest auf diesem Rechner 162 Prompt-Tokens/s: erste Antwort
        nach etwa 1 s
                           (How-to), 3 s (Faktenfrage)."
    expectation(20.6)  -> "… 21 Prompt-Tokens/s: erste Antwort nach etwa 10 s (How-to), 23 s
        (Faktenfrage). Schneller: …"

Machines with the same two cores differ eightfold (AVX-512 vs AVX2 without VNNI), so the seconds are
the tokens the model reads before its first answer token (medians of `evaluate.py --answers` on the
three answer sets, docs/messwerte.md) divided by the speed measured here (rag/models/llm.py
prompt_speed, one request without the prompt cache).

Does not handle: a reader's own server (measured by `bench/ask_latency.py` and `evaluate.py
--answers` instead).
"""
import json

from rag import config

# read before the first answer token, median (docs/messwerte.md)
TOKENS = {"How-to": 205, "Faktenfrage": 470}
SLOW_S = 8  # from this many seconds on, the line says what speeds it up
# in the cache dir: {answer model file name: {"prompt_n", "prompt_ms", "tokens_per_s"}}
STORED = "speed.json"


def expectation(tokens_per_s):
    """The reader's line for a measured speed (see the module docstring)."""
    waits = {kind: max(1, round(n / tokens_per_s)) for kind, n in TOKENS.items()}
    line = (f"Antwortmodell liest auf diesem Rechner {tokens_per_s:.0f} Prompt-Tokens/s: erste "
            f"Antwort nach etwa "
            + ", ".join(f"{s} s ({kind})" for kind, s in waits.items()) + ".")
    if max(waits.values()) >= SLOW_S:
        line += (" Schneller: `ask_rag.py --serve` hält den Prompt-Cache des Servers warm; mehr "
                 "Kerne; oder ein eigener, schnellerer Server mit --server.")
    return line


def stored(model_path):
    """The measurement stored for this answer model, or None."""
    try:
        table = json.loads((config.cache_dir() / STORED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return table.get(model_path.name) if isinstance(table, dict) else None


def measure(model_path):
    """Start llama-server with the model, read one calibration prompt without the cache, stop it;
    store and return {"prompt_n", "prompt_ms", "tokens_per_s"} (None when the server gives no
    timings). Raises RuntimeError or rag.models.llm.LLMError when the server does not start or
    answer."""
    from rag.models import llm
    from rag.models.server_process import ServerProcess
    with ServerProcess(model=str(model_path)) as server:
        result = llm.prompt_speed(server.url)
    if result:
        path = config.cache_dir() / STORED
        try:
            table = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            table = {}
        table[model_path.name] = result
        path.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return result
