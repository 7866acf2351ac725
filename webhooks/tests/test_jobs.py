"""The periodic jobs of webhooks (sweep, purge) and `manage.py runjobs` refusals."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from webhooks import dispatch, jobs, services
from webhooks.models import Attempt, Delivery, DispatcherHeartbeat, Event
from webhooks.tests.fixtures import run_worker


def test_purge_forgets_old_finished_events_with_their_deliveries_and_attempts(receiver, hook, space, clock, settings):
    receiver.expect_request("/hook").respond_with_data("no", status=500)
    old_done = services.record_event(space_id=space.id, type="poll.created", poll_id="old000000001")
    run_worker()
    Delivery.objects.update(status=Delivery.Status.FAILED, next_attempt_at=None)
    old_pending = services.record_event(space_id=space.id, type="poll.created", poll_id="old000000002")
    run_worker()  # its delivery waits for a retry
    clock.shift(timedelta(days=settings.WEBHOOKS_RETENTION_DAYS, seconds=1))
    recent = services.record_event(space_id=space.id, type="poll.created", poll_id="new000000001")
    services.fan_out()

    jobs.purge()

    assert set(Event.objects.values_list("pk", flat=True)) == {old_pending.id, recent.id}
    assert not Delivery.objects.filter(event_id=old_done.id).exists()
    assert not Attempt.objects.filter(delivery__event_id=old_done.id).exists()
    assert Attempt.objects.filter(delivery__event_id=old_pending.id).count() == 1


def test_purge_keeps_events_not_yet_dispatched(space, clock):
    event = services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    clock.shift(timedelta(days=365))
    jobs.purge()
    assert Event.objects.filter(pk=event.id).exists()


def test_purge_forgets_the_heartbeats_of_stopped_dispatchers_but_the_newest(db, clock):
    services.heartbeat("host:1")
    services.heartbeat("host:2")
    clock.shift(timedelta(hours=1))
    services.heartbeat("host:3")  # the newest of the stopped ones, after a day
    clock.shift(jobs.HEARTBEAT_RETENTION + timedelta(minutes=1))
    jobs.purge()
    assert set(DispatcherHeartbeat.objects.values_list("pk", flat=True)) == {"host:3"}  # /metrics keeps its age
    clock.shift(timedelta(hours=2))
    services.heartbeat("host:4")  # a dispatcher started again
    services.heartbeat("host:5")
    clock.shift(timedelta(hours=1))
    jobs.purge()
    assert set(DispatcherHeartbeat.objects.values_list("pk", flat=True)) == {"host:4", "host:5"}


def test_runjobs_refuses_an_unknown_job(db):
    with pytest.raises(CommandError, match="unknown job\\(s\\): nope; known: "):
        call_command("runjobs", "--only", "nope")



def test_a_stop_signal_arriving_inside_the_wait_does_not_deadlock():
    """The signal handler may run while the main thread holds the stop event's own lock
    (inside `stop.wait()`); setting the event there directly would block forever."""
    import signal
    import threading

    from core.management.commands.runjobs import stop_requester

    stop = threading.Event()
    handler = stop_requester(stop)
    with stop._cond:  # where the main thread is when a signal lands inside wait()
        handler(signal.SIGTERM, None)  # returns: the event is set by another thread
    assert stop.wait(5)
