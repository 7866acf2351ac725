"""Periodic job (settings.PERIODIC_JOBS): Celery beat runs it at scale, `runjobs` otherwise."""

import logging

from pages import services

logger = logging.getLogger("service.pages")


def purge_sign_in_links() -> None:
    """Forget organizers' sign-in links that expired (every hour)."""
    purged = services.purge_sign_in_links()
    if purged:
        logger.info("purged sign-in links", extra={"count": purged})
