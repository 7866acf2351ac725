"""A test ping, and a delivery sent again: the deliveries an operator or an API client asks
for, beside the ones the outbox makes.

A ping asked for in a request (the API, the back office) is queued for the dispatcher and
the request answers at once: a request never waits on a receiver, which may take up to
WEBHOOKS_TIMEOUT_SECONDS to answer (or never), while it holds one of its process's few
request slots (with SQLite, the only one). `manage.py webhooks ping` holds no slot and
sends at once."""

from django.db import transaction
from django.utils import timezone

from core.errors import ServiceError
from core.ids import random_id
from webhooks import signals
from webhooks.models import PING, Attempt, Delivery, Endpoint
from webhooks.services.delivery import Claim, lease, send
from webhooks.services.events import new_event


def queue_ping(*, endpoint: Endpoint) -> Delivery:
    """Queue a test ping (type `ping`, `data: {}`) to the endpoint, even if it is disabled:
    a delivery due now with one attempt (never retried), which the dispatcher sends like
    any other (the delivery log shows its outcome). Returns the pending delivery."""
    now = timezone.now()
    with transaction.atomic():
        event = _ping_event(endpoint, now)
        delivery = Delivery.objects.create(event=event, endpoint=endpoint, max_attempts=1, next_attempt_at=now,
                                           created_at=now)
        transaction.on_commit(lambda: signals.work_waiting.send(sender=Delivery, delivery_id=delivery.pk), robust=True)
    return delivery


def send_ping(*, endpoint: Endpoint) -> Delivery:
    """Send a test ping to the endpoint now, even if it is disabled, and return its
    delivery with the outcome. Never retried. Blocks for at most the delivery timeout: for
    the command line, never for a request (`queue_ping`)."""
    now = timezone.now()
    token = random_id()
    with transaction.atomic():
        event = _ping_event(endpoint, now)
        # Created already claimed by this caller, so no worker takes it meanwhile.
        delivery = Delivery.objects.create(
            event=event, endpoint=endpoint, max_attempts=1, attempts=1, next_attempt_at=now,
            claimed_until=now + lease(), claim_token=token, created_at=now,
        )
        attempt = Attempt.objects.create(delivery=delivery, started_at=now)
    send(Claim(delivery=delivery, attempt=attempt, token=token))
    delivery.refresh_from_db()
    return delivery


def _ping_event(endpoint: Endpoint, now):
    event = new_event(space_id=endpoint.space_id, type=PING, poll_id="", data={}, at=now)
    event.dispatched_at = now  # it goes to this endpoint only, never fanned out
    event.save(force_insert=True)
    return event


@transaction.atomic
def resend_delivery(*, delivery: Delivery) -> Delivery:
    """Send a delivery's event to its endpoint again, as a new delivery with the full
    retry schedule (same event id and body). Refused for pings and disabled endpoints."""
    if delivery.event.type == PING:
        raise ServiceError("a ping is not resent; send a new ping")
    if not delivery.endpoint.is_enabled:
        raise ServiceError("the endpoint is disabled; enable it first")
    now = timezone.now()
    again = Delivery.objects.create(event_id=delivery.event_id, endpoint_id=delivery.endpoint_id, next_attempt_at=now,
                                    created_at=now)
    transaction.on_commit(lambda: signals.work_waiting.send(sender=Delivery, delivery_id=again.pk), robust=True)
    return again
