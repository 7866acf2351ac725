"""Working off the outbox: the periodic jobs and the embedded dispatcher loop.

At scale (`WEBHOOKS_DISPATCH = "celery"`), a task enqueued on commit fans each event out
and sends its deliveries; Celery beat runs `sweep` (settings.PERIODIC_JOBS), which fans
out anything missed and enqueues workers for due retries. Embedded, `manage.py runjobs`
runs the `Dispatcher` loop beside the periodic jobs: the same service functions, in
threads of one process.
"""

import logging
import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta

from django import db
from django.conf import settings
from django.utils import timezone

from webhooks import notify, selectors, services

logger = logging.getLogger("service.webhooks")

# Due deliveries one `deliver_due` task is expected to work off; the sweeper enqueues one
# task per this many, at most WEBHOOKS_SWEEP_TASKS per sweep.
DELIVERIES_PER_TASK = 50

_running: "Dispatcher | None" = None


def sweep() -> None:
    """Periodic job: close deliveries abandoned on their last attempt, fan out events
    whose dispatch was missed, and get due deliveries (retries) sent."""
    services.close_abandoned()
    while services.fan_out():
        pass
    if settings.WEBHOOKS_DISPATCH == "celery":
        from webhooks import tasks

        due = selectors.due_delivery_count()
        for _ in range(min(math.ceil(due / DELIVERIES_PER_TASK), settings.WEBHOOKS_SWEEP_TASKS)):
            tasks.deliver_due.apply_async(retry=False)
    elif _running is not None:
        notify.wake()  # this process's dispatcher sends them
    else:
        services.deliver_due()


def purge() -> None:
    """Periodic job: forget events (with their deliveries and attempts) after
    WEBHOOKS_RETENTION_DAYS."""
    services.purge(older_than=timezone.now() - timedelta(days=settings.WEBHOOKS_RETENTION_DAYS))


def embedded_worker(stop: threading.Event):
    """`manage.py runjobs`' embedded worker (settings.EMBEDDED_WORKERS): the dispatcher,
    when this process sends webhooks itself. Returns the function that waits for it."""
    if settings.WEBHOOKS_DISPATCH != "embedded":
        return None
    thread = Dispatcher().start(stop)

    def finish() -> None:
        notify.wake()  # out of its idle wait: it sees `stop` at once
        thread.join()

    return finish


class Dispatcher:
    """The embedded dispatcher: fans out new events and sends due deliveries with a pool
    of `threads` senders, polling the database every `poll_seconds` when idle (sooner
    when this process records an event or a sender finishes)."""

    def __init__(self, *, threads: int | None = None, poll_seconds: float | None = None):
        self.threads = threads or settings.WEBHOOKS_EMBEDDED_THREADS
        self.poll_seconds = poll_seconds if poll_seconds is not None else settings.WEBHOOKS_POLL_SECONDS
        self._inflight: set[Future] = set()

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run in a new thread; from now on `sweep` in this process leaves the sending to it."""
        global _running
        _running = self
        thread = threading.Thread(target=self.run, args=(stop,), name="webhook-dispatcher")
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Loop until `stop` is set, then let the attempts in flight finish."""
        global _running
        _running = self
        pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="webhook-sender")
        try:
            while not stop.is_set():
                try:
                    busy = self.tick(pool)
                except Exception:  # noqa: BLE001 - e.g. the database restarting: try again
                    logger.exception("webhook dispatcher tick failed")
                    busy = False
                if not busy:
                    notify.wait(self.poll_seconds)
        finally:
            pool.shutdown(wait=True)
            _running = None
            db.connections.close_all()

    def tick(self, pool: ThreadPoolExecutor) -> bool:
        """One pass; True if there may be more work right away."""
        db.close_old_connections()
        self._inflight = {future for future in self._inflight if not future.done()}
        services.fan_out()
        free = self.threads - len(self._inflight)
        if free <= 0:
            return False  # a sender finishing wakes the loop
        claims = services.claim_due(limit=free)
        for claim in claims:
            future = pool.submit(_send, claim)
            future.add_done_callback(lambda _: notify.wake())
            self._inflight.add(future)
        return len(claims) == free


def _send(claim: services.Claim) -> None:
    db.close_old_connections()
    try:
        services.send(claim)
    except Exception:  # noqa: BLE001 - the lease expires and the delivery is tried again
        logger.exception("webhook attempt failed unexpectedly", extra={"delivery": claim.delivery.pk})
    finally:
        db.close_old_connections()
