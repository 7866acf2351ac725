"""The embedded dispatcher's look for work as one hand-written statement: on SQLite every
commit of another process (each API request's rate-limit counter among them) wakes the
dispatcher, and building the two ORM queries of that look cost it more than running them
(docs/performance.md). Everything else in webhooks uses the ORM."""

import functools
from datetime import datetime

from django.db import connection

from core.rows import Table
from webhooks.models import Delivery, Event

_EVENT, _DELIVERY = Table(Event, "e"), Table(Delivery, "d")


@functools.cache
def _work_sql(vendor: str) -> str:
    d = _DELIVERY.column
    return (
        f"SELECT EXISTS (SELECT 1 FROM {_EVENT.table} WHERE {_EVENT.column('dispatched_at')} IS NULL), "
        f"EXISTS (SELECT 1 FROM {_DELIVERY.table} WHERE {d('status')} = %s AND {d('next_attempt_at')} <= %s "
        f"AND {d('attempts')} < {d('max_attempts')} AND ({d('claimed_until')} IS NULL OR {d('claimed_until')} <= %s))"
    )


def work_waiting(now: datetime) -> tuple[bool, bool]:
    """Whether an event waits to be fanned out, and whether a delivery is due at `now`: what
    `Event.objects.filter(dispatched_at__isnull=True).exists()` and
    `selectors.due_deliveries(now).exists()` tell. One query."""
    at = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        cursor.execute(_work_sql(connection.vendor), [Delivery.Status.PENDING, at, at])
        events, due = cursor.fetchone()
    return bool(events), bool(due)
