"""Which URLs and addresses a webhook may be sent to (the addresses: webhooks.addresses).

The same rules run when an endpoint is saved and again when every connection is made
(`webhooks.sender`), so that a name whose DNS answer changes later (DNS rebinding) still
cannot reach a private, loopback or otherwise special address.
"""

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from webhooks.addresses import forbidden_reason

MAX_URL_LENGTH = 2048

class ForbiddenTarget(Exception):
    """The URL or the address it leads to may not receive webhooks; the message says why."""


class Unresolvable(ForbiddenTarget):
    """The host name has no address (a DNS failure)."""


def _allow_private(allow_private: bool | None) -> bool:
    """The development switch: as given, or WEBHOOKS_ALLOW_PRIVATE_URLS."""
    return settings.WEBHOOKS_ALLOW_PRIVATE_URLS if allow_private is None else allow_private


def check_address(address: str, *, allow_private: bool | None = None) -> None:
    """Raise ForbiddenTarget unless webhooks may connect to this IP address (a string as
    getaddrinfo returns it; an IPv6 scope such as `%eth0` is ignored)."""
    if _allow_private(allow_private):
        return
    reason = forbidden_reason(ipaddress.ip_address(address.split("%", 1)[0]))
    if reason:
        raise ForbiddenTarget(f"{reason}; webhooks are only sent to public addresses")


def resolve(host: str, port: int, *, allow_private: bool | None = None) -> list[tuple]:
    """getaddrinfo for a TCP connection, every answer vetted: one forbidden address makes
    the whole name forbidden. Returns the getaddrinfo tuples to connect to, in order."""
    try:
        answers = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, socket.gaierror) and exc.strerror else str(exc)
        raise Unresolvable(f"the host {host!r} cannot be resolved ({reason})") from None
    if not answers:
        raise Unresolvable(f"the host {host!r} has no address")
    for answer in answers:
        check_address(answer[4][0], allow_private=allow_private)
    return answers


def check_url(url: str, *, resolve_host: bool = True, allow_private: bool | None = None) -> str:
    """Validate an endpoint URL and return it stripped. https only, at most 2048
    characters, no user name or password, and a host that is (or resolves only to)
    public addresses. WEBHOOKS_ALLOW_PRIVATE_URLS (development only) also allows http
    and private addresses."""
    url = (url or "").strip()
    if not url:
        raise ForbiddenTarget("the URL is empty")
    if len(url) > MAX_URL_LENGTH:
        raise ForbiddenTarget(f"the URL is longer than {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise ForbiddenTarget("the URL contains spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ForbiddenTarget(f"the URL is not valid ({exc})") from None
    allowed_schemes = ("https", "http") if _allow_private(allow_private) else ("https",)
    if parts.scheme.lower() not in allowed_schemes:
        raise ForbiddenTarget("the URL must start with https://")
    if "@" in parts.netloc:
        raise ForbiddenTarget("the URL must not contain a user name or password")
    host = parts.hostname
    if not host:
        raise ForbiddenTarget("the URL has no host")
    if resolve_host:
        resolve(host, port or (443 if parts.scheme.lower() == "https" else 80), allow_private=allow_private)
    return url


def private_switch_needed(url: str) -> bool:
    """Whether `url` passes only because WEBHOOKS_ALLOW_PRIVATE_URLS is on in this process
    (plain http, or a private or loopback host): every process that sends webhooks needs
    the switch too, or each delivery to it is refused."""
    if not settings.WEBHOOKS_ALLOW_PRIVATE_URLS:
        return False
    try:
        check_url(url, allow_private=False)
    except ForbiddenTarget:
        return True
    return False


PRIVATE_SWITCH_WARNING = (
    "this URL is accepted only because WEBHOOKS_ALLOW_PRIVATE_URLS=true here (development only): the process that "
    "sends webhooks (manage.py runjobs, as bin/serve starts it, or the Celery worker) needs the same setting, or "
    "every delivery to it is refused"
)
