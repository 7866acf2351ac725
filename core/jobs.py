from celery import shared_task
from django.conf import settings
from django.utils.module_loading import import_string


@shared_task(name="core.jobs.run_job", ignore_result=True)
def run_job(name: str) -> None:
    """Run one entry of PERIODIC_JOBS (Celery beat schedules every entry)."""
    path, _interval = settings.PERIODIC_JOBS[name]
    import_string(path)()
