"""build_index.py --watch: follows the wiki folder, one line per change, Ctrl-C ends it with 130.

Runs against both stores (conftest.py `stores`). The watcher is a real process; its stdout is read
line by line in a thread, the index is read the way tests/stores.py reads it.
"""
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from conftest import ROOT, SMALL_WIKI, run_script
from timeouts import WAIT, wait_for

INTERVAL = 2  # seconds between the watcher's looks


def default_sigint():
    """Ctrl-C as in a terminal: a suite started in the background of a script (`bash scripts/test.sh &`
    inside a subshell) hands its children SIGINT ignored, and a Python started so never raises
    KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Watcher:
    """build_index.py --watch in the background; lines() of stdout as they come."""

    def __init__(self, wiki, env, *args):
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "build_index.py"), "--wiki", str(wiki), "--watch",
                                      "--interval", str(INTERVAL), *args], env={**os.environ, **env},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                     preexec_fn=default_sigint)
        self.out, self.err, self.err_done = queue.Queue(), [], threading.Event()
        threading.Thread(target=lambda: [self.out.put(line.rstrip("\n")) for line in self.proc.stdout],
                         daemon=True).start()
        threading.Thread(target=self.drain_stderr, daemon=True).start()  # a full pipe would block the watcher

    def drain_stderr(self):
        for line in self.proc.stderr:
            self.err.append(line)
        self.err_done.set()

    def stderr(self, timeout=WAIT):
        """All of stderr, once the process has closed it."""
        self.err_done.wait(timeout)
        return "".join(self.err)

    def next_line(self, timeout=WAIT):
        return self.out.get(timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def test_an_edit_is_found_at_the_next_look_and_ctrl_c_exits_130(small_wiki, store_env, stores):
    """The edit is found by the look after the save: at most an interval, plus the run's own time
    (the line's seconds), plus one more interval for a busy machine, never a fixed number of
    seconds; the watcher's speed is measured in docs/index-und-postgres.md."""
    db = store_env["RAG_DB"]
    watcher = Watcher(small_wiki, store_env)
    try:
        assert watcher.next_line().startswith("Seiten: 3 neu, 0 geändert")
        assert watcher.next_line() == f"Beobachte {small_wiki} alle {INTERVAL} s – Strg-C beendet."
        time.sleep(0.5)  # somewhere in the poll interval
        saved = time.monotonic()
        (small_wiki / "drucker.md").write_text("# Drucker\n\nDer Drucker steht in Quarantäne.\n", encoding="utf-8")
        found = wait_for(lambda: stores.matching(db, "quarantaene") == 1)
        line = watcher.next_line()
        (small_wiki / "neu.md").write_text("# VPN neu\n\nVPN neu einrichten.\n", encoding="utf-8")
        (small_wiki / "netzwerk" / "vpn.md").unlink()
        new_lines = sorted([watcher.next_line(), watcher.next_line()])
        asked = run_script("ask_rag.py", "--retrieve-only", "--json", "--mode", "lexical", "Quarantäne", env=store_env)
        watcher.proc.send_signal(signal.SIGINT)
        watcher.proc.wait(timeout=WAIT)
        err = watcher.stderr()
    finally:
        watcher.kill()
    took = float(line.rsplit(" · ", 1)[1].rstrip(" s")) + 0.05  # "… · 1 Chunk neu · 0.4 s", rounded
    assert found - saved <= 2 * INTERVAL + took, f"searchable {found - saved:.2f} s after the save"
    assert line.startswith("geändert: drucker.md · 1 Chunk neu · ") and line.endswith(" s")
    assert new_lines[0].startswith("entfernt: netzwerk/vpn.md · ")
    assert new_lines[1].startswith("neu: neu.md · 1 Chunk neu · ")
    assert '"path": "drucker.md"' in asked.stdout
    assert watcher.proc.returncode == 130
    assert "Abgebrochen" in err and "Traceback" not in err
    assert set(stores.pages(db)) == {"drucker.md", "mail/mailbox-anlegen.md", "neu.md"}


def test_sigkill_of_the_watcher_loses_nothing(small_wiki, store_env, stores, tmp_path):
    watcher = Watcher(small_wiki, store_env)
    try:
        watcher.next_line()
        watcher.next_line()
        (small_wiki / "drucker.md").write_text("# Drucker\n\nNeuer Drucker im Keller.\n", encoding="utf-8")
        watcher.next_line()
    finally:
        watcher.kill()
    clean = stores.new("clean")
    rerun = run_script("build_index.py", "--wiki", small_wiki, env=store_env)
    assert "0 neu, 0 geändert, 0 entfernt, 3 unverändert" in rerun.stdout, rerun.stderr
    assert run_script("build_index.py", "--wiki", small_wiki, env={**store_env, "RAG_DB": clean}).returncode == 0
    assert stores.rows(store_env["RAG_DB"]) == stores.rows(clean)
    assert set(SMALL_WIKI) == set(stores.pages(clean))
