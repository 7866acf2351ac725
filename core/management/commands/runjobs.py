"""`manage.py runjobs`: the embedded mode's background process.

Runs every periodic job of settings.PERIODIC_JOBS on its interval (what Celery beat does
at scale) and, beside them, the embedded workers of settings.EMBEDDED_WORKERS (the webhook
dispatcher when WEBHOOKS_DISPATCH is "embedded"). Stops gracefully on SIGTERM or SIGINT: no
new work is started, work in flight finishes (for webhooks at most
WEBHOOKS_TIMEOUT_SECONDS), then the process exits 0.

An embedded worker is a dotted path to a callable `start(stop: threading.Event)` that
starts its threads and returns a function that waits for them once `stop` is set, or None
when it has nothing to run in this configuration.
"""

import logging
import signal
import threading
import time

from django import db
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.module_loading import import_string

from core.mailconfig import warn_if_console_unasked

logger = logging.getLogger("service.jobs")


class Command(BaseCommand):
    help = ("Run the periodic jobs (settings.PERIODIC_JOBS) and the embedded workers (settings.EMBEDDED_WORKERS: "
            "the webhook dispatcher in the embedded mode) until SIGTERM or SIGINT.")

    def add_arguments(self, parser):
        parser.add_argument("--no-workers", action="store_true",
                            help="run the periodic jobs only, no embedded worker (such as the webhook dispatcher)")
        parser.add_argument("--only", metavar="JOB", action="append", default=None,
                            help="run only this periodic job (repeatable); default: all of them")

    def handle(self, *args, no_workers: bool, only: list[str] | None, **options):
        jobs = dict(settings.PERIODIC_JOBS)
        if only is not None:
            unknown = sorted(set(only) - set(jobs))
            if unknown:
                raise CommandError(f"unknown job(s): {', '.join(unknown)}; known: {', '.join(sorted(jobs))}")
            jobs = {name: jobs[name] for name in only}
        callables = {name: (import_string(path), interval) for name, (path, interval) in jobs.items()}

        stop = threading.Event()
        request_stop = stop_requester(stop)
        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)

        workers = {}
        for path in [] if no_workers else settings.EMBEDDED_WORKERS:
            finish = import_string(path)(stop)
            if finish is not None:
                workers[path] = finish
        logger.info("runjobs started", extra={"jobs": sorted(callables), "workers": sorted(workers)})
        warn_if_console_unasked()

        next_run = {name: time.monotonic() for name in callables}
        while not stop.is_set():
            for name, (job, interval) in callables.items():
                if stop.is_set() or next_run[name] > time.monotonic():
                    continue
                db.close_old_connections()
                try:
                    job()
                except Exception:  # noqa: BLE001 - one failing job must not stop the others
                    logger.exception("periodic job failed", extra={"job": name})
                next_run[name] = time.monotonic() + interval
            wait = min(next_run.values(), default=time.monotonic() + 60) - time.monotonic()
            stop.wait(max(0.0, wait))
        for finish in workers.values():
            finish()
        db.connections.close_all()
        logger.info("runjobs stopped")


def stop_requester(stop: threading.Event):
    """The SIGTERM/SIGINT handler. A handler runs in the main thread, possibly while that
    thread holds `stop`'s internal lock inside `stop.wait()`: setting the event right there
    would wait for that lock forever. A short-lived thread sets it instead."""

    def finish(name: str) -> None:
        logger.info("stopping", extra={"signal": name})
        stop.set()

    def request_stop(signum, _frame):
        threading.Thread(target=finish, args=(signal.Signals(signum).name,), daemon=True).start()

    return request_stop
