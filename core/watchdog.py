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

from gevent.monkey import get_original

_os_lock = get_original("_thread", "allocate_lock")  # never yields to gevent's hub


class Watchdog:
    """The heap is guarded by an operating-system lock, held only for a few heap operations
    and never across a wait or an `expire()`: under gevent, the gevent lock it replaces let
    requests that arrived later take it again and again before one already waiting ran
    (a waiter was passed over for up to seconds, with 32 clients on one worker). The
    thread sleeps on an event; `expire()` runs holding `_expiring`, which `forget` waits
    for only when its own deadline is being expired (so that it is not expired after its
    work ended, on a connection already lent to another request)."""

    def __init__(self, name: str):
        self.name = name
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = _os_lock()
        self._expiring = threading.Lock()  # cooperative under gevent
        self._wake = threading.Event()
        self._heap: list = []  # (at, order, deadline)
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._wakes_at = math.inf  # when the thread wakes by itself (inf: only when told)
        self._being_expired: list = []

    def watch(self, deadline) -> None:
        with self._lock:
            start = self._thread is None
            if start:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if deadline.at < self._wakes_at:  # the thread would wake too late for this one
                self._wake.set()  # never yields: gevent's or threading's Event
        if start:
            self._thread.start()

    def forget(self, deadline) -> None:
        with self._lock:
            deadline.done = True
            while self._heap and self._heap[0][2].done:
                heapq.heappop(self._heap)
            being_expired = deadline in self._being_expired
        if being_expired:
            with self._expiring:  # until its expire() has returned
                pass

    def _run(self) -> None:
        while True:
            with self._expiring:
                with self._lock:
                    now = time.monotonic()
                    due = []
                    while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                        _at, _order, deadline = heapq.heappop(self._heap)
                        if not deadline.done:
                            due.append(deadline)
                    self._being_expired = due
                    # Deadlines that end in time are dropped without waking the thread: it
                    # keeps sleeping toward the earliest it saw, and then looks again.
                    self._wakes_at = self._heap[0][0] if self._heap else math.inf
                    self._wake.clear()
                for deadline in due:
                    deadline.expire()
                with self._lock:
                    self._being_expired = []
            self._wake.wait(None if self._wakes_at == math.inf else max(0.0, self._wakes_at - now))
