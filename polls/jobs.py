"""Periodic jobs of polls (see PERIODIC_JOBS in settings): Celery beat runs them at scale,
the embedded loop otherwise. Each only calls its service and logs what it did."""

import logging

from polls import services

logger = logging.getLogger("polls.jobs")


def close_past_polls() -> None:
    """Auto-close: every open poll whose options are all in the past (every minute)."""
    closed = services.close_past_polls()
    if closed:
        logger.info("auto-closed polls", extra={"count": len(closed), "poll_ids": closed})


def purge_deleted_polls() -> None:
    """Remove polls deleted more than 30 days ago (every hour)."""
    purged = services.purge_deleted_polls()
    if purged:
        logger.info("purged deleted polls", extra={"count": len(purged), "poll_ids": purged})
