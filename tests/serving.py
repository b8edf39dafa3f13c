"""Start `ask_rag.py --serve` as a reader does, on a free 127.0.0.1 port, and always stop it.

    with Serving(env, "--serve-slots", "1") as server:
        requests.get(server.url + "/health", timeout=REQUEST)
        server.lines   # what it printed on stdout, e.g. ["Web-Seite: http://127.0.0.1:PORT/", …]

Also reads Server-Sent Events the way the page does: `sse_events(response)` -> [("sources", {…}), …].

Does not handle: a server that never prints its address (the start fails after START_TIMEOUT).
"""
import json
import queue
import subprocess
import sys
import threading

from conftest import ROOT
from timeouts import RUN, WAIT

START_TIMEOUT = RUN  # seconds until "Web-Seite: …" (a warm embedder loads its model first)


class Serving:
    def __init__(self, env, *args, timeout=START_TIMEOUT):
        self.args = [sys.executable, str(ROOT / "ask_rag.py"), "--serve", "--port", "0", *map(str, args)]
        self.env, self.timeout = env, timeout
        self.lines, self.url, self.process = [], None, None

    def __enter__(self):
        self.process = subprocess.Popen(self.args, cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.process.stdout] + [lines.put(None)],
                         daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=self.timeout)
            except queue.Empty:
                line = None
            if line is None:
                self.stop()
                raise AssertionError(f"--serve did not start: {self.process.stderr.read()}")
            self.lines.append(line.rstrip("\n"))
            if line.startswith("Web-Seite: "):
                self.url = line.split()[1].rstrip("/")
            if line.startswith("Antwort-Server: "):  # the last line of the start
                return self

    def stop(self):
        """Terminate (SIGTERM, as a service manager does); returns (exit code, stderr)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode, self.process.stderr.read()

    def __exit__(self, *exc):
        self.stop()


def sse_events(response):
    """[(event, data as JSON)] from a text/event-stream response, in order ("message" without event:)."""
    events, kind, data = [], "message", ""
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: "):
            data += line[6:]
        elif line == "" and data:
            events.append((kind, data if data == "[DONE]" else json.loads(data)))
            kind, data = "message", ""
    return events
