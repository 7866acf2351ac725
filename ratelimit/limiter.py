"""Per-space rate limiting: the one entry point the API base view calls (`consume`).

Two fixed windows per space (`RATELIMIT_PER_MINUTE` per minute, `RATELIMIT_PER_DAY` per
day, or the space's `LimitOverride`), shared by every key and endpoint of the space, checked
and counted in one atomic round trip to the store (`ratelimit.stores`). A refused request
uses up no quota. The store unreachable: fail closed.
"""

import time

from django.conf import settings

from core.api import errors
from ratelimit import windows
from ratelimit.stores import StoreUnavailable, get_store


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def consume(space) -> dict[str, str]:
    """Count one request of `space`; return the RateLimit-* headers for the response.

    Raises `RateLimitExceeded` (429, with Retry-After and the RateLimit-* headers) when a
    window is exhausted, `ServiceUnavailable` (503, Retry-After only) when the store fails."""
    now = now_ms()
    try:
        outcome = get_store().hit(space.pk, now)
    except StoreUnavailable:
        raise errors.ServiceUnavailable(
            "The rate-limit service is unavailable; try again later.",
            headers={"Retry-After": str(settings.RATELIMIT_UNAVAILABLE_RETRY_AFTER)},
        )
    headers = windows.headers(outcome, now)
    if not outcome.allowed:
        raise errors.RateLimitExceeded(
            "Rate limit exceeded for this space; see Retry-After.",
            headers={"Retry-After": str(windows.retry_after(outcome, now)), **headers},
        )
    return headers
