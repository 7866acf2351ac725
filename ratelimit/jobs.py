"""Periodic job (settings.PERIODIC_JOBS): Celery beat runs it at scale, `runjobs` otherwise."""

import logging

from ratelimit import keyed

logger = logging.getLogger("service.ratelimit")


def purge_key_counters() -> None:
    """Forget the counters of addresses and polls whose day is over (every hour)."""
    purged = keyed.purge()
    if purged:
        logger.info("purged key counters", extra={"count": purged})
