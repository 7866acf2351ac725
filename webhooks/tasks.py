"""Celery tasks (`WEBHOOKS_DISPATCH = "celery"`): each parses its arguments and calls the
services. Retry times live in the database, never in countdowns (a countdown longer than
the Redis broker's visibility timeout is redelivered in a loop)."""

from celery import shared_task

from webhooks import services


@shared_task(name="webhooks.fan_out_event", ignore_result=True)
def fan_out_event(event_id: str) -> None:
    """Enqueued when an event's transaction commits: fan out the pending events (this one
    among them, unless another worker is at it already), claiming the first batch of
    their deliveries in the same transaction; send those, then whatever else is due. In
    a burst, the first tasks do the work in batches and the later ones find little left."""
    services.send_many(services.fan_out_and_claim())
    services.deliver_due()


@shared_task(name="webhooks.deliver", ignore_result=True)
def deliver(delivery_id: str) -> None:
    """Send one delivery if it is due and no other worker holds it."""
    services.send_many(services.claim_due(delivery_id=delivery_id))


@shared_task(name="webhooks.deliver_due", ignore_result=True)
def deliver_due() -> None:
    """Enqueued by the sweeper: work off due deliveries (retries, missed ones)."""
    services.deliver_due()
