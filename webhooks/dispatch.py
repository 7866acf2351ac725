"""Working off the outbox: the one owner of the wake-up path and the embedded dispatcher
loop (the periodic jobs, `sweep` and `purge`, are in webhooks/jobs.py). The dispatch mode (`WEBHOOKS_DISPATCH`) is read here and nowhere
else.

At scale (`celery`), `work_waiting` (webhooks.signals, sent when work commits) enqueues a
task (by name: webhooks.tasks imports this module) that fans the event out and sends its deliveries; Celery beat runs `webhooks.jobs.sweep`
(settings.PERIODIC_JOBS), which fans out anything missed and enqueues workers for due
retries. Embedded, `manage.py runjobs` runs the `Dispatcher` loop beside the periodic jobs:
the same service functions, in threads of one process; `work_waiting` wakes the loop of
this process, and the loop of another process finds the work at its next look. Nothing in
the wake-up path is needed for correctness: the outbox is the truth, and the sweeper picks
up whatever a lost wake-up leaves behind.
"""

import logging
import math
import os
import queue
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from django import db
from django.conf import settings
from django.utils import timezone

from webhooks import broker_marks, selectors, services
from webhooks.broker_marks import FAN_OUT_QUEUED_KEY, FAN_OUT_QUEUED_SECONDS, FAN_OUT_RECENT_KEY  # noqa: F401

logger = logging.getLogger("service.webhooks")

# Due deliveries one `deliver_due` task is expected to work off; the sweeper (and a fan-out
# that leaves deliveries due) enqueues one task per this many, at most WEBHOOKS_SWEEP_TASKS.
DELIVERIES_PER_TASK = 50

# Claims the embedded dispatcher hands a sender thread at once: one batch, of one endpoint
# (webhooks.services.claim_batches), so that the loop claims and records in batches. On
# SQLite, where the loop records the outcomes, it also bounds what a crash re-sends: at
# most the attempts made and not yet recorded, so at most this many per sender.
CLAIMS_PER_SENDER = 3
# While every sender still has a batch in hand, a sender's result wakes the loop for a pass
# only once at least this share of the claims in hand has come back: each pass records the
# outcomes handed over, a dozen statements and one per outcome, so under a backlog a
# pass per one or two attempts kept the loop's thread busier than the senders (the
# process's ceiling is one core). A sender done with its batch always wakes it.
REFILL_SHARE = 0.5
# How long a stopping dispatcher's sender threads wait for each other to close their
# connections (Dispatcher._close_sender_connections).
CLOSE_TIMEOUT_SECONDS = 10.0
# How often the idle embedded dispatcher on SQLite checks whether another process committed.
CHANGE_CHECK_SECONDS = 0.01
# After a pass that fanned out events, the embedded dispatcher on SQLite looks for the next
# ones (commits of other processes) no sooner than this: under a stream of writes each
# pass then fans out a batch instead of one or two events, for the same dozen statements
# (those passes were a sixth of the CPU of `POST /v1/polls` under load). The first event
# after a quiet spell is seen within CHANGE_CHECK_SECONDS as before; a sender finishing
# still wakes the loop at once.
FAN_OUT_BATCH_SECONDS = 0.03
# How often the embedded dispatcher's loop records that it is alive (one UPDATE of one row:
# on SQLite one short write lock every this many seconds, never one per turn of the loop).
HEARTBEAT_SECONDS = 5.0
_running: "Dispatcher | None" = None
_wake = threading.Event()
# Set with `_wake` by everything but a sender handing over a result: work was committed in
# this process, or the loop is told to stop. The idle loop always answers it at once.
_work = threading.Event()


def _celery() -> bool:
    return settings.WEBHOOKS_DISPATCH == "celery"


def work_waiting(sender, *, event_id: str | None = None, delivery_id: str | None = None, **_) -> None:
    """The receiver of `webhooks.signals.work_waiting` (connected in WebhooksConfig.ready):
    work committed, so enqueue its task (Celery) or wake this process's loop (embedded)."""
    if not _celery():
        wake()
    elif event_id is not None:
        _enqueue_fan_out(event_id)
    else:
        _enqueue("deliver", delivery_id)


def wake() -> None:
    _work.set()
    _wake.set()


def wait(timeout: float) -> bool:
    """Block until woken or `timeout` seconds pass; True if woken. Clears the flag."""
    woken = _wake.wait(timeout)
    _wake.clear()
    return woken


def _work_woke() -> bool:
    """Whether `wake` was called since the last look (a sender's hand-over does not count)."""
    woken = _work.is_set()
    _work.clear()
    return woken


def send_due() -> None:
    """Get the deliveries due now sent (the sweeper, after its fan-out): Celery workers
    enqueued for them, this process's dispatcher woken, or, with neither, sent here."""
    if _celery():
        enqueue_senders(selectors.due_delivery_count())
    elif _running is not None:
        wake()
    else:
        services.deliver_due()


def enqueue_senders(due: int, *, endpoints: int = 1) -> None:
    """Celery: `deliver_due` tasks for `due` deliveries to `endpoints` endpoints, one per
    DELIVERIES_PER_TASK or per endpoint, at most WEBHOOKS_SWEEP_TASKS, so that several
    workers send them side by side."""
    wanted = max(math.ceil(due / DELIVERIES_PER_TASK), min(endpoints, due))
    for _ in range(min(wanted, settings.WEBHOOKS_SWEEP_TASKS)):
        _enqueue("deliver_due")


def _enqueue(task_name: str, *args, countdown: float | None = None) -> bool:
    """Enqueue the task `webhooks.<task_name>` (webhooks.tasks) by its name. Celery is only
    imported where it is used: the project's app first (its broker, and the receivers that
    carry this request's log context into the task)."""
    from core.tasks import celery_app

    try:
        celery_app().signature(f"webhooks.{task_name}", args=args).apply_async(countdown=countdown, retry=False)
    except Exception:  # noqa: BLE001 - the broker is down: the sweeper will deliver
        logger.warning("could not enqueue a webhook task; the sweeper will pick it up",
                       extra={"task": task_name, "task_args": list(args)}, exc_info=True)
        return False
    return True


def _enqueue_fan_out(event_id: str) -> None:
    """Enqueue a fan-out unless one is queued and not started yet, with the rest of the
    batch window as its countdown when one started lately (webhooks.broker_marks)."""
    queued = broker_marks.mark_queued(event_id)
    if queued is None:
        return  # a fan-out is queued already: it will see this event
    if not _enqueue("fan_out_event", event_id, countdown=queued.countdown):
        queued.clear()


def fan_out_starting() -> None:
    """A fan-out task starts: from now on a new event enqueues a task of its own, which
    waits for the rest of FAN_OUT_BATCH_SECONDS."""
    broker_marks.mark_starting(FAN_OUT_BATCH_SECONDS)


def embedded_worker(stop: threading.Event):
    """`manage.py runjobs`' embedded worker (settings.EMBEDDED_WORKERS): the dispatcher,
    when this process sends webhooks itself. Returns the function that waits for it."""
    if _celery():
        return None
    thread = Dispatcher().start(stop)

    def finish() -> None:
        wake()  # out of its idle wait: it sees `stop` at once
        thread.join()

    return finish


class Dispatcher:
    """The embedded dispatcher: fans out new events and claims due deliveries in batches,
    and hands the attempts to a pool of `threads` senders. Idle, it looks again after
    `poll_seconds`, or sooner: when this process records an event or a sender finishes,
    and on SQLite when another process (a web worker) commits. On PostgreSQL each sender
    records the outcome of its attempt as it ends; on SQLite only this loop's thread
    writes to the database (one writer at a time), and records what the senders hand
    over at each step of its pass. The loop gives back the claims not started."""

    def __init__(self, *, threads: int | None = None, poll_seconds: float | None = None):
        self.threads = threads or settings.WEBHOOKS_EMBEDDED_THREADS
        self.poll_seconds = poll_seconds if poll_seconds is not None else settings.WEBHOOKS_POLL_SECONDS
        self._outstanding = 0  # claims handed to the senders whose results are not recorded yet
        self._batches = 0  # batches handed to the senders and not done yet
        self._results: queue.SimpleQueue[services.Result | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[None] = queue.SimpleQueue()  # one item per batch done
        self._again = False  # the last claim left senders idle while deliveries were passed over
        self._seen_version: int | None = None
        self._fanned_out_at = float("-inf")  # time.monotonic() of the last pass that fanned out events
        # PostgreSQL takes many writers: each sender records its own outcomes as they end.
        # SQLite has one writer at a time, and senders waiting for its lock cut the
        # throughput by half: there the loop records what the senders hand over.
        self._senders_record = db.connections["default"].vendor == "postgresql"
        self._beat_at = float("-inf")  # time.monotonic() of the last heartbeat recorded
        self._beat_name = f"{socket.gethostname()}:{os.getpid()}"[:100]

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run in a new thread; from now on `sweep` in this process leaves the sending to it."""
        global _running
        _running = self
        thread = threading.Thread(target=self.run, args=(stop,), name="webhook-dispatcher")
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Loop until `stop` is set, then let the attempts in flight finish (queued ones are
        not started: their claims are given back) and record them."""
        global _running
        _running = self
        pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="webhook-sender")
        try:
            while not stop.is_set():
                try:
                    self.tick(pool, stop)
                    self.heartbeat()
                except Exception:  # noqa: BLE001 - e.g. the database restarting: try again
                    logger.exception("webhook dispatcher tick failed")
                self.idle()
        finally:
            if self._senders_record:
                self._close_sender_connections(pool)
            pool.shutdown(wait=True)
            try:
                services.finish(self._collect())
            except Exception:  # noqa: BLE001 - the leases expire and the deliveries are tried again
                logger.exception("webhook dispatcher could not record the last outcomes")
            _running = None
            db.connections.close_all()

    def tick(self, pool: ThreadPoolExecutor, stop: threading.Event) -> None:
        """One pass: record what the senders handed over, fan out, claim as many as there is
        room for. Then the loop waits (`idle`): the room comes back with the results."""
        db.close_old_connections()
        self._again = False
        _work.clear()  # this pass sees what was committed so far; a later `wake` sets it again
        self._seen_version = _data_version()  # before reading: a commit from now on wakes `idle`
        services.finish(self._collect())
        events, due = selectors.work_waiting(timezone.now())
        if not (events or due):
            return  # most wake-ups on SQLite: another process committed something else
        if events:
            self._fanned_out_at = time.monotonic()
        made = services.fan_out() if events else []
        services.finish(self._collect())  # what ended meanwhile: a crash would send it again
        room = self.threads - self._batches
        if room <= 0 or not (due or made):
            return  # a sender done with its batch wakes the loop; or nothing to claim
        batches = services.claim_batches(senders=room, per_batch=CLAIMS_PER_SENDER)
        # Fewer batches than idle senders: the claim may have passed over deliveries behind
        # those of a space that reached its share meanwhile; the next pass comes at once.
        self._again = 0 < len(batches) < room
        for batch in batches:
            self._batches += 1
            self._outstanding += len(batch)
            pool.submit(self._send_batch, batch, stop)

    def heartbeat(self) -> None:
        """Record that the loop turns, at most every HEARTBEAT_SECONDS (a loop stuck in a
        tick, or a dead process, stops it: `/metrics` reports its age)."""
        now = time.monotonic()
        if now - self._beat_at < HEARTBEAT_SECONDS:
            return
        services.heartbeat(self._beat_name)
        self._beat_at = now

    def idle(self) -> None:
        """Wait up to `poll_seconds` for a reason to look again: work committed in this
        process, enough results handed over (`_refill_due`), or on SQLite another process's
        commit (checked every CHANGE_CHECK_SECONDS, after the fan-out's batch window)."""
        if self._again:
            return
        deadline = time.monotonic() + self.poll_seconds
        batching_until = self._fanned_out_at + FAN_OUT_BATCH_SECONDS
        sqlite = self._seen_version is not None
        while (left := deadline - time.monotonic()) > 0:
            if wait(min(CHANGE_CHECK_SECONDS, left) if sqlite else left) and (_work_woke() or self._refill_due()):
                return
            if sqlite and time.monotonic() >= batching_until and _data_version() != self._seen_version:
                return

    def _refill_due(self) -> bool:
        """Whether the results handed over are worth a pass: a sender is done with its batch
        (it may take another), or REFILL_SHARE of the claims in hand came back."""
        return not self._done.empty() or self._results.qsize() >= self._outstanding * REFILL_SHARE

    def _send_batch(self, batch: list[services.Claim], stop: threading.Event) -> None:
        """In a sender thread: make the batch's attempts one after another (one endpoint's:
        its kept-alive connection serves them all), then tell the loop this sender is free."""
        try:
            for claim in batch:
                self._attempt(claim, stop)
        finally:
            self._done.put(None)
            _wake.set()

    def _attempt(self, claim: services.Claim, stop: threading.Event) -> None:
        """Make the attempt, unless the loop is stopping or the claim waited too long (then
        it is given back, by the loop), and hand over the result; on PostgreSQL, record it
        first (nothing is left to hand over), so that a crash re-sends only the attempts
        in flight."""
        result = None
        try:
            if stop.is_set() or not services.lease_allows_attempt(claim):
                result = services.Result(claim, None)
            else:
                result = services.attempt(claim)
                if self._senders_record:
                    result = self._record(result)
        except Exception:  # noqa: BLE001 - the lease expires and the delivery is tried again
            logger.exception("webhook attempt failed unexpectedly", extra={"delivery": claim.delivery.pk})
        finally:
            self._results.put(result)
            _wake.set()  # the loop decides whether it is worth a pass (`_refill_due`)

    def _close_sender_connections(self, pool: ThreadPoolExecutor) -> None:
        """Each sender thread closes the connection it kept for recording (back to the
        process's pool), after the attempts queued before: one task per thread, each held at
        a barrier until all have started, so that no thread takes two."""
        barrier = threading.Barrier(self.threads)

        def close() -> None:
            db.connections.close_all()
            try:
                barrier.wait(timeout=CLOSE_TIMEOUT_SECONDS)
            except threading.BrokenBarrierError:
                pass  # a thread did not come: its connection closes with the process

        for _ in range(self.threads):
            pool.submit(close)

    @staticmethod
    def _record(result: services.Result) -> services.Result | None:
        """Record the outcome in this sender thread; None once recorded, else the result
        for the loop to record (this thread's connection is dropped: the next attempt's
        record opens a new one, e.g. after a database restart)."""
        try:
            services.record(result)
            return None
        except Exception:  # noqa: BLE001
            logger.warning("webhook sender could not record an outcome; the dispatcher will",
                           extra={"delivery": result.claim.delivery.pk}, exc_info=True)
            db.connection.close()
            return result

    def _collect(self) -> list[services.Result]:
        """The results the senders handed over since the last call."""
        while True:
            try:
                self._done.get_nowait()
            except queue.Empty:
                break
            self._batches -= 1
        results = []
        while True:
            try:
                result = self._results.get_nowait()
            except queue.Empty:
                return results
            self._outstanding -= 1
            if result is not None:
                results.append(result)


def _data_version() -> int | None:
    """SQLite's `PRAGMA data_version` on this thread's connection: it changes when another
    connection commits, and costs microseconds to read (a tick's queries cost a hundred
    times more). None on other databases."""
    if db.connection.vendor != "sqlite":
        return None
    with db.connection.cursor() as cursor:
        cursor.execute("PRAGMA data_version")
        return cursor.fetchone()[0]
