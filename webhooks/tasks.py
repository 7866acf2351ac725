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
    claimed in the same transaction; enqueue `deliver_due` tasks for the deliveries left
    due (webhooks.dispatch.enqueue_senders); send its own, then whatever else is due."""
    dispatch.fan_out_starting()  # before looking for events: any committed later enqueues anew
    claims = services.fan_out_and_claim()
    if services.fan_out_all() or len(claims) == services.CLAIM_BATCH:
        # A burst: one task stands for all its events now, so what this one did not claim
        # other workers send beside it (the tasks of the burst's other events used to).
        dispatch.enqueue_senders(selectors.due_delivery_count())
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
