"""At least once, whatever crashes; never the same attempt twice."""

import pytest
from django.db import transaction

from webhooks import dispatch, services
from webhooks.models import Attempt, Delivery, Endpoint, Event
from webhooks.services import delivery as delivery_services
from webhooks.tests.fixtures import received, run_worker


class WorkerKilled(BaseException):
    """Stands for the process dying: not an Exception, so nothing catches it."""


def record(space, poll_id="AbCdEf123456"):
    return services.record_event(space_id=space.id, type="poll.created", poll_id=poll_id)


def test_a_worker_killed_after_claiming_leaves_a_lease_that_expires(receiver, hook, space, clock):
    receiver.expect_request("/hook").respond_with_data("ok")
    event = record(space)
    services.fan_out()
    [claim] = services.claim_due(limit=10)  # ... and the worker dies here
    del claim

    assert run_worker() == 0, "the lease keeps other workers off"
    clock.shift(59)
    assert run_worker() == 0
    clock.shift(2)
    assert run_worker() == 1

    [got] = received(receiver)
    assert got["body"]["id"] == event.id
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.SUCCEEDED, 2)
    first, second = Attempt.objects.order_by("started_at")
    assert first.error == services.INTERRUPTED and first.finished_at is not None and not first.succeeded
    assert second.succeeded and got["headers"]["X-Service-Delivery"] == second.id


def test_a_worker_killed_after_sending_causes_a_duplicate_with_the_same_event_id(receiver, hook, space, clock,
                                                                                  monkeypatch):
    receiver.expect_request("/hook").respond_with_data("ok")
    event = record(space)

    def die(*args, **kwargs):
        raise WorkerKilled

    with monkeypatch.context() as patch:
        patch.setattr(delivery_services, "finish", die)  # where deliver_due finds it
        with pytest.raises(WorkerKilled):
            run_worker()
    assert len(receiver.log) == 1
    clock.shift(61)
    run_worker()
    got = received(receiver)
    assert [item["body"]["id"] for item in got] == [event.id, event.id]
    assert got[0]["raw"] == got[1]["raw"] == event.body
    assert got[0]["headers"]["X-Service-Delivery"] != got[1]["headers"]["X-Service-Delivery"]
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED


def test_a_last_attempt_whose_worker_died_ends_the_delivery_as_failed(receiver, hook, space, clock):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("no", status=500)
    record(space)
    run_worker()
    for wait in (60, 300, 1800, 7200):
        clock.shift(wait)
        run_worker()
    clock.shift(43200)
    [claim] = services.claim_due()  # the 6th attempt; its worker dies
    assert claim.delivery.attempts == 6
    clock.shift(61)
    dispatch.sweep()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error) == (Delivery.Status.FAILED, services.INTERRUPTED)
    assert Attempt.objects.filter(error=services.INTERRUPTED).count() == 1
    assert Endpoint.objects.get(pk=endpoint.pk).failure_streak == 1
    assert len(receiver.log) == 5


def test_the_sweeper_delivers_an_event_whose_dispatch_was_lost(receiver, hook, space, settings,
                                                               django_capture_on_commit_callbacks):
    """The change committed, then the process stopped before telling the dispatcher."""
    receiver.expect_request("/hook").respond_with_data("ok")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            event = record(space)
    assert len(callbacks) == 1  # the notification that never ran
    assert Event.objects.get().dispatched_at is None

    dispatch.sweep()  # embedded, and no dispatcher runs in this process: it sends itself

    assert [got["body"]["id"] for got in received(receiver)] == [event.id]
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED


def test_the_sweeper_with_celery_fans_out_and_enqueues_workers(receiver, hook, space, settings, monkeypatch):
    from webhooks import tasks

    settings.WEBHOOKS_DISPATCH = "celery"
    enqueued = []
    monkeypatch.setattr(tasks.deliver_due, "apply_async", lambda *a, **k: enqueued.append(k))
    for n in range(120):
        record(space, poll_id=f"poll{n:08d}")
    dispatch.sweep()
    assert Delivery.objects.filter(status=Delivery.Status.PENDING).count() == 120
    assert len(enqueued) == 3  # one worker task per 50 due deliveries
    settings.WEBHOOKS_SWEEP_TASKS = 2
    dispatch.sweep()
    assert len(enqueued) == 5  # at most WEBHOOKS_SWEEP_TASKS per sweep
    assert receiver.log == []
