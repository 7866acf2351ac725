"""Reads of endpoints and deliveries for the API, the back office, `manage.py` and the
sweeper. The API's reads are shaped as plain dicts here (no serializers on reads)."""

import re
from datetime import datetime

from django.db.models import F, Prefetch, Q, QuerySet
from django.utils import timezone

from core.formats import instant
from core.paging import keyset_page
from spaces.models import Space
from webhooks.models import Attempt, Delivery, Endpoint

_ID = re.compile(r"[a-z0-9]{1,30}")


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


# --- The API ------------------------------------------------------------------------------


def _optional_instant(value: datetime | None) -> str | None:
    return instant(value) if value is not None else None


def space_endpoint(space: Space, endpoint_id: str) -> Endpoint | None:
    """The space's endpoint with this id; None for another space's (or nobody's)."""
    if not _ID.fullmatch(endpoint_id):
        return None  # cannot be an endpoint id: no query needed
    return Endpoint.objects.filter(space=space, pk=endpoint_id).first()


def endpoint_dict(endpoint: Endpoint) -> dict:
    """The API's Webhook: never its secret."""
    rotation_ends = endpoint.previous_secret_expires_at
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "events": list(endpoint.event_types),
        "enabled": endpoint.is_enabled,
        "payloadVersion": endpoint.payload_version,
        "createdAt": instant(endpoint.created_at),
        "disabledAt": _optional_instant(endpoint.disabled_at),
        "disabledReason": endpoint.disabled_reason or None,
        "failedInARow": endpoint.failure_streak,
        "previousSecretExpiresAt": (
            instant(rotation_ends) if endpoint.previous_secret and rotation_ends and rotation_ends > timezone.now() else None
        ),
    }


def _page(queryset, kind: str, scope: str, *, limit: int, cursor: str | None) -> tuple[list, str | None]:
    # Bound to the space (or endpoint): a cursor issued for one is refused for another.
    return keyset_page(queryset, salt=f"webhooks.{kind}.cursor.{scope}", limit=limit, cursor=cursor)


def list_endpoints(space: Space, *, limit: int, cursor: str | None) -> tuple[list[dict], str | None]:
    """One page of the space's endpoints, newest first (createdAt, then id, descending)."""
    rows, next_cursor = _page(Endpoint.objects.filter(space=space), "endpoints", space.pk, limit=limit, cursor=cursor)
    return [endpoint_dict(endpoint) for endpoint in rows], next_cursor


def attempt_dict(attempt: Attempt) -> dict:
    return {
        "id": attempt.id,
        "startedAt": instant(attempt.started_at),
        "finishedAt": _optional_instant(attempt.finished_at),
        "durationMs": attempt.duration_ms,
        "statusCode": attempt.status_code,
        "succeeded": attempt.succeeded,
        "error": attempt.error or None,
    }


def delivery_dict(delivery: Delivery, attempts) -> dict:
    """The API's WebhookDelivery with its attempts (oldest first)."""
    event = delivery.event
    return {
        "id": delivery.id,
        "event": {"id": event.id, "type": event.type, "createdAt": instant(event.created_at)},
        "status": delivery.status,
        "createdAt": instant(delivery.created_at),
        "nextAttemptAt": _optional_instant(delivery.next_attempt_at) if delivery.status == Delivery.Status.PENDING else None,
        "finishedAt": _optional_instant(delivery.finished_at),
        "attempts": [attempt_dict(attempt) for attempt in attempts],
    }


def _deliveries_with_attempts():
    return Delivery.objects.select_related("event").defer("event__body", "event__data").prefetch_related(
        Prefetch("attempt_log", queryset=Attempt.objects.order_by("started_at", "id"))
    )


def endpoint_delivery_page(endpoint: Endpoint, *, limit: int, cursor: str | None) -> tuple[list[dict], str | None]:
    """One page of the endpoint's deliveries, newest first, each with every attempt (two
    queries whatever the page size)."""
    rows, next_cursor = _page(
        _deliveries_with_attempts().filter(endpoint=endpoint), "deliveries", endpoint.pk, limit=limit, cursor=cursor
    )
    return [delivery_dict(delivery, delivery.attempt_log.all()) for delivery in rows], next_cursor


def delivery_with_attempts(delivery_id: str) -> dict:
    delivery = _deliveries_with_attempts().get(pk=delivery_id)
    return delivery_dict(delivery, delivery.attempt_log.all())
