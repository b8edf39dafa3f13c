"""Start and stop a real llama-server on 127.0.0.1 (for the demo, the tests and the benchmarks).

    with ServerProcess(model="model.gguf") as server:
        print(server.url)        # http://127.0.0.1:PORT, ready: /health answered 200

Like llama.cpp's own server tests: pick a free port, poll GET /health until it answers 200,
fail fast if the process died, always stop it (terminate, wait, kill).

Does not handle: remote servers, GPU layers.
"""
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

from . import config

START_TIMEOUT = 120  # seconds until /health must answer 200
CONTEXT = 4096  # -c: prompt (4 chunks of ≤1200 characters + question) plus answer


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    def __init__(self, model=None, binary=None, port=None, embeddings=False, extra=(), log_path=None):
        self.binary = binary or config.default_server_bin()
        self.model = model or config.default_llm_model()
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [self.binary, "-m", self.model, "--host", "127.0.0.1", "--port", str(self.port),
                     "-c", str(CONTEXT), "-np", "1", *(["--embeddings", "--pooling", "mean"] if embeddings else []),
                     *extra]
        self.log_path = log_path or os.devnull
        self.process = None

    def start(self, timeout=START_TIMEOUT):
        for path, what in ((self.binary, "llama-server"), (self.model, "Modell")):
            if not os.path.isfile(path):
                raise RuntimeError(f"{what} nicht gefunden ({path}) – einrichten mit: python3 scripts/setup_llama.py")
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server endete beim Start mit Code {self.process.returncode} "
                                   f"(Log: {self.log_path})")
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

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
