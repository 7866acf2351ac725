"""The pages' throttle: answers, comments (and sign-in requests) are counted per client
address and per poll with the project's limiter (`ratelimit.keyed`: the same stores and
fixed windows as the API's per-space limits). Limits: `PAGES_LIMIT_PER_ADDRESS` and
`PAGES_LIMIT_PER_POLL`, each (per minute, per day)."""

import ipaddress
from dataclasses import dataclass

from django.conf import settings

from ratelimit import keyed
from ratelimit.stores import StoreUnavailable


@dataclass(frozen=True)
class Refusal:
    """Why a request was not let through: `retry_after` seconds (None: the store is down)."""

    scope: str  # "address", "poll" or "store"
    retry_after: int


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, or behind the TLS proxy (`BEHIND_TLS_PROXY`) the
    last address of X-Forwarded-For, the one that proxy added. IPv6 clients are counted by
    their /64 network (one machine usually holds a whole /64)."""
    address = request.META.get("REMOTE_ADDR", "")
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").rsplit(",", 1)[-1].strip()
        address = forwarded or address
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return "unknown"
    if parsed.version == 6 and parsed.ipv4_mapped:
        return str(parsed.ipv4_mapped)
    if parsed.version == 6:
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False).network_address) + "/64"
    return str(parsed)


def check(request, poll_id: str) -> Refusal | None:
    """Count one answer, comment or sign-in request; None when it may go ahead."""
    limits = (("address", client_address(request), settings.PAGES_LIMIT_PER_ADDRESS),
              ("poll", poll_id, settings.PAGES_LIMIT_PER_POLL))
    try:
        for scope, key, (per_minute, per_day) in limits:
            outcome, now = keyed.hit(f"pages:{scope}:{key}", per_minute=per_minute, per_day=per_day)
            if not outcome.allowed:
                return Refusal(scope, keyed.retry_after(outcome, now))
    except StoreUnavailable:
        return Refusal("store", settings.RATELIMIT_UNAVAILABLE_RETRY_AFTER)
    return None
