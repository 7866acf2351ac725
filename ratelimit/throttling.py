"""The per-space rate limit as a DRF throttle (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES),
so DRF's own order of checks is the contract's: authentication (400/401), permissions
(403 SPACE_NOT_PRO), then this (429/503)."""

from rest_framework.throttling import BaseThrottle

from ratelimit.limiter import consume


class SpaceRateThrottle(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        # consume() raises the 429 or 503 envelope itself, with its headers; on success its
        # RateLimit-* headers go on the response (core.api.views.ApiView.finalize_response).
        request.ratelimit_headers = consume(request.auth.space)
        return True
