"""Periodic jobs of webhooks (see PERIODIC_JOBS in settings): Celery beat runs them at
scale, `manage.py runjobs` otherwise. The wake-up path they use is webhooks.dispatch's."""

import math
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from webhooks import dispatch, selectors, services

# Due deliveries one `deliver_due` task is expected to work off; the sweeper (and a fan-out
# that leaves deliveries due) enqueues one task per this many, at most WEBHOOKS_SWEEP_TASKS.
DELIVERIES_PER_TASK = 50


def sweep() -> None:
    """Periodic job: close deliveries abandoned on their last attempt, fan out events
    whose dispatch was missed, and get due deliveries (retries) sent."""
    services.close_abandoned()
    while services.fan_out():
        pass
    if dispatch._celery():
        enqueue_senders(selectors.due_delivery_count())
    elif dispatch._running is not None:
        dispatch.wake()  # this process's dispatcher sends them
    else:
        services.deliver_due()


def enqueue_senders(due: int) -> None:
    """Celery: `deliver_due` tasks for `due` deliveries, one per DELIVERIES_PER_TASK, at most
    WEBHOOKS_SWEEP_TASKS, so that several workers send them side by side."""
    for _ in range(min(math.ceil(due / DELIVERIES_PER_TASK), settings.WEBHOOKS_SWEEP_TASKS)):
        dispatch._enqueue("deliver_due")


# A dispatcher silent this long has stopped: its heartbeat row goes (but the newest stays).
HEARTBEAT_RETENTION = timedelta(days=1)


def purge() -> None:
    """Periodic job: forget events (with their deliveries and attempts) after
    WEBHOOKS_RETENTION_DAYS, and the heartbeats of dispatchers that stopped."""
    now = timezone.now()
    services.purge(older_than=now - timedelta(days=settings.WEBHOOKS_RETENTION_DAYS))
    services.forget_heartbeats(older_than=now - HEARTBEAT_RETENTION)
