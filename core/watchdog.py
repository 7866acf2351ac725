"""One thread per process that ends what outlives its deadline: a webhook attempt
(webhooks.sender) or a request's database work (core.dbguard), instead of a timer thread
started for every deadline.

A deadline is any object with `at` (a `time.monotonic()` value), `done` and `expire()`.
Deadlines wait in a heap; one that ends is dropped at once when it is the earliest (they
mostly end in the order they started), else when its time comes. The thread is woken only
for a deadline earlier than the time it sleeps toward, so that it wakes about once per
timeout while work ends in time, not once per request. `expire()` runs in the watchdog's
thread (a greenlet under gevent) and must be quick and safe across threads. Started on first use in
each process (a forked child gets its own)."""

import heapq
import itertools
import math
import os
import threading
import time


class Watchdog:
    def __init__(self, name: str):
        self.name = name
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._heap: list = []  # (at, order, deadline)
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._wakes_at = math.inf  # when the thread wakes by itself (inf: only when told)

    def watch(self, deadline) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if deadline.at < self._wakes_at:
                self._changed.notify()  # the thread would wake too late for this one

    def forget(self, deadline) -> None:
        with self._lock:
            deadline.done = True
            while self._heap and self._heap[0][2].done:
                heapq.heappop(self._heap)

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                    _at, _order, deadline = heapq.heappop(self._heap)
                    if not deadline.done:
                        deadline.expire()
                # Deadlines that end in time are dropped without waking the thread: it keeps
                # sleeping toward the earliest it saw, and then looks again.
                self._wakes_at = self._heap[0][0] if self._heap else math.inf
                self._changed.wait(self._wakes_at - now if self._heap else None)
