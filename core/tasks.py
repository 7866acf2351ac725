"""The Celery task that runs a periodic job (Celery beat schedules one per PERIODIC_JOBS
entry), and the way to the project's Celery app for a process that enqueues tasks."""

from celery import shared_task
from django.conf import settings
from django.utils.module_loading import import_string


@shared_task(name="core.tasks.run_job", ignore_result=True)
def run_job(name: str) -> None:
    """Run one entry of PERIODIC_JOBS (Celery beat schedules every entry)."""
    path, _interval = settings.PERIODIC_JOBS[name]
    import_string(path)()


def celery_app():
    """The project's Celery app (settings.CELERY_APP), imported on first use: its broker,
    and the receivers that carry the log context of the request that enqueues a task into
    the task. Call it before enqueuing a task or asking the workers: a `shared_task` is
    sent through the current app, Celery's unconfigured fallback until this one is loaded.
    The worker and beat load it themselves (`celery -A config`)."""
    return import_string(settings.CELERY_APP)
