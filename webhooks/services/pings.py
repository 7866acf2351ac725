"""A test ping sent now, and a delivery sent again: the deliveries an operator or an API
client asks for, beside the ones the outbox makes."""

from django.db import transaction
from django.utils import timezone

from core.errors import ServiceError
from core.ids import random_id
from webhooks import signals
from webhooks.models import PING, Attempt, Delivery, Endpoint
from webhooks.services.delivery import Claim, lease, send
from webhooks.services.events import new_event


def send_ping(*, endpoint: Endpoint) -> Delivery:
    """Send a test ping (type `ping`, `data: {}`) to the endpoint now, even if it is
    disabled, and return its delivery with the outcome. Never retried. Blocks for at most
    the delivery timeout."""
    now = timezone.now()
    token = random_id()
    with transaction.atomic():
        event = new_event(space_id=endpoint.space_id, type=PING, poll_id="", data={}, at=now)
        event.dispatched_at = now  # it goes to this endpoint only, never fanned out
        event.save(force_insert=True)
        # Created already claimed by this caller, so no worker takes it meanwhile.
        delivery = Delivery.objects.create(
            event=event, endpoint=endpoint, max_attempts=1, attempts=1, next_attempt_at=now,
            claimed_until=now + lease(), claim_token=token, created_at=now,
        )
        attempt = Attempt.objects.create(delivery=delivery, started_at=now)
    send(Claim(delivery=delivery, attempt=attempt, token=token))
    delivery.refresh_from_db()
    return delivery


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
