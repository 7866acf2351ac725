"""At scale: a task enqueued on commit through the Redis broker, run by a real Celery
worker; a broker that is down loses nothing."""

import json
import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from django.db import transaction

from config.celery import app
from tests.waiting import wait_until
from webhooks import dispatch, jobs, services, tasks
from webhooks.models import Delivery, Event
from webhooks.tests.fixtures import received, use_broker


@pytest.fixture
def celery_broker(local_urls, broker):
    """Celery mode with a Redis broker of our own (a redis-server of this test)."""
    local_urls.WEBHOOKS_DISPATCH = "celery"
    previous = use_broker(broker.url)
    yield app
    use_broker(previous)


@pytest.mark.django_db(transaction=True)
def test_an_event_is_delivered_by_a_celery_worker_right_after_the_commit(celery_broker, receiver, make_endpoint,
                                                                         make_space):
    space, _ = make_space()
    _endpoint, _secret = make_endpoint(receiver.url_for("/hook"), target_space=space)
    receiver.expect_request("/hook").respond_with_data("ok")
    with start_worker(celery_broker, perform_ping_check=False, shutdown_timeout=10):
        with transaction.atomic():
            event = services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
            assert client_queue_length() == 0, "nothing is enqueued before the commit"
        wait_until(lambda: len(receiver.log) == 1, 15)
        wait_until(lambda: Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).exists(), 15)
    assert [got["body"]["id"] for got in received(receiver)] == [event.id]
    assert Event.objects.get().dispatched_at is not None


@pytest.mark.postgresql  # the worker thread and the test share the database (below)
@pytest.mark.django_db(transaction=True)
def test_events_committed_in_a_stream_are_delivered_by_a_celery_worker_in_one_fan_out(celery_broker, receiver,
                                                                                     make_endpoint, make_space,
                                                                                     monkeypatch):
    """Events 15 ms apart, the first right after a fan-out started: the first waits out
    the batch window (a countdown the worker holds until its time), the others enqueue
    nothing, and one fan-out takes them all (a window of 0.5 s here, so that the test
    does not hang on the worker's speed)."""
    monkeypatch.setattr(dispatch, "FAN_OUT_BATCH_SECONDS", 0.5)
    space, _ = make_space()
    make_endpoint(receiver.url_for("/hook"), target_space=space)
    receiver.expect_request("/hook").respond_with_data("ok")
    with start_worker(celery_broker, perform_ping_check=False, shutdown_timeout=10):
        first = services.record_event(space_id=space.id, type="poll.created", poll_id="strm00000000").id
        wait_until(lambda: Event.objects.filter(pk=first, dispatched_at__isnull=False).exists(), 15)
        stream = []
        for n in range(1, 6):
            stream.append(services.record_event(space_id=space.id, type="poll.created", poll_id=f"strm{n:08d}").id)
            time.sleep(0.015)  # a stream of writes, 15 ms apart
        wait_until(lambda: Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).count() == 6, 15)
    assert sorted(got["body"]["id"] for got in received(receiver)) == sorted([first, *stream])
    assert len(set(Event.objects.filter(pk__in=stream).values_list("dispatched_at", flat=True))) == 1


def client_queue_length() -> int:
    return redis.Redis.from_url(app.conf.broker_url).llen("celery")


def queued_etas() -> list[datetime | None]:
    """The `eta` of each task waiting in the broker's queue, oldest first (None: run at once)."""
    messages = redis.Redis.from_url(app.conf.broker_url).lrange("celery", 0, -1)[::-1]  # LPUSH'd
    return [eta and datetime.fromisoformat(eta) for eta in (json.loads(raw)["headers"]["eta"] for raw in messages)]


def burst(count: int, receiver, make_endpoint, make_space) -> list[str]:
    """`count` events committed one after another (no worker running) in a space whose
    endpoint at `receiver` answers 200; their ids."""
    space, _ = make_space()
    make_endpoint(receiver.url_for("/hook"), target_space=space)
    receiver.expect_request("/hook").respond_with_data("ok")
    return [services.record_event(space_id=space.id, type="poll.created", poll_id=f"poll{n:08d}").id
            for n in range(count)]


@pytest.mark.django_db(transaction=True)
def test_events_committed_while_a_fan_out_waits_in_the_queue_enqueue_nothing_more(celery_broker, make_space):
    """The queued fan-out takes them all; once it has started, the next event enqueues
    another."""
    space, _ = make_space()
    first = [services.record_event(space_id=space.id, type="poll.created", poll_id=f"poll{n:08d}").id
             for n in range(3)]
    assert client_queue_length() == 1
    mark = redis.Redis.from_url(app.conf.broker_url).ttl(dispatch.FAN_OUT_QUEUED_KEY)
    assert 0 < mark <= dispatch.FAN_OUT_QUEUED_SECONDS  # a lost task's mark expires
    tasks.fan_out_event.apply(args=[first[0]])  # what the worker does with the queued task
    assert not Event.objects.filter(dispatched_at__isnull=True).exists()
    later = services.record_event(space_id=space.id, type="poll.created", poll_id="poll99999999").id
    assert client_queue_length() == 2
    assert list(Event.objects.filter(dispatched_at__isnull=True).values_list("id", flat=True)) == [later]


@pytest.mark.django_db(transaction=True)
def test_a_fan_out_enqueued_right_after_another_started_waits_out_the_batch_window(celery_broker, make_space,
                                                                                   monkeypatch):
    """Under a stream of writes a fan-out task starts at most every FAN_OUT_BATCH_SECONDS:
    one enqueued sooner after the last one started counts down the rest of that time (and
    the events committed meanwhile enqueue nothing); after a quiet spell, no countdown. (A
    window of 0.5 s here: the task's own work must end within it, on a loaded machine too.)"""
    monkeypatch.setattr(dispatch, "FAN_OUT_BATCH_SECONDS", 0.5)
    space, _ = make_space()

    def record(n: int) -> str:
        return services.record_event(space_id=space.id, type="poll.created", poll_id=f"wind{n:08d}").id

    first = record(0)
    tasks.fan_out_event.apply(args=[first])  # the worker starts it: the window opens
    enqueued_at = datetime.now(UTC)
    record(1)
    record(2)
    window = timedelta(seconds=dispatch.FAN_OUT_BATCH_SECONDS)
    etas = queued_etas()
    assert len(etas) == 2 and etas[0] is None  # the first event's, after a quiet spell
    assert enqueued_at < etas[1] <= enqueued_at + window + timedelta(milliseconds=5)
    time.sleep(dispatch.FAN_OUT_BATCH_SECONDS * 2)  # on purpose: the window passes
    tasks.fan_out_event.apply(args=[first])  # the countdown is over: the queued task runs
    time.sleep(dispatch.FAN_OUT_BATCH_SECONDS * 2)  # and nothing follows it
    record(3)
    assert queued_etas()[2] is None


def test_a_broker_that_is_down_loses_nothing(local_urls, receiver, hook, space, caplog,
                                             django_capture_on_commit_callbacks):
    local_urls.WEBHOOKS_DISPATCH = "celery"
    previous = use_broker("redis://127.0.0.1:1/0")  # nothing listens there
    receiver.expect_request("/hook").respond_with_data("ok")
    try:
        with caplog.at_level(logging.WARNING, logger="service.webhooks"):
            started = time.monotonic()
            with django_capture_on_commit_callbacks(execute=True):
                with transaction.atomic():
                    event = services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
            assert time.monotonic() - started < 2
        assert "could not enqueue a webhook task; the sweeper will pick it up" in caplog.text
        assert Event.objects.filter(pk=event.id, dispatched_at__isnull=True).exists()
    finally:
        use_broker(previous)
    local_urls.WEBHOOKS_DISPATCH = "embedded"
    jobs.sweep()
    assert [got["body"]["id"] for got in received(receiver)] == [event.id]


@pytest.mark.django_db(transaction=True)
def test_the_fan_out_of_a_burst_enqueues_senders_for_the_deliveries_it_did_not_claim(celery_broker, receiver,
                                                                                      make_endpoint, make_space):
    """One task fans out the whole burst; other workers send beside it what it did not
    claim (one `deliver_due` per 50 due deliveries), as the tasks of the other events did."""
    events = burst(120, receiver, make_endpoint, make_space)
    assert client_queue_length() == 1
    tasks.fan_out_event.apply(args=[events[0]])  # what the worker does with the queued task
    # 20 deliveries claimed by the task, 100 due: two senders more (the queued task is still there)
    assert client_queue_length() == 1 + 2
    assert sorted(got["body"]["id"] for got in received(receiver)) == sorted(events)  # it went on sending


# PostgreSQL only: on SQLite the worker thread and this test share the in-memory test
# database's shared cache, whose table locks fail at once instead of waiting (flaky), and
# batch claims with SKIP LOCKED are what this measures.
@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_a_burst_is_worked_off_in_batches_each_event_once(celery_broker, receiver, make_endpoint, make_space):
    """Many events committed before the worker starts: one fan-out task is queued for them
    all (webhooks.dispatch.FAN_OUT_QUEUED_KEY), which fans out and sends in batches. Every
    event arrives once, on its first attempt."""
    events = burst(45, receiver, make_endpoint, make_space)
    assert client_queue_length() == 1
    with start_worker(celery_broker, perform_ping_check=False, shutdown_timeout=10):
        wait_until(lambda: Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).count() == 45, 30)
        wait_until(lambda: client_queue_length() == 0, 15)
    assert sorted(got["body"]["id"] for got in received(receiver)) == sorted(events)
    assert set(Delivery.objects.values_list("attempts", flat=True)) == {1}
    fan_outs = set(Event.objects.values_list("dispatched_at", flat=True))  # one instant per batch
    assert len(fan_outs) <= 45 / services.CLAIM_BATCH + 1


@pytest.mark.postgresql
def test_a_prefork_worker_keeps_its_database_connections_from_task_to_task(procs, broker, settings, make_space):
    """Celery's Django fixup closed each pool process's connection pool around every task:
    a new PostgreSQL connection, a server process of its own, per task. Each pool process
    now connects once, and its pool lends that connection to every task after."""
    from django.db import connection

    procs.env.update(WEBHOOKS_DISPATCH="celery", CELERY_BROKER_URL=broker.url)
    settings.WEBHOOKS_DISPATCH = "celery"
    space, _ = make_space()
    previous = use_broker(broker.url)

    def sessions() -> int:
        """Connections made to the test database so far (each counted by the server process
        that served it, at the latest when it exits)."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
            return cursor.fetchone()[0]

    def workers(action: str = "count(*)") -> int:
        """`action` on the server processes of the worker's connections (those made since it started)."""
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {action} FROM pg_stat_activity WHERE datname = current_database() "
                           "AND backend_start > %s", [started])
            return cursor.fetchone()[0]

    try:
        before = sessions()
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            started = cursor.fetchone()[0]
        worker = procs.start("-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING", "--concurrency", "2",
                             "--without-gossip", "--without-mingle", "--without-heartbeat", group=True)

        def fanned_out(events: range) -> None:
            for n in events:  # each event's commit enqueues a fan-out, run before the next event
                event = services.record_event(space_id=space.id, type="poll.created", poll_id=f"conn{n:08d}")
                wait_until(lambda event=event: Event.objects.filter(pk=event.pk, dispatched_at__isnull=False).exists(), 15)

        fanned_out(range(30))
        # The server ends the worker's connections between two tasks: the next tasks get new
        # ones from the pool (which looks at a connection before lending it), none fails.
        assert workers("bool_and(pg_terminate_backend(pid))")
        fanned_out(range(30, 34))
        procs.kill_group(worker)
        wait_until(lambda: workers() == 0, 15)  # the worker's server processes have exited (and counted)
    finally:
        use_broker(previous)
    # A connection per pool process at first, and again after the server ended them: not
    # one per task (34).
    assert 1 <= sessions() - before <= 4
