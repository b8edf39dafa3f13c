"""Every timeout of the tests, in one place, and generous: a timeout only ends a test that hangs.

It never decides a test on a slow or busy machine (2 shared cores, other jobs beside the suite): a
test that needs a queue, a slow client or a second request in flight builds that situation itself
(a fake server that stalls until released, a held lock, an event) and waits for it with WAIT.
Speed is measured in bench/, never asserted here.

    from timeouts import RUN, WAIT, wait_for
    run_script("build_index.py", "--wiki", wiki, env=env, timeout=RUN)
    assert fake.streaming.wait(WAIT)
    wait_for(lambda: health()["waiting"] == 1)   # polls, AssertionError after WAIT s

Does not handle: timeouts that a test asserts itself (a client's own timeout that must fire).
"""
import time

WAIT = 60  # what takes a moment on an idle machine: a line, an event, a fake server's reply
REQUEST = 120  # one HTTP request to a local server (the page, the API) with fake models behind it
RUN = 600  # one script run against fakes: build_index.py over a small wiki, ask_rag.py, evaluate.py
REAL = 1800  # one run with the real models: an index of the wiki, a real answer, a tiny benchmark


def wait_for(condition, timeout=WAIT, step=0.02):
    """Poll condition() until it holds; returns time.monotonic() then, AssertionError at timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout} s")
