"""Celery tasks (`WEBHOOKS_DISPATCH = "celery"`): each parses its arguments and calls the
services. Retry times live in the database, never in countdowns (a countdown longer than
the Redis broker's visibility timeout is redelivered in a loop)."""

from celery import shared_task

from webhooks import notify, services


@shared_task(name="webhooks.fan_out_event", ignore_result=True)
def fan_out_event(event_id: str) -> None:
    """Enqueued when an event's transaction commits: make its deliveries; enqueue all but
    the first, and send that one here (a task less in the common one-endpoint case)."""
    first, *others = services.fan_out(event_id=event_id) or [None]
    for delivery_id in others:
        notify.delivery_due(delivery_id)
    if first is not None:
        deliver(first)


@shared_task(name="webhooks.deliver", ignore_result=True)
def deliver(delivery_id: str) -> None:
    """Send one delivery if it is due and no other worker holds it."""
    for claim in services.claim_due(delivery_id=delivery_id):
        services.send(claim)


@shared_task(name="webhooks.deliver_due", ignore_result=True)
def deliver_due() -> None:
    """Enqueued by the sweeper: work off due deliveries (retries, missed ones)."""
    services.deliver_due()
