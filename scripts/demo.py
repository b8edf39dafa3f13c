#!/usr/bin/env python3
"""README command 1: setup if needed, start llama-server on 127.0.0.1, build the index, ask, stop.

    python3 scripts/demo.py                       # the example question
    python3 scripts/demo.py "Wie richte ich VPN unter Linux ein?"

Uses the same scripts a reader runs by hand; the server is always stopped at the end. llama-server
runs the answer model the setup installed (Qwen2.5-Coder-1.5B-Instruct, or Gemma 3 270M after
`setup_llama.py --answer-model small`); the question is embedded by llama-embedding with the
embedding model of the index, as ask_rag.py does by default. That is simpler than a second server
for a small embedding model, and one process per question is cheap next to the answer itself.

Does not handle: a server that is already running (then run ask_rag.py yourself, see README).
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from rag.answer import prompt  # noqa: E402
from rag.models import llm  # noqa: E402
from rag.models.server_process import ServerProcess  # noqa: E402

QUESTION = "Wie lege ich in Cyrus IMAP eine neue Mailbox an?"


def run(cmd, env=None):
    code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    if code != 0:
        sys.exit(code)


def main():
    question = " ".join(sys.argv[1:]) or QUESTION
    run([sys.executable, "scripts/setup_llama.py"])
    run([sys.executable, "build_index.py"])
    log = ROOT / "llama-server.log"
    print("[demo] starte llama-server auf 127.0.0.1 …", file=sys.stderr, flush=True)
    try:
        with ServerProcess(log_path=str(log)) as server:  # the answer model (config.default_llm_model())
            llm.warm(server.url, prompt.SYSTEM)  # the fixed system message read once, as a running server has it
            print(f"[demo] llama-server bereit: {server.url}\n", file=sys.stderr, flush=True)
            print(f"Frage: {question}\n", flush=True)
            run([sys.executable, "ask_rag.py", question],
                env={**os.environ, "LLAMA_SERVER_URL": server.url, "RAG_EMBED_VIA": "binary"})
    except RuntimeError as exc:
        sys.exit(f"Fehler: {exc}")


if __name__ == "__main__":
    main()
