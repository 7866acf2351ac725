"""webhooks.queries against the ORM queries it stands for, in every state that decides them."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from spaces.keys import prefix_of
from spaces.models import Subscription
from spaces.queries import key_by_prefix
from webhooks import dispatch, queries, selectors, services
from webhooks.models import Delivery, Endpoint, Event
from webhooks.services.delivery import _oldest_unlocked

pytestmark = pytest.mark.django_db


def orm_says(now) -> tuple[bool, bool]:
    return Event.objects.filter(dispatched_at__isnull=True).exists(), selectors.due_deliveries(now).exists()


def queries_say(now) -> tuple[bool, bool]:
    """`work_waiting`, whose second answer `deliveries_due` gives alone, and for the one
    delivery there is by its id (never for another id)."""
    events, due = queries.work_waiting(now)
    assert queries.deliveries_due(now) == due
    for delivery_id in Delivery.objects.values_list("pk", flat=True):
        assert queries.deliveries_due(now, delivery_id) == due
    assert not queries.deliveries_due(now, "not-a-delivery")
    return events, due


def test_work_waiting_agrees_with_the_orm_in_each_state(hook, space):
    now = timezone.now()
    assert queries_say(now) == orm_says(now) == (False, False)  # nothing recorded yet

    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    assert queries_say(now) == orm_says(now) == (True, False)  # an event to fan out

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
        assert queries_say(later) == orm_says(later) == (False, expected), change


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


def values(obj) -> dict:
    """Every column of a model instance, as its attribute holds it."""
    return {field.attname: getattr(obj, field.attname) for field in obj._meta.concrete_fields}


def test_the_fan_outs_reads_and_write_are_the_orms(make_space):
    """oldest_waiting_events, mark_dispatched and receivers against the ORM queries
    `_fan_out` made before: the same rows, in the same order, with the same values."""
    space, _ = make_space()
    other, _ = make_space()
    at = timezone.now()
    recorded = [
        services.record_event(space_id=owner.id, type=kind, poll_id=f"Poll{n:08d}", extra={"n": n},
                              at=at + timedelta(seconds=offset))
        for n, (owner, kind, offset) in enumerate([
            (space, "poll.created", 3), (other, "poll.deleted", 1), (space, "poll.updated", 2),
            (other, "poll.created", 5), (space, "poll.created", 4),
        ])
    ]
    Event.objects.filter(pk=recorded[4].pk).update(dispatched_at=at)  # fanned out already
    assert queries.events_waiting() is Event.objects.filter(dispatched_at__isnull=True).exists() is True

    def orm_oldest(limit):
        return list(_oldest_unlocked(Event.objects.filter(dispatched_at__isnull=True), "created_at", limit))

    for limit in (1, 3, 500):
        with transaction.atomic():
            ours, theirs = queries.oldest_waiting_events(limit), orm_oldest(limit)
        assert [values(event) for event in ours] == [values(event) for event in theirs]
        assert len(ours) == min(limit, 4) and ours[0].pk == recorded[1].pk  # the oldest first
    assert ours[0].data == recorded[1].data and "n" in ours[0].data  # the JSON column, decoded

    later = at + timedelta(minutes=1)
    queries.mark_dispatched([recorded[1].pk, recorded[2].pk], later)
    assert dict(Event.objects.values_list("pk", "dispatched_at")) == {
        recorded[0].pk: None, recorded[1].pk: later, recorded[2].pk: later, recorded[3].pk: None, recorded[4].pk: at,
    }
    Event.objects.update(dispatched_at=at)
    assert queries.events_waiting() is Event.objects.filter(dispatched_at__isnull=True).exists() is False


def test_receivers_are_the_orms(make_space, local_urls):
    active, _ = make_space()
    lapsed, _ = make_space()
    never, _ = make_space(pro=False)
    elsewhere, _ = make_space()
    Subscription.objects.filter(space=never).delete()  # no subscription row at all
    made = {}
    for owner in (active, lapsed, never, elsewhere):
        made[owner.pk] = [services.create_endpoint(space=owner, url=f"http://127.0.0.1:9/{owner.pk}/{n}")[0]
                          for n in range(3)]
    services.disable_endpoint(endpoint=made[active.pk][1])
    Subscription.objects.filter(space=lapsed).update(is_active=False)
    asked = {active.pk, lapsed.pk, never.pk}

    def orm(space_ids):
        return list(Endpoint.objects.filter(space_id__in=space_ids, is_enabled=True, space__subscription__is_active=True)
                    .select_related("space__subscription"))

    with CaptureQueriesContext(connection) as seen:
        ours = queries.receivers(asked)
        loaded = [(endpoint.space.name, endpoint.space.subscription.is_active) for endpoint in ours]
    assert len(seen) == 1  # the space and its subscription came with the endpoints
    theirs = orm(asked)
    assert [values(endpoint) for endpoint in ours] == [values(endpoint) for endpoint in theirs]
    assert [endpoint.pk for endpoint in ours] == [made[active.pk][0].pk, made[active.pk][2].pk]
    assert loaded == [(active.name, True)] * 2
    assert [values(endpoint.space.subscription) for endpoint in ours] == [
        values(endpoint.space.subscription) for endpoint in theirs
    ]
    assert queries.receivers({lapsed.pk}) == orm({lapsed.pk}) == []


def test_the_enabled_rider_tells_what_the_orm_tells(space_and_key, make_space, local_urls, django_assert_num_queries):
    """`selectors.enabled_rider`, read in the key lookup's one statement, in each state of
    the space's endpoints (and another space's)."""
    space, raw = space_and_key

    def ridden() -> bool:
        with django_assert_num_queries(1):
            key, enabled = key_by_prefix(prefix_of(raw), selectors.enabled_rider())
        assert key.space_id == space.pk
        assert enabled is Endpoint.objects.filter(space=space, is_enabled=True).exists()
        return enabled

    assert ridden() is False  # no endpoint
    other, _ = make_space()
    services.create_endpoint(space=other, url="http://127.0.0.1:9/other")
    assert ridden() is False  # another space's endpoint
    endpoint, _ = services.create_endpoint(space=space, url="http://127.0.0.1:9/first")
    assert ridden() is True
    second, _ = services.create_endpoint(space=space, url="http://127.0.0.1:9/second")
    services.disable_endpoint(endpoint=endpoint)
    assert ridden() is True  # one of two enabled
    services.disable_endpoint(endpoint=second)
    assert ridden() is False  # all disabled
    services.enable_endpoint(endpoint=Endpoint.objects.get(pk=endpoint.pk))
    assert ridden() is True
    services.delete_endpoint(endpoint=Endpoint.objects.get(pk=endpoint.pk))
    assert ridden() is False
