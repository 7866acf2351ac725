"""The Celery task that runs a periodic job: Celery beat schedules one per PERIODIC_JOBS entry."""

from celery import shared_task
from django.conf import settings
from django.utils.module_loading import import_string


@shared_task(name="core.tasks.run_job", ignore_result=True)
def run_job(name: str) -> None:
    """Run one entry of PERIODIC_JOBS (Celery beat schedules every entry)."""
    path, _interval = settings.PERIODIC_JOBS[name]
    import_string(path)()
