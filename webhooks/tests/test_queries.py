"""webhooks.queries against the ORM queries it stands for, in every state that decides them."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from webhooks import dispatch, queries, selectors, services
from webhooks.models import Delivery, Event

pytestmark = pytest.mark.django_db


def orm_says(now) -> tuple[bool, bool]:
    return Event.objects.filter(dispatched_at__isnull=True).exists(), selectors.due_deliveries(now).exists()


def test_work_waiting_agrees_with_the_orm_in_each_state(hook, space):
    now = timezone.now()
    assert queries.work_waiting(now) == orm_says(now) == (False, False)  # nothing recorded yet

    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    assert queries.work_waiting(now) == orm_says(now) == (True, False)  # an event to fan out

    services.fan_out()
    delivery = Delivery.objects.get()
    assert Event.objects.filter(dispatched_at__isnull=True).count() == 0
    later = delivery.next_attempt_at + timedelta(microseconds=1)
    states = [
        ({}, True),  # due, never claimed
        ({"next_attempt_at": later + timedelta(seconds=1)}, False),  # not due yet
        ({"claimed_until": later + timedelta(seconds=30)}, False),  # in a worker's hands
        ({"claimed_until": later - timedelta(seconds=1)}, True),  # that worker's lease ran out
        ({"claimed_until": later}, True),  # the lease ends at this very moment
        ({"attempts": F("max_attempts")}, False),  # no attempt left
        ({"attempts": F("max_attempts") - 1}, True),
        ({"status": Delivery.Status.SUCCEEDED}, False),
        ({"status": Delivery.Status.CANCELED}, False),
        ({"status": Delivery.Status.FAILED}, False),
    ]
    for change, expected in states:
        Delivery.objects.filter(pk=delivery.pk).update(
            status=Delivery.Status.PENDING, next_attempt_at=delivery.next_attempt_at, claimed_until=None, attempts=0
        )
        Delivery.objects.filter(pk=delivery.pk).update(**change)
        assert queries.work_waiting(later) == orm_says(later) == (False, expected), change


@pytest.mark.django_db(transaction=True)
def test_a_wake_up_with_nothing_waiting_costs_one_look(space):
    """On SQLite every commit of another process wakes the dispatcher (each API request's
    rate-limit counter among them): with nothing waiting, its turn is one statement (and
    SQLite's data_version), never the fan-out's and the claim's queries; with only an event
    waiting, the claim is not looked for unless the fan-out made deliveries."""
    dispatcher = dispatch.Dispatcher(threads=1)
    with ThreadPoolExecutor(max_workers=1) as pool, CaptureQueriesContext(connection) as seen:
        assert dispatcher.tick(pool, threading.Event()) is False
    looks = [query["sql"] for query in seen if "EXISTS" in query["sql"]]
    assert len(looks) == 1 and len(seen) == (2 if connection.vendor == "sqlite" else 1), [q["sql"] for q in seen]

    # An event of a space without endpoints: fanned out to nobody, and no claim looked for.
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    with ThreadPoolExecutor(max_workers=1) as pool, CaptureQueriesContext(connection) as seen:
        assert dispatcher.tick(pool, threading.Event()) is False
    assert not Event.objects.filter(dispatched_at__isnull=True).exists()  # the work waiting is done
    assert len([query for query in seen if "claimed_until" in query["sql"]]) == 1  # the look only


@pytest.mark.django_db(transaction=True)
def test_after_a_fan_out_other_processes_commits_wait_for_the_batch(space, monkeypatch):
    """After a pass that fanned out events the embedded loop looks for other processes'
    commits (on SQLite: a new `PRAGMA data_version`) no sooner than FAN_OUT_BATCH_SECONDS,
    so that what they commit meanwhile makes one batch; a sender finishing still wakes it at
    once, and with no fan-out lately a commit is seen at the next check. (Another process's
    commit is stood for by `_data_version`'s answer, so this runs on either database.)"""
    monkeypatch.setattr(dispatch, "FAN_OUT_BATCH_SECONDS", 30.0)
    dispatcher = dispatch.Dispatcher(threads=1, poll_seconds=0.5)
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    with ThreadPoolExecutor(max_workers=1) as pool:
        dispatcher.tick(pool, threading.Event())
    assert not Event.objects.filter(dispatched_at__isnull=True).exists()  # fanned out: the batch began
    dispatch.wait(0)  # the wake-up of the event's own commit, in this process
    monkeypatch.setattr(dispatch, "_data_version", lambda: 2)  # another process has committed...

    def idle_seconds() -> float:
        dispatcher._seen_version = 1  # ...since the loop last looked
        started = time.monotonic()
        dispatcher.idle()
        return time.monotonic() - started

    assert idle_seconds() >= 0.5  # the commit waited for the batch: the loop looked at its poll's end

    waking = threading.Timer(0.05, dispatch.wake)  # a sender finishing
    waking.start()
    assert idle_seconds() < 0.45
    waking.join()

    dispatcher._fanned_out_at = float("-inf")  # no fan-out lately
    assert idle_seconds() < 0.45
