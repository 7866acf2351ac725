"""Per-space rate limiting (see issue: rate limits). Interface used by the API base view."""


def consume(space) -> dict[str, str]:
    """Count one request of `space`; return the RateLimit-* headers for the response.

    Raises `RateLimitExceeded` (429) or `ServiceUnavailable` (503) when refused."""
    return {}
