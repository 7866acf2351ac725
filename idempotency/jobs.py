"""Periodic job (settings.PERIODIC_JOBS): Celery beat runs it at scale, `runjobs` otherwise."""

import logging

from idempotency import services

logger = logging.getLogger("service.idempotency")


def purge_expired() -> None:
    """Forget idempotency records older than 24 hours (every hour)."""
    purged = services.purge()
    if purged:
        logger.info("purged idempotency records", extra={"count": purged})
