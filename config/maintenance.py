"""Maintenance mode: `MAINTENANCE_MODE=true` in the environment, or the switch flipped at
run time by `manage.py maintenance on|off` (stored in the database so that every process
sees it; each process re-reads it at most once a second)."""

import time

from django.conf import settings

_CACHE_SECONDS = 1.0
_cached: tuple[float, bool] | None = None


def maintenance_enabled() -> bool:
    global _cached
    if settings.MAINTENANCE_MODE:
        return True
    now = time.monotonic()
    if _cached is None or now - _cached[0] > _CACHE_SECONDS:
        from spaces.models import ServiceSwitch

        _cached = (now, ServiceSwitch.enabled(ServiceSwitch.MAINTENANCE))
    return _cached[1]


def set_maintenance(on: bool) -> None:
    global _cached
    from spaces.models import ServiceSwitch

    ServiceSwitch.set(ServiceSwitch.MAINTENANCE, on)
    _cached = None
