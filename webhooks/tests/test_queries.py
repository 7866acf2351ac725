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

pytestmark = pytest.mark.django_db


def _oldest_unlocked(queryset, order: str, limit: int):
    """The ORM's form of the locked reads: the first `limit` rows in `order`, locked
    (`FOR UPDATE SKIP LOCKED`, which SQLite ignores)."""
    return queryset.select_for_update(skip_locked=True).order_by(order)[:limit]


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
        dispatcher.tick(pool, threading.Event())
    looks = [query["sql"] for query in seen if "EXISTS" in query["sql"]]
    assert len(looks) == 1 and len(seen) == (2 if connection.vendor == "sqlite" else 1), [q["sql"] for q in seen]

    # An event of a space without endpoints: fanned out to nobody, and no claim looked for.
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    with ThreadPoolExecutor(max_workers=1) as pool, CaptureQueriesContext(connection) as seen:
        dispatcher.tick(pool, threading.Event())
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


def subscription(delivery) -> dict | None:
    """The values of the delivery's space's subscription, None when it has none."""
    found = getattr(delivery.endpoint.space, "subscription", None)
    return None if found is None else values(found)


def test_the_claim_is_the_orms(hook, space, make_space, local_urls):
    """`claimable` and `claim` against the ORM queries `claim_due` made before: the same
    deliveries in the same order, leased and counted alike, read with the same event,
    endpoint, space and subscription (or none: a space whose subscription row is gone)."""
    bare, _ = make_space(pro=False)
    Subscription.objects.filter(space=bare).delete()
    other, _ = services.create_endpoint(space=bare, url="http://127.0.0.1:9/bare")
    for n in range(4):
        services.record_event(space_id=space.id, type="poll.created", poll_id=f"Claim{n:07d}")
    services.fan_out()
    now = timezone.now()
    deliveries = list(Delivery.objects.order_by("created_at", "id"))
    event = services.record_event(space_id=bare.id, type="poll.created", poll_id="Bare00000001")
    deliveries.append(Delivery.objects.create(event=event, endpoint=other, next_attempt_at=now, created_at=now))
    for offset, delivery in zip((3, 1, 4, 2, 5), deliveries, strict=True):  # due in another order than made
        Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=now - timedelta(seconds=10 * offset))
    Delivery.objects.filter(pk=deliveries[1].pk).update(claimed_until=now - timedelta(seconds=1))  # its worker died
    Delivery.objects.filter(pk=deliveries[2].pk).update(claimed_until=now + timedelta(seconds=30))  # in other hands
    due = selectors.due_deliveries(now)

    def orm_claimable(limit, delivery_id=None):
        rows = due if delivery_id is None else due.filter(pk=delivery_id)
        return {pk: until is not None for pk, until in _oldest_unlocked(rows, "next_attempt_at", limit)
                .values_list("pk", "claimed_until")}

    for limit in (1, 2, 10):
        with transaction.atomic():
            assert queries.claimable(now, limit) == orm_claimable(limit)
    with transaction.atomic():
        ours = queries.claimable(now, 10)
    assert list(ours) == [deliveries[4].pk, deliveries[0].pk, deliveries[3].pk, deliveries[1].pk]  # due longest first
    assert ours == {deliveries[4].pk: False, deliveries[0].pk: False, deliveries[3].pk: False, deliveries[1].pk: True}
    for delivery in deliveries:
        with transaction.atomic():
            assert queries.claimable(now, 10, delivery.pk) == orm_claimable(10, delivery.pk)
    assert queries.claimable(now, 10, "not-a-delivery") == {}

    until = now + timedelta(seconds=60)
    picked = [deliveries[4].pk, deliveries[0].pk, deliveries[1].pk]
    before = dict(Delivery.objects.values_list("pk", "attempts"))
    with transaction.atomic(), CaptureQueriesContext(connection) as seen:
        claimed = queries.claim(picked, until, "tokenA")
        loaded = [(d.event.type, d.endpoint.url, d.endpoint.space.name, d.endpoint.space.is_pro) for d in claimed]
    assert len(seen) == 2  # the lease, then the rows with what they need: nothing read lazily
    theirs = list(Delivery.objects.filter(pk__in=picked).select_related("event", "endpoint__space__subscription"))
    assert [values(d) for d in claimed] == [values(d) for d in theirs]
    assert [values(d.event) for d in claimed] == [values(d.event) for d in theirs]
    assert [values(d.endpoint) for d in claimed] == [values(d.endpoint) for d in theirs]
    assert [values(d.endpoint.space) for d in claimed] == [values(d.endpoint.space) for d in theirs]
    assert [subscription(d) for d in claimed] == [subscription(d) for d in theirs]
    assert subscription(claimed[0]) is None and subscription(claimed[1])["is_active"] is True
    assert all(d.claimed_until == until and d.claim_token == "tokenA" for d in claimed)
    assert [d.attempts for d in claimed] == [before[d.pk] + 1 for d in claimed]
    assert loaded[0][2:] == (bare.name, False) and set(loaded[1:]) == {("poll.created", hook[0].url, space.name, True)}
    assert dict(Delivery.objects.values_list("pk", "attempts")) == {**before, **{pk: before[pk] + 1 for pk in picked}}


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
