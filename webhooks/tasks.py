"""Celery tasks (`WEBHOOKS_DISPATCH = "celery"`): each parses its arguments and calls the
services. Retry times live in the database, never in countdowns (a countdown longer than
the Redis broker's visibility timeout is redelivered in a loop); the only countdown is the
fan-out's batch window, 30 ms at most (webhooks.dispatch.FAN_OUT_RECENT_KEY)."""

from celery import shared_task

from webhooks import dispatch, selectors, services


@shared_task(name="webhooks.fan_out_event", ignore_result=True)
def fan_out_event(event_id: str) -> None:
    """Enqueued when an event's transaction commits, unless a fan-out is queued already
    (webhooks.dispatch.FAN_OUT_QUEUED_KEY), with a countdown when another started less than
    FAN_OUT_BATCH_SECONDS ago (FAN_OUT_RECENT_KEY): fan out every waiting event (this one among
    them, unless another worker is at it already), the first batch with its deliveries
    claimed in the same transaction (one endpoint's, within the shares of the senders);
    enqueue `deliver_due` tasks for the deliveries left due (webhooks.dispatch.enqueue_senders);
    send its own, then whatever else is due."""
    dispatch.fan_out_starting()  # before looking for events: any committed later enqueues anew
    claims, left = services.fan_out_and_claim_batch()
    # Other endpoints' deliveries: other workers send them beside this one (a sender per
    # endpoint), so that none waits behind this batch's receiver, which may take the whole
    # timeout to answer. In a burst one task stands for all its events, so its due
    # deliveries are counted.
    endpoints = len({delivery.endpoint_id for delivery in left})
    if services.fan_out_all():
        dispatch.enqueue_senders(selectors.due_delivery_count(), endpoints=endpoints)
    elif left:
        dispatch.enqueue_senders(len(left), endpoints=endpoints)
    services.send_many(claims)
    services.deliver_due()


@shared_task(name="webhooks.deliver", ignore_result=True)
def deliver(delivery_id: str) -> None:
    """Send one delivery if it is due and no other worker holds it."""
    services.send_many(services.claim_due(delivery_id=delivery_id))


@shared_task(name="webhooks.deliver_due", ignore_result=True)
def deliver_due() -> None:
    """Enqueued by the sweeper: work off due deliveries (retries, missed ones)."""
    services.deliver_due()
