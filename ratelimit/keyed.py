"""Counters of keys that are not spaces: a client address, a poll. The app's pages throttle
answers, comments and sign-in requests with them (anyone may send those, without a key).

The same stores and the same two fixed windows as the per-space limiter (a minute and a day,
checked and counted in one atomic round trip; a refused request uses up no quota), with
limits the caller passes. Keys of different purposes must not collide: prefix them
(`"pages:ip:203.0.113.9"`). Raises `StoreUnavailable` when the store cannot answer."""

import time

from ratelimit.stores import get_store, purge_counters
from ratelimit.windows import DAY, Outcome, retry_after

__all__ = ["hit", "purge", "retry_after"]


def hit(key: str, *, per_minute: int, per_day: int) -> tuple[Outcome, int]:
    """Count one request of `key`: (the outcome, the instant of the count in Unix ms, for
    `retry_after`)."""
    now = time.time_ns() // 1_000_000
    return get_store().hit_key(key, now, (per_minute, per_day)), now


def purge() -> int:
    """Delete the embedded store's counters whose day window has ended, the spaces' too
    (Redis expires its own); returns how many."""
    return purge_counters(time.time_ns() // 1_000_000 - DAY * 1000)
