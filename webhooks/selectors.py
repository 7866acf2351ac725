"""Reads of endpoints and deliveries for the API, the back office, `manage.py` and the
sweeper: rows and computed values. Their JSON is `webhooks.presenters`'."""

import re
from datetime import datetime

from django.db.models import Exists, F, Prefetch, Q, QuerySet
from django.utils import timezone

from core.paging import keyset_page
from spaces.models import Space
from webhooks.models import Attempt, Delivery, Endpoint, Event

_ID = re.compile(r"[a-z0-9]{1,30}")


def has_enabled_endpoint(space_id: str) -> bool:
    """Whether the space has an enabled endpoint (one query, on `endpoint_space_enabled`):
    False lets a write record its event as fanned out already
    (`webhooks.services.poll_event(fan_out=False)`)."""
    return Endpoint.objects.filter(space_id=space_id, is_enabled=True).exists()


def waiting_events() -> QuerySet[Event]:
    """Events not fanned out yet (the partial index `event_pending` holds them alone)."""
    return Event.objects.filter(dispatched_at__isnull=True)


def work_waiting(now: datetime) -> tuple[bool, bool]:
    """Whether an event waits to be fanned out, and whether a delivery is due at `now`: the
    embedded dispatcher's look at every wake-up, one query. The two EXISTS are read beside
    any one event: with no event at all there is no delivery either (each has its event)."""
    looks = (Event.objects.order_by().annotate(events=Exists(waiting_events()), due=Exists(due_deliveries(now)))
             .values_list("events", "due")[:1])
    for events, due in looks:
        return bool(events), bool(due)
    return False, False


def receivers(space_ids: set[str]) -> QuerySet[Endpoint]:
    """The enabled endpoints of these spaces whose subscription is active, with their space
    and its subscription, oldest first: whom the fan-out makes deliveries for."""
    return (Endpoint.objects.filter(space_id__in=space_ids, is_enabled=True, space__subscription__is_active=True)
            .select_related("space__subscription").order_by("created_at", "id"))


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


def space_endpoint(space: Space, endpoint_id: str) -> Endpoint | None:
    """The space's endpoint with this id; None for another space's (or nobody's)."""
    if not _ID.fullmatch(endpoint_id):
        return None  # cannot be an endpoint id: no query needed
    return Endpoint.objects.filter(space=space, pk=endpoint_id).first()


def previous_secret_until(endpoint: Endpoint) -> datetime | None:
    """After a rotation, until when the replaced secret still signs; None when it no longer does."""
    ends = endpoint.previous_secret_expires_at
    return ends if endpoint.previous_secret and ends and ends > timezone.now() else None


def _page(queryset, kind: str, scope: str, *, limit: int, cursor: str | None) -> tuple[list, str | None]:
    # Bound to the space (or endpoint): a cursor issued for one is refused for another.
    return keyset_page(queryset, salt=f"webhooks.{kind}.cursor.{scope}", limit=limit, cursor=cursor)


def list_endpoints(space: Space, *, limit: int, cursor: str | None) -> tuple[list[Endpoint], str | None]:
    """One page of the space's endpoints, newest first (createdAt, then id, descending)."""
    return _page(Endpoint.objects.filter(space=space), "endpoints", space.pk, limit=limit, cursor=cursor)


def _deliveries_with_attempts():
    return Delivery.objects.select_related("event").defer("event__body", "event__data").prefetch_related(
        Prefetch("attempt_log", queryset=Attempt.objects.order_by("started_at", "id"))
    )


def endpoint_delivery_page(endpoint: Endpoint, *, limit: int, cursor: str | None) -> tuple[list[Delivery], str | None]:
    """One page of the endpoint's deliveries, newest first, each with its event and every
    attempt, oldest first, in `attempt_log` (two queries whatever the page size)."""
    return _page(
        _deliveries_with_attempts().filter(endpoint=endpoint), "deliveries", endpoint.pk, limit=limit, cursor=cursor
    )


def delivery_with_attempts(delivery_id: str) -> Delivery:
    """A delivery with its event and its attempts, oldest first, in `attempt_log`."""
    return _deliveries_with_attempts().get(pk=delivery_id)


# --- Operators ------------------------------------------------------------------------------


def operator_deliveries(*, endpoint_id: str | None = None, space_id: str | None = None, status: str | None = None,
                        event_type: str | None = None, limit: int = 50) -> list[Delivery]:
    """Deliveries newest first, with their events (not their bodies), narrowed by endpoint,
    space, status and event type: one query."""
    deliveries = Delivery.objects.select_related("event").defer("event__body", "event__data").order_by("-created_at", "id")
    if endpoint_id:
        deliveries = deliveries.filter(endpoint_id=endpoint_id)
    if space_id:
        deliveries = deliveries.filter(endpoint__space_id=space_id)
    if status:
        deliveries = deliveries.filter(status=status)
    if event_type:
        deliveries = deliveries.filter(event__type=event_type)
    return list(deliveries[:limit])


def get_delivery(delivery_id: str) -> Delivery | None:
    return Delivery.objects.select_related("event", "endpoint").filter(pk=delivery_id).first()
