"""The Celery fan-out's marks in the Redis broker (webhooks.dispatch enqueues the fan-out
tasks): at most one fan-out waits in the queue, and under a stream of writes one starts at
most every batch window."""

import logging
from dataclasses import dataclass

import redis
from django.conf import settings

from core import brokers
from core.redis_commands import Script, shared

logger = logging.getLogger("service.webhooks")

# A fan-out task works off every waiting event, so a second one enqueued while the first
# waits in the queue would find nothing left: the write that enqueues a fan-out marks it in
# the Redis broker (SET NX), the task clears the mark before it looks for events, and the
# writes in between enqueue nothing (their events are committed before the mark is
# cleared, so the task sees them). A mark whose task was lost expires; the sweeper fans out
# what waits meanwhile.
FAN_OUT_QUEUED_KEY = "webhooks:fan-out-queued"
FAN_OUT_QUEUED_SECONDS = 30
# The Celery fan-out batches as the embedded one does: a task starting marks it for
# FAN_OUT_BATCH_SECONDS (FAN_OUT_RECENT_KEY), and a fan-out enqueued meanwhile is given the
# rest of that time as its countdown, so under a stream of writes one task starts at most
# every FAN_OUT_BATCH_SECONDS and takes every event committed until then (each task costs
# the worker a few milliseconds of Celery's and kombu's own work, whatever it carries). The
# first event after a quiet spell is enqueued with no countdown, as before.
FAN_OUT_RECENT_KEY = "webhooks:fan-out-recent"
# KEYS: the queued mark, the recent mark; ARGV: the event id, FAN_OUT_QUEUED_SECONDS. Nil
# when a fan-out is queued already; else the recent mark's PTTL: -2 (none: no countdown)
# or the milliseconds it has left.
_MARK_QUEUED = Script("""
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  return redis.call('PTTL', KEYS[2])
end
return false
""")
# KEYS: the queued mark, the recent mark; ARGV: FAN_OUT_BATCH_SECONDS in milliseconds.
_MARK_STARTING = Script("""
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return 1
""")


@dataclass
class Queued:
    """A fan-out marked as queued: enqueue it with `countdown` (None: at once), or `clear`
    the mark if the enqueue failed."""

    countdown: float | None
    marks: tuple | None

    def clear(self) -> None:
        if self.marks is None:
            return
        commands, keys = self.marks
        try:
            commands.run("DEL", keys[0])
        except redis.RedisError:  # the mark then expires by itself
            logger.warning("could not clear the queued fan-out mark", exc_info=True)


def mark_queued(event_id: str) -> Queued | None:
    """Mark a fan-out as queued for this event; None if one is queued already (nothing to
    enqueue). Its countdown is the rest of the batch window when a fan-out started lately."""
    found = marks()
    if found is None:
        return Queued(None, None)
    commands, keys = found
    try:
        recent_ms = commands.script(_MARK_QUEUED, keys, [event_id, FAN_OUT_QUEUED_SECONDS])
    except redis.RedisError:  # the broker is down: the enqueue fails and logs it
        return Queued(None, None)
    if recent_ms is None:
        return None
    return Queued(recent_ms / 1000 if recent_ms > 0 else None, found)


def mark_starting(batch_seconds: float) -> None:
    """A fan-out task starts: clear the queued mark, and mark a start for `batch_seconds`."""
    found = marks()
    if found is None:
        return
    commands, keys = found
    try:
        commands.script(_MARK_STARTING, keys, [round(batch_seconds * 1000)])
    except redis.RedisError:  # the queued mark then expires by itself
        logger.warning("could not clear the queued fan-out mark", exc_info=True)


def marks():
    """(`core.redis_commands.Commands`, [queued key, recent key]) of the fan-out's marks in
    the Celery app's broker, or None when the broker is not Redis."""
    from core.tasks import celery_app

    url = brokers.redis_url(celery_app().conf.broker_url)
    if url is None:
        return None
    prefix = settings.CELERY_BROKER_PREFIX
    # A short timeout, no retries: a broker that is down costs one timeout here, then the
    # enqueue fails and logs it.
    return shared(url, 1), [f"{prefix}{FAN_OUT_QUEUED_KEY}", f"{prefix}{FAN_OUT_RECENT_KEY}"]
