"""Gauges of the webhook outbox, read from the database when `/metrics` is scraped
(settings.METRICS_COLLECTORS): whether the dispatcher (Celery workers or the embedded loop)
keeps up. Both reads use the outbox's indexes."""

from django.conf import settings
from django.db.models import Count, Max, Min
from django.utils import timezone

from core.metrics import gauge
from webhooks.models import Delivery, DispatcherHeartbeat, Event


def outbox():
    now = timezone.now()
    events = Event.objects.filter(dispatched_at__isnull=True).aggregate(count=Count("id"), oldest=Min("created_at"))
    due = Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now).aggregate(
        count=Count("id"), oldest=Min("next_attempt_at"))
    yield gauge("service_webhook_events_undispatched", "Events recorded but not yet fanned out to their endpoints.",
                events["count"])
    yield gauge("service_webhook_events_undispatched_oldest_age_seconds",
                "Age of the oldest event not yet fanned out; 0 when there is none.",
                (now - events["oldest"]).total_seconds() if events["oldest"] else 0)
    yield gauge("service_webhook_deliveries_due", "Pending deliveries whose next attempt is due now.", due["count"])
    yield gauge("service_webhook_deliveries_due_oldest_age_seconds",
                "How long the most overdue delivery has been due; 0 when none is.",
                (now - due["oldest"]).total_seconds() if due["oldest"] else 0)
    yield from dispatcher()


def dispatcher():
    """Which dispatcher sends; with Celery, how many workers answer a ping (1 s), embedded,
    how long ago its loop last beat."""
    mode = settings.WEBHOOKS_DISPATCH
    yield gauge("service_webhook_dispatch_mode", "1 for the dispatch mode in use (WEBHOOKS_DISPATCH).", 1,
                {"mode": mode})
    if mode == "celery":
        from core.tasks import celery_app  # Celery is only imported where it is used

        try:
            replies = celery_app().control.ping(timeout=1.0)
        except Exception:  # noqa: BLE001 - the broker is down: no worker can be reached
            replies = []
        yield gauge("service_celery_workers_responding", "Celery workers that answered a ping within 1 second.",
                    len(replies))
    else:
        # The loop runs in `manage.py runjobs`, not in the scraped web process: its last
        # heartbeat (webhooks.dispatch.HEARTBEAT_SECONDS) is read from the database.
        last = DispatcherHeartbeat.objects.aggregate(last=Max("beat_at"))["last"]
        yield gauge("service_webhook_dispatcher_heartbeat_age_seconds",
                    "Embedded mode only: seconds since an embedded dispatcher loop (manage.py runjobs) last "
                    "recorded a heartbeat (every 5 s while it runs); NaN when none ever has.",
                    (timezone.now() - last).total_seconds() if last else float("nan"))
