"""The per-space rate limit as a DRF throttle (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES),
so DRF's own order of checks is the contract's: authentication (400/401), permissions
(403 SPACE_NOT_PRO), then this (429/503)."""

from django.conf import settings
from rest_framework.throttling import BaseThrottle

from core import metrics
from core.api import errors
from core.versions import Versions
from ratelimit.limiter import StoreUnavailable, consume


class SpaceRateThrottle(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        # A refusal is the 429 or 503 envelope with its headers; on success the RateLimit-*
        # headers go on the response (core.api.views.ApiView.finalize_response).
        # A key read from this process's cache (spaces.keycache) is checked here too: `Stale`
        # goes up to core.api.views.ApiView, which reads it again from the database.
        request.ratelimit_headers = check(request.auth.space, getattr(request.auth, "versions", None))
        return True


def check(space, versions: Versions | None = None) -> dict[str, str]:
    """Count one API request of `space`; its RateLimit-* headers. Raises `RateLimitExceeded`
    (429, with Retry-After and the RateLimit-* headers) when a window is exhausted,
    `ServiceUnavailable` (503, Retry-After only) when the store fails, `Stale` (nothing
    counted) when `versions` are not the current ones."""
    try:
        decision = consume(space, versions)
    except StoreUnavailable:
        metrics.ratelimit_store_failed()
        raise errors.ServiceUnavailable(
            "The rate-limit service is unavailable; try again later.",
            headers={"Retry-After": str(settings.RATELIMIT_UNAVAILABLE_RETRY_AFTER)},
        ) from None
    if not decision.allowed:
        raise errors.RateLimitExceeded(
            "Rate limit exceeded for this space; see Retry-After.",
            headers={"Retry-After": str(decision.retry_after), **decision.headers},
        )
    return decision.headers
