"""core.watchdog: every deadline that passes is expired on time, and deadlines that end in
time do not wake the watchdog's thread (it sleeps toward the earliest it saw)."""

import threading
import time

from core.watchdog import Watchdog
from tests.waiting import wait_until


class Deadline:
    def __init__(self, seconds: float):
        self.at = time.monotonic() + seconds
        self.done = False
        self.expired_at = None
        self.expired = threading.Event()

    def expire(self) -> None:
        self.expired_at = time.monotonic()
        self.expired.set()


def test_a_deadline_that_passes_is_expired_on_time_and_one_that_ends_in_time_never():
    watchdog = Watchdog("test-watchdog")
    far, in_time, late = Deadline(30), Deadline(0.1), Deadline(0.2)
    watchdog.watch(far)
    wait_until(lambda: watchdog._wakes_at == far.at, 2)  # the thread sleeps toward `far`
    watchdog.watch(in_time)
    watchdog.forget(in_time)
    watchdog.watch(late)  # earlier than what the thread sleeps toward: it is told
    assert late.expired.wait(2)
    assert late.at <= late.expired_at < late.at + 0.5
    assert not in_time.expired.is_set() and not far.expired.is_set()
    watchdog.forget(far)


def test_deadlines_that_end_in_time_do_not_wake_the_thread_and_a_later_one_still_expires():
    watchdog = Watchdog("test-watchdog")
    first = Deadline(0.3)
    watchdog.watch(first)
    wait_until(lambda: watchdog._wakes_at == first.at, 2)  # the thread sleeps toward `first`
    watchdog.forget(first)
    sleeping_toward = watchdog._wakes_at
    assert sleeping_toward == first.at
    for _ in range(100):  # requests that end in time, each with a later deadline
        deadline = Deadline(0.3)
        watchdog.watch(deadline)
        watchdog.forget(deadline)
    time.sleep(0.05)  # not a wait but the check: time in which a woken thread would have moved
    assert watchdog._wakes_at == sleeping_toward  # not woken by any of them
    stuck = Deadline(0.4)
    watchdog.watch(stuck)
    assert stuck.expired.wait(2)  # the thread woke at `first`, then slept toward this one
    assert stuck.at <= stuck.expired_at < stuck.at + 0.5
