"""Periodic jobs of webhooks (see PERIODIC_JOBS in settings): Celery beat runs them at
scale, `manage.py runjobs` otherwise. The wake-up path they use is webhooks.dispatch's."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from webhooks import dispatch, services


def sweep() -> None:
    """Periodic job: close deliveries abandoned on their last attempt, fan out events
    whose dispatch was missed, and get due deliveries (retries) sent."""
    services.close_abandoned()
    while services.fan_out():
        pass
    dispatch.send_due()


# A dispatcher silent this long has stopped: its heartbeat row goes (but the newest stays).
HEARTBEAT_RETENTION = timedelta(days=1)


def purge() -> None:
    """Periodic job: forget events (with their deliveries and attempts) after
    WEBHOOKS_RETENTION_DAYS, and the heartbeats of dispatchers that stopped."""
    now = timezone.now()
    services.purge(older_than=now - timedelta(days=settings.WEBHOOKS_RETENTION_DAYS))
    services.forget_heartbeats(older_than=now - HEARTBEAT_RETENTION)
