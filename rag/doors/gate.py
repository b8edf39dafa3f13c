"""The bound on questions in flight of `ask_rag.py --serve` (rag/doors/web.py): SLOTS run at once,
QUEUE more wait for a slot, and beyond that the reply comes at once, HTTP 503 with Retry-After and
"Der Server ist ausgelastet, bitte in N s erneut fragen." (N: the median time of recent questions).

    gate = Gate(slots=1, queue=1)
    with gate.enter():       # a place, then a slot; Busy when every place is taken
        answer the question
    gate.health()            # {"slots": 1, "queue": 1, "running": 0, "waiting": 0}: /health

Does not handle: limits per client, priorities, a queue shared by several processes.
"""
import collections
import contextlib
import math
import threading
import time

RETRY_DEFAULT = 10  # seconds in "bitte in N s erneut" before any question has finished
RECENT = 20  # question durations the retry estimate looks at
BUSY = "Der Server ist ausgelastet, bitte in {n} s erneut fragen."


class Busy(Exception):
    def __init__(self, seconds):
        super().__init__(BUSY.format(n=seconds))
        self.seconds = seconds


class Gate:
    """At most `slots` questions at once and `queue` more waiting; beyond that Busy, at once.

    Example: Gate(1, 0): a second question while the first runs
             -> Busy("… bitte in 10 s erneut …")
    """

    def __init__(self, slots, queue):
        self.slots, self.queue = slots, queue
        self.places = threading.BoundedSemaphore(slots + queue)
        self.running = threading.Semaphore(slots)
        self.durations = collections.deque(maxlen=RECENT)
        self.lock = threading.Lock()
        self.counts = {"running": 0, "waiting": 0}  # for /health

    @contextlib.contextmanager
    def enter(self):
        if not self.places.acquire(blocking=False):
            raise Busy(self.retry_after())
        self.count("waiting", 1)
        try:
            with self.running:
                self.count("waiting", -1)
                self.count("running", 1)
                started = time.monotonic()
                try:
                    yield
                finally:
                    with self.lock:
                        self.durations.append(time.monotonic() - started)
                    self.count("running", -1)
        finally:
            self.places.release()

    def count(self, what, change):
        with self.lock:
            self.counts[what] += change

    def health(self):
        """Example: {"slots": 1, "queue": 1, "running": 1, "waiting": 0}"""
        with self.lock:
            return {"slots": self.slots, "queue": self.queue, **self.counts}

    def retry_after(self):
        """Seconds until a place is likely free: the median time of recent questions, rounded up."""
        with self.lock:
            recent = sorted(self.durations)
        return max(1, math.ceil(recent[len(recent) // 2])) if recent else RETRY_DEFAULT
