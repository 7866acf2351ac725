"""Back-office logins under guard (django-axes, configured in settings: AXES_*): failed
logins are counted per account and per client address; the 5th failure locks that account,
or that address, for LOGIN_LOCKOUT_MINUTES. Attempts during a lockout do not extend it, so
nobody can keep an account locked for longer than that by guessing on; staff lift a lockout
at once in the back office (*Axes > Access attempts*: delete the row) or with
`manage.py axes_reset_username NAME` / `axes_reset_ip ADDRESS` (docs/operations.md)."""

import logging

from django.conf import settings

logger = logging.getLogger("service.security")


def client_ip(request) -> str | None:
    """The client's address: REMOTE_ADDR, or behind the TLS proxy (BEHIND_TLS_PROXY) the
    address that proxy appended to X-Forwarded-For (the last one: earlier ones are the
    client's to forge)."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None) and forwarded.strip():
        return forwarded.split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR")


def log_lockout(sender, *, username=None, ip_address=None, **kwargs) -> None:
    """The receiver of axes' user_locked_out (connected in CoreConfig.ready): one line per
    locked-out attempt."""
    logger.warning("back-office login locked out", extra={
        "username": username, "ip_address": ip_address, "minutes": settings.LOGIN_LOCKOUT_MINUTES,
    })
