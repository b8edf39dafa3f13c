"""Start and stop a real llama-server on 127.0.0.1 (for the demo, the tests and the benchmarks).

    with ServerProcess(model="model.gguf") as server:
        print(server.url)        # http://127.0.0.1:PORT, ready: /health answered 200

Like llama.cpp's own server tests: pick a free port, poll GET /health until it answers 200,
fail fast if the process died, always stop it (terminate, wait, kill).

    ServerProcess(api_key="geheim")     # --api-key: every request but /health needs the Bearer
                                        token
    ServerProcess(parallel=4)           # -np 4 slots, -c CONTEXT for each of them

Does not handle: remote servers, GPU layers.
"""
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from rag import config
from rag.models import embed_binary as embedder

START_TIMEOUT = 120  # seconds until /health must answer 200
PR_SET_PDEATHSIG = 1  # prctl option: no llama-server outlives a killed build_index.py or test
CONTEXT = 4096  # -c per slot: prompt (4 chunks of ≤1200 characters + question) plus answer
# Indexing (build_index.py --embed-via spawn), measured with bench/indexing.py --tune-server (e5,
# 205 chunks, 2 busy cores, two runs each): -np 1: 77/109 s, -np 2: 146/204 s, -np 4: 119/77 s,
# -np 8: 54/67 s
INDEX_PARALLEL = 8  # -np: chunks embedded side by side, packed into one batch
# -b/-ub at least this: room for several chunks per decode; the longest must fit whole
INDEX_UBATCH = 2048
# one KV pool for all slots: without it Gemma 3's vectors mix across slots (cos 0.74)
INDEX_FLAGS = ["-kvu"]


def die_with_parent():
    """In the child before exec (Linux): SIGTERM when the parent dies, even by kill -9. Elsewhere a
    no-op."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    def __init__(self, model=None, binary=None, port=None, embeddings=False, extra=(),
                 log_path=None, api_key=None, parallel=1):
        self.binary = binary or config.default_server_bin()
        self.model = model or config.default_llm_model()
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_key = api_key
        self.args = [self.binary, "-m", self.model, "--host", "127.0.0.1", "--port", str(self.port),
                     "-c", str(CONTEXT * parallel), "-np", str(parallel),
                     *(["--embeddings", "--pooling", "mean"] if embeddings else []), *extra]
        # no key unless asked for
        self.env = {k: v for k, v in os.environ.items() if k != "LLAMA_API_KEY"}
        if api_key:
            self.env["LLAMA_API_KEY"] = api_key  # not in argv, where ps would show it
        self.log_path = log_path or os.devnull
        self.process = None

    def start(self, timeout=START_TIMEOUT):
        for path, what in ((self.binary, "llama-server"), (self.model, "Modell")):
            if not os.path.isfile(path):
                raise RuntimeError(f"{what} nicht gefunden ({path}) – einrichten mit: python3 "
                                   f"scripts/setup_llama.py")
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=self.env,
                                        preexec_fn=die_with_parent if sys.platform == "linux"
                                        else None)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server endete beim Start mit "
                                   f"Code {self.process.returncode} (Log: {self.log_path})")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama-server war nach {timeout} s nicht bereit (Log: {self.log_path})")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process:
            self.log.close()
        self.process = None

    @classmethod
    def for_indexing(cls, model, binary, texts=(), threads=None, parallel=INDEX_PARALLEL,
                     log_path=None):
        """An embedding server for build_index.py: `parallel` chunks side by side in one batch;
        -b/-ub large enough for the longest of `texts` (a token covers at least one byte,
        rag/models/embed_binary.py).

        Example: ServerProcess.for_indexing("e5.gguf", "llama-server", ["kurz"],
        threads=2).args[-7:]
                 -> ["-b", "2048", "-ub", "2048", "-kvu", "-t", "2"]
        """
        ubatch = max(INDEX_UBATCH, embedder.context_size(texts) if texts else 0)
        extra = ["-b", str(ubatch), "-ub", str(ubatch), *INDEX_FLAGS] + (["-t", str(threads)]
                                                                         if threads else [])
        server = cls(model=model, binary=binary, embeddings=True, parallel=parallel, extra=extra,
                     log_path=log_path)
        # one pool, `parallel` chunks at once
        server.args[server.args.index("-c") + 1] = str(ubatch * parallel)
        return server

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
