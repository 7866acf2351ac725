"""The pages' throttle, on the project's limiter (`ratelimit.keyed`: the same stores and
fixed windows as the API's per-space limits, under keys of their own; never a space's
window). Each kind of request has windows of its own, so no amount of one kind uses up
another's, each limit (per minute, per day) in settings:

- answers and comments ("answer"): per client address (`PAGES_LIMIT_PER_ADDRESS`) and per
  poll (`PAGES_LIMIT_PER_POLL`);
- organizers' sign-in requests ("sign-in"): per client address
  (`PAGES_SIGN_IN_LIMIT_PER_ADDRESS`) and per poll (`PAGES_SIGN_IN_LIMIT_PER_POLL`);
- page reads (`check_read`: every GET or HEAD under the pages): per client address
  (`PAGES_READ_LIMIT_PER_ADDRESS`).

The address is checked first: a request refused for its address counts nothing for the
poll, so one address's flood leaves the poll's window to everyone else."""

import ipaddress
from dataclasses import dataclass

from django.conf import settings

from ratelimit import keyed
from ratelimit.stores import StoreUnavailable

#: Seconds a page read past its limit waits before its 429 goes out (config/wsgi.py, holding
#: no request slot): a client looping on the pages gets about one refusal a second per
#: connection, not as many as the machine can make.
REFUSED_READ_DELAY = 1.0

#: kind -> the prefix of its keys and its (scope, setting) pairs, checked in this order.
KINDS = {
    "answer": ("pages", (("address", "PAGES_LIMIT_PER_ADDRESS"), ("poll", "PAGES_LIMIT_PER_POLL"))),
    "sign-in": ("pages:sign-in", (("address", "PAGES_SIGN_IN_LIMIT_PER_ADDRESS"),
                                  ("poll", "PAGES_SIGN_IN_LIMIT_PER_POLL"))),
    "read": ("pages:read", (("address", "PAGES_READ_LIMIT_PER_ADDRESS"),)),
}


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


def check(request, poll_id: str, kind: str = "answer") -> Refusal | None:
    """Count one request of `kind` ("answer": an answer or a comment; "sign-in"); None when
    it may go ahead."""
    prefix, limits = KINDS[kind]
    keys = {"address": client_address(request), "poll": poll_id}
    try:
        for scope, setting in limits:
            per_minute, per_day = getattr(settings, setting)
            outcome, now = keyed.hit(f"{prefix}:{scope}:{keys[scope]}", per_minute=per_minute, per_day=per_day)
            if not outcome.allowed:
                return Refusal(scope, keyed.retry_after(outcome, now))
    except StoreUnavailable:
        return Refusal("store", settings.RATELIMIT_UNAVAILABLE_RETRY_AFTER)
    return None


def check_read(request) -> Refusal | None:
    """Count one page read of the client's address; None when it may go ahead."""
    return check(request, "", "read")
