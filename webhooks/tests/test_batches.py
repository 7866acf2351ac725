"""Delivery in batches: kept-alive connections (still vetted, still under the deadline),
claims given back when their lease has no room left, and a constant number of queries
per batch."""

import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.waiting import wait_until
from webhooks import dispatch, sender, services
from webhooks.models import Attempt, Delivery
from webhooks.tests.fixtures import read_request, received, run_worker, trickle_answer

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def record(space, n: int = 0):
    return services.record_event(space_id=space.id, type="poll.created", poll_id=f"poll{n:08d}")


def serve(answer):
    """A raw peer that answers every request of a connection with `answer(index, conn)`,
    `index` counting the requests over all connections."""
    served = []

    def behave(conn):
        while read_request(conn):
            served.append(conn)
            answer(len(served) - 1, conn)

    return behave


def test_a_burst_to_one_endpoint_reuses_one_connection(raw_receiver, make_endpoint, space):
    raw_receiver.behave = serve(lambda index, conn: conn.sendall(OK))
    make_endpoint(raw_receiver.url())
    for n in range(5):
        record(space, n)
    assert run_worker() == 5
    assert raw_receiver.connections == 1
    assert set(Delivery.objects.values_list("status", "attempts")) == {(Delivery.Status.SUCCEEDED, 1)}


def test_a_kept_connection_is_still_cut_off_at_the_deadline(raw_receiver, make_endpoint, space):
    """The second request goes over the first one's connection; the receiver trickles its
    answer byte by byte (no read timeout fires): the deadline still ends the attempt."""

    def answer(index, conn):
        if index == 0:
            conn.sendall(OK)
            return
        trickle_answer(conn)

    raw_receiver.behave = serve(answer)
    make_endpoint(raw_receiver.url())
    record(space, 0)
    assert run_worker() == 1
    record(space, 1)
    started = time.monotonic()
    assert run_worker() == 1
    assert time.monotonic() - started < 1.8  # the test timeout is 1 s
    assert raw_receiver.connections == 1
    slow = Attempt.objects.order_by("started_at").last()
    assert (slow.succeeded, slow.error) == (False, "timed out after 1 s")


def test_attempts_start_no_thread_of_their_own(raw_receiver, make_endpoint, space, monkeypatch):
    """One watchdog thread per process bounds every attempt (not a timer thread per
    attempt); it still cuts a trickling answer off after many attempts that ended in time."""
    started = []  # threads started by the sending thread (the receiver's are not)
    thread_start, sending = threading.Thread.start, threading.current_thread()

    def counting_start(thread):
        if threading.current_thread() is sending:
            started.append(thread.name)
        thread_start(thread)

    monkeypatch.setattr(threading.Thread, "start", counting_start)

    def answer(index, conn):
        if index < 10:
            conn.sendall(OK)
        else:
            trickle_answer(conn)

    raw_receiver.behave = serve(answer)
    make_endpoint(raw_receiver.url())
    for n in range(10):
        record(space, n)
    assert run_worker() == 10
    record(space, 10)
    started_at = time.monotonic()
    assert run_worker() == 1
    assert time.monotonic() - started_at < 1.8  # the test timeout is 1 s
    assert Attempt.objects.order_by("started_at").last().error == "timed out after 1 s"
    assert started in ([], ["webhook-deadlines"])  # at most the watchdog, once per process
    assert [t.name for t in threading.enumerate()].count("webhook-deadlines") == 1


def test_an_answer_not_read_to_its_end_is_not_reused(raw_receiver, make_endpoint, space):
    big = b"x" * (sender.MAX_RESPONSE_BYTES + 1)
    raw_receiver.behave = serve(
        lambda index, conn: conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(big), big))
    )
    make_endpoint(raw_receiver.url())
    for n in range(2):
        record(space, n)
    assert run_worker() == 2
    assert raw_receiver.connections == 2
    assert Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).count() == 2


def test_a_connection_idle_too_long_is_not_reused(raw_receiver, make_endpoint, space, monkeypatch):
    monkeypatch.setattr(sender, "KEEPALIVE_IDLE_SECONDS", 0.2)
    raw_receiver.behave = serve(lambda index, conn: conn.sendall(OK))
    make_endpoint(raw_receiver.url())
    record(space, 0)
    run_worker()
    time.sleep(0.3)  # on purpose: idle longer than KEEPALIVE_IDLE_SECONDS
    record(space, 1)
    run_worker()
    assert raw_receiver.connections == 2


def test_claims_whose_lease_has_no_room_left_are_given_back(receiver, hook, space, clock):
    """Claims wait their turn in a batch; once too little of the lease is left for a whole
    attempt (with a margin), they are given back unsent, as if never claimed."""
    receiver.expect_request("/hook").respond_with_data("ok")
    for n in range(3):
        record(space, n)
    services.fan_out()
    claims = services.claim_due(limit=10)
    assert len(claims) == 3
    clock.shift(30)  # lease 60 s, timeout 1 s: an attempt may start within 29.5 s of the claim
    assert services.send_many(claims) == 0
    assert receiver.log == []
    assert Attempt.objects.count() == 0
    assert set(Delivery.objects.values_list("status", "attempts", "claimed_until", "claim_token")) == {
        (Delivery.Status.PENDING, 0, None, "")
    }
    assert run_worker() == 3
    assert set(Delivery.objects.values_list("status", "attempts")) == {(Delivery.Status.SUCCEEDED, 1)}
    assert len(received(receiver)) == 3


def deliver_with_celery_fan_out() -> int:
    return services.send_many(services.fan_out_and_claim()) + services.deliver_due()


@pytest.mark.parametrize(("work_off", "statements"), [(run_worker, 22), (deliver_with_celery_fan_out, 16)],
                         ids=["claim", "fan-out-and-claim"])
def test_a_batch_costs_a_constant_plus_a_short_transaction_per_outcome(receiver, hook, space, work_off, statements):
    """Fan out, claim (or both at once), send and record a batch, then find nothing more
    due: a constant number of statements (transactions included) per batch, and each
    outcome recorded as its attempt ends, in one short transaction."""
    receiver.expect_request("/hook").respond_with_data("ok")
    per_outcome = 5  # BEGIN, the attempt, the delivery, the endpoint's failure count, COMMIT
    claim_lock = 1 if connection.vendor == "postgresql" else 0  # webhooks.services.shares.CLAIM_LOCK

    def queries_for(events: int) -> int:
        for n in range(events):
            record(space, n)
        with CaptureQueriesContext(connection) as queries:
            assert work_off() == events
        return len(queries)

    one, batch = queries_for(1), queries_for(services.CLAIM_BATCH)
    assert (one, batch - one) == (statements - 6 + per_outcome + claim_lock, (services.CLAIM_BATCH - 1) * per_outcome)
    assert Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).count() == 1 + services.CLAIM_BATCH


@pytest.mark.django_db(transaction=True)
def test_under_a_backlog_the_embedded_loop_hands_each_sender_a_batch_of_one_endpoint(receiver, make_endpoint, space,
                                                                                      settings, monkeypatch):
    """The embedded dispatcher under a backlog to several endpoints: its first pass gives
    every sender a batch (CLAIMS_PER_SENDER claims of one endpoint, under a token of their
    own), a pass comes when a sender is done with its batch (or half the claims in hand are
    back), not for every result handed over, and every event arrives once."""
    settings.WEBHOOKS_SPACE_SENDERS = 4  # the space may use every sender: one per endpoint
    receiver.expect_request("/hook").respond_with_data("ok")
    threads, endpoints, events = 4, 4, 15
    for n in range(endpoints):
        make_endpoint(receiver.url_for("/hook") + f"?n={n}")
    for n in range(events):
        record(space, n)
    deliveries = endpoints * events
    claims, recorded = [], []
    claim_batches, finish = services.claim_batches, services.finish

    def counted_claim(**kwargs):
        batches = claim_batches(**kwargs)
        claims.append([(len({c.delivery.endpoint_id for c in b}), len({c.token for c in b}), len(b)) for b in batches])
        return batches

    def counted_finish(results):
        recorded.append(len(results))
        finish(results)

    monkeypatch.setattr(services, "claim_batches", counted_claim)
    monkeypatch.setattr(services, "finish", counted_finish)
    stop = threading.Event()
    dispatcher = dispatch.Dispatcher(threads=threads, poll_seconds=30)  # no pass for the poll's sake
    thread = dispatcher.start(stop)
    try:  # the test's thread reads no table meanwhile (SQLite's shared in-memory test database locks tables)
        wait_until(lambda: len(receiver.log) >= deliveries, 60, interval=0.02, message="the backlog was not worked off")
    finally:
        stop.set()
        dispatch.wake()
        thread.join()
    made = [batches for batches in claims if batches]
    assert made[0] == [(1, 1, dispatch.CLAIMS_PER_SENDER)] * threads  # every sender a whole batch
    assert all(size <= dispatch.CLAIMS_PER_SENDER and (ends, tokens) == (1, 1)
               for batches in made for ends, tokens, size in batches), made
    assert sum(size for batches in made for _e, _t, size in batches) == deliveries
    if connection.vendor == "sqlite":  # the loop records the outcomes (elsewhere each sender its own)
        # Ideally a pass per batch; how the senders' results interleave depends on the
        # machine's load, but a pass for every result or two is well above this bound.
        passes = [size for size in recorded if size]
        assert sum(recorded) == deliveries and len(passes) < deliveries / 2, recorded
    assert len(receiver.log) == deliveries
    assert Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).count() == deliveries
