"""Per-space rate limiting: the one entry point (`consume`, or `start` to read its answer
later), which the API's throttle calls.

Two fixed windows per space (`RATELIMIT_PER_MINUTE` per minute, `RATELIMIT_PER_DAY` per
day, or the space's `LimitOverride`), shared by every key and endpoint of the space, checked
and counted in one atomic round trip to the store (`ratelimit.stores`). A refused request
uses up no quota. The store unreachable: fail closed.
"""

import time
from collections.abc import Callable
from typing import NamedTuple

from ratelimit import windows
from ratelimit.stores import StoreUnavailable, get_store

__all__ = ["Decision", "StoreUnavailable", "consume", "now_ms", "start"]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Decision(NamedTuple):
    """One request counted (or refused): the RateLimit-* headers of the answer, and when
    refused, the whole seconds until the exhausted window resets."""

    allowed: bool
    headers: dict[str, str]
    retry_after: int | None = None


def consume(space) -> Decision:
    """Count one request of `space` (a refused one counts nothing). Raises `StoreUnavailable`
    when the store fails: the caller fails closed. No HTTP here: the API's throttle
    (ratelimit.throttling) answers 429 or 503."""
    return start(space)()


def start(space) -> Callable[[], Decision]:
    """`consume`, its answer read later: counts (with Redis, sends the count) and returns the
    function that gives the `Decision`, raising as `consume` does, so that the caller's own
    work runs while Redis answers."""
    now = now_ms()
    outcome = get_store().start_hit(space.pk, now)

    def decision() -> Decision:
        counted = outcome()
        headers = windows.headers(counted, now)
        if not counted.allowed:
            return Decision(False, headers, windows.retry_after(counted, now))
        return Decision(True, headers)

    return decision
