"""Periodic jobs (settings.PERIODIC_JOBS): Celery beat runs them at scale, `runjobs` otherwise."""

import logging

from pages import notices, outbox, services

logger = logging.getLogger("service.pages")


def purge_sign_in_links() -> None:
    """Forget organizers' sign-in links that expired (every hour)."""
    purged = services.purge_sign_in_links()
    if purged:
        logger.info("purged sign-in links", extra={"count": purged})


def send_mail() -> None:
    """Queue the organizers' e-mails about answers that are due, then send what the outbox
    holds (every 15 seconds)."""
    queued = notices.queue_notices()
    counts = outbox.send_due()
    if queued or counts["sent"] or counts["failed"]:
        logger.info("e-mails sent", extra={"queued": queued, **counts})


def purge_mail() -> None:
    """Forget e-mails sent or given up a week ago (every hour)."""
    purged = outbox.purge()
    if purged:
        logger.info("purged e-mails", extra={"count": purged})
