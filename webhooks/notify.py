"""Telling the dispatcher that work is waiting, right after the transaction commits.

With Celery (`WEBHOOKS_DISPATCH = "celery"`) a task is enqueued; embedded, the loop of
this process (if it runs here) wakes up, and the loop of another process finds the work
at its next poll. Nothing here is needed for correctness: the outbox is the truth, and
the sweeper picks up whatever a lost notification leaves behind.
"""

import logging
import threading

from django.conf import settings

logger = logging.getLogger("service.webhooks")

_wake = threading.Event()


def wake() -> None:
    _wake.set()


def wait(timeout: float) -> bool:
    """Block until woken or `timeout` seconds pass; True if woken. Clears the flag."""
    woken = _wake.wait(timeout)
    _wake.clear()
    return woken


def event_recorded(event_id: str) -> None:
    if settings.WEBHOOKS_DISPATCH == "celery":
        _enqueue("fan_out_event", event_id)
    else:
        wake()


def delivery_due(delivery_id: str) -> None:
    if settings.WEBHOOKS_DISPATCH == "celery":
        _enqueue("deliver", delivery_id)
    else:
        wake()


def _enqueue(task_name: str, *args) -> None:
    from webhooks import tasks  # Celery is only imported where it is used

    try:
        getattr(tasks, task_name).apply_async(args, retry=False)
    except Exception:  # noqa: BLE001 - the broker is down: the sweeper will deliver
        logger.warning("could not enqueue a webhook task; the sweeper will pick it up",
                       extra={"task": task_name, "task_args": list(args)}, exc_info=True)
