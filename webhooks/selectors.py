"""Reads of endpoints and deliveries for the back office, `manage.py` and the sweeper."""

from datetime import datetime

from django.db.models import F, Q, QuerySet
from django.utils import timezone

from webhooks.models import Attempt, Delivery, Endpoint


def get_endpoint(endpoint_id: str) -> Endpoint | None:
    return Endpoint.objects.select_related("space").filter(pk=endpoint_id).first()


def space_endpoints(space_id: str) -> QuerySet[Endpoint]:
    """The space's endpoints, oldest first."""
    return Endpoint.objects.filter(space_id=space_id).order_by("created_at", "id")


def endpoint_deliveries(endpoint_id: str, *, limit: int = 50) -> list[Delivery]:
    """The endpoint's latest deliveries, newest first, with their events."""
    return list(
        Delivery.objects.filter(endpoint_id=endpoint_id).select_related("event").order_by("-created_at", "id")[:limit]
    )


def delivery_attempts(delivery_id: str) -> QuerySet[Attempt]:
    return Attempt.objects.filter(delivery_id=delivery_id).order_by("started_at", "id")


def due_deliveries(now: datetime) -> QuerySet[Delivery]:
    """Deliveries a worker may claim at `now`: pending, due, with an attempt left, and
    in no worker's hands (never claimed, or the lease has expired)."""
    return Delivery.objects.filter(
        status=Delivery.Status.PENDING, next_attempt_at__lte=now, attempts__lt=F("max_attempts")
    ).filter(Q(claimed_until__isnull=True) | Q(claimed_until__lte=now))


def due_delivery_count() -> int:
    return due_deliveries(timezone.now()).count()
