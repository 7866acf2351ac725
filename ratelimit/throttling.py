"""The per-space rate limit as a DRF throttle (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES),
so DRF's own order of checks is the contract's: authentication (400/401), permissions
(403 SPACE_NOT_PRO), then this (429/503)."""

from collections.abc import Callable
from typing import NoReturn

from django.conf import settings
from rest_framework.throttling import BaseThrottle

from core import metrics
from core.api import errors
from ratelimit.limiter import StoreUnavailable, start


class SpaceRateThrottle(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        # Counts the request; the answer (the RateLimit-* headers, or the 429 or 503 envelope
        # with its headers) is read by core.api.views.ApiView.counted: at once, or after the
        # handler validated its body (ApiView.counted_late), while Redis answers.
        request.count_answer = start_check(request.auth.space)
        return True


def start_check(space) -> Callable[[], dict[str, str]]:
    """Count one API request of `space` (with Redis, send the count); returns the function
    that reads the answer: the RateLimit-* headers, or raises `RateLimitExceeded` (429, with
    Retry-After and the RateLimit-* headers) when a window is exhausted, `ServiceUnavailable`
    (503, Retry-After only) when the store fails."""
    try:
        decision = start(space)
    except StoreUnavailable:
        _unavailable()

    def answer() -> dict[str, str]:
        try:
            counted = decision()
        except StoreUnavailable:
            _unavailable()
        if not counted.allowed:
            raise errors.RateLimitExceeded(
                "Rate limit exceeded for this space; see Retry-After.",
                headers={"Retry-After": str(counted.retry_after), **counted.headers},
            )
        return counted.headers

    return answer


def _unavailable() -> NoReturn:
    metrics.ratelimit_store_failed()
    raise errors.ServiceUnavailable(
        "The rate-limit service is unavailable; try again later.",
        headers={"Retry-After": str(settings.RATELIMIT_UNAVAILABLE_RETRY_AFTER)},
    ) from None
