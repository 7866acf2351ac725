"""The embedded dispatcher's look at each wake-up, and the word on whether a space has an
enabled endpoint."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webhooks import dispatch, selectors, services
from webhooks.models import Endpoint, Event

pytestmark = pytest.mark.django_db


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


def test_whether_a_space_has_an_enabled_endpoint(space_and_key, make_space, local_urls, django_assert_num_queries):
    """`selectors.has_enabled_endpoint`, one query, in each state of the space's endpoints
    (and another space's)."""
    space, _ = space_and_key

    def ridden() -> bool:
        with django_assert_num_queries(1):
            enabled = selectors.has_enabled_endpoint(space.pk)
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
