"""Maintenance mode: `MAINTENANCE_MODE=true` in the environment, or the switch flipped at
run time by `manage.py maintenance on|off` (stored in the database so that every process
sees it; each process re-reads it at most once a second)."""

import time

from django.conf import settings

from core.models import ServiceSwitch

_CACHE_SECONDS = 1.0
_cached: tuple[float, bool] | None = None


def maintenance_enabled() -> bool:
    global _cached
    if settings.MAINTENANCE_MODE:
        return True
    now = time.monotonic()
    if _cached is None or now - _cached[0] > _CACHE_SECONDS:
        _cached = (now, ServiceSwitch.enabled(ServiceSwitch.MAINTENANCE))
    return _cached[1]


def set_maintenance(on: bool) -> None:
    global _cached
    ServiceSwitch.set(ServiceSwitch.MAINTENANCE, on)
    _cached = None


def maintenance_state() -> dict[str, bool]:
    """Whether maintenance is on, and why: the run-time switch, the environment, or both.
    Read from the database, never from the per-process cache."""
    switch = ServiceSwitch.enabled(ServiceSwitch.MAINTENANCE)
    environment = bool(settings.MAINTENANCE_MODE)
    return {"enabled": switch or environment, "switch": switch, "environment": environment}
