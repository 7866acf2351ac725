"""Waiting in tests: poll for what the test waits for, until a deadline; never sleep a guessed
time and hope it is enough. Not a test module."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, *, interval: float = 0.05, message: str = "",
               ignore: tuple[type[BaseException], ...] = ()) -> T:
    """The first truthy value of `predicate()`, called every `interval` seconds until
    `timeout` seconds have passed; then AssertionError (`message`, or what was last seen).
    Exceptions of the `ignore` types count as not yet (a server that does not listen yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except ignore as error:
            value = None
            last = repr(error)
        else:
            last = repr(value)
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(message or f"still not true after {timeout} s (last: {last[:300]})")
        time.sleep(interval)
