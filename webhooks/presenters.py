"""The JSON answers of `/v1/webhooks` (and of `manage.py webhooks --json`): each shape once,
as a `TypedDict` (its OpenAPI component is generated from it, see core/api/shapes.py) with
the plain function that builds it from the rows of `webhooks.selectors`."""

from datetime import datetime
from typing import Annotated, TypedDict

from core.api.shapes import Choices, Count, Deleted, Instant, envelope
from core.formats import instant
from webhooks import models
from webhooks.models import PING
from webhooks.selectors import previous_secret_until


def _optional_instant(value: datetime | None) -> str | None:
    return instant(value) if value is not None else None


class Webhook(TypedDict):
    """A webhook endpoint of the space. Its secret is never shown again after creation or rotation."""

    id: str
    url: str
    events: Annotated[list[str], "The subscribed event types."]
    enabled: bool
    payloadVersion: Annotated[str, "Envelope version sent to this endpoint, `2026-09-20`."]
    createdAt: Instant
    disabledAt: Instant | None
    disabledReason: Annotated[
        str | None, "Why it was disabled (by you, an operator, after 20 failed deliveries in a row, or when the receiver answered "
        "410 Gone)."
    ]
    failedInARow: Annotated[Count, "Failed deliveries in a row; 20 disable the endpoint, a success resets it."]
    previousSecretExpiresAt: Annotated[
        Instant | None, "After a rotation: until when the replaced secret still signs (a second `v1=`); null otherwise."
    ]


class WebhookWithSecret(Webhook):
    """A webhook endpoint with its signing secret: shown in this answer only."""

    secret: Annotated[str, "`whsec_` and 43 base64url characters. Store it now: it is not shown again."]


def webhook(endpoint: models.Endpoint) -> Webhook:
    """Never its secret."""
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
        "previousSecretExpiresAt": _optional_instant(previous_secret_until(endpoint)),
    }


def webhook_with_secret(endpoint: models.Endpoint, secret: str) -> WebhookWithSecret:
    return {**webhook(endpoint), "secret": secret}


class WebhookAttempt(TypedDict):
    """One try of a delivery."""

    id: Annotated[str, "The request's `X-Service-Delivery` header."]
    startedAt: Instant
    finishedAt: Annotated[Instant | None, "null while the attempt is in flight."]
    durationMs: Count | None
    statusCode: Annotated[int | None, "Your receiver's HTTP status; null if none came."]
    succeeded: bool
    error: Annotated[str | None, "Why the attempt failed (timeout, status, refused address, ...)."]


class WebhookDeliveryEvent(TypedDict):
    """The event delivered."""

    id: Annotated[str, "The envelope's `id`."]
    type: Annotated[str, f"An event type, or `{PING}` for a test ping."]
    createdAt: Instant


class WebhookDelivery(TypedDict):
    """One event sent to one endpoint, with every attempt."""

    id: str
    event: WebhookDeliveryEvent
    status: Annotated[
        str,
        Choices(models.Delivery.Status.values),
        "`pending` (attempts left), `succeeded`, `failed` (every attempt failed) or `canceled` (not sent: the "
        "endpoint was disabled or the space lost Pro).",
    ]
    createdAt: Instant
    nextAttemptAt: Annotated[Instant | None, "When a pending delivery is tried next."]
    finishedAt: Instant | None
    attempts: Annotated[list[WebhookAttempt], "Oldest first."]


def attempt(row: models.Attempt) -> WebhookAttempt:
    return {
        "id": row.id,
        "startedAt": instant(row.started_at),
        "finishedAt": _optional_instant(row.finished_at),
        "durationMs": row.duration_ms,
        "statusCode": row.status_code,
        "succeeded": row.succeeded,
        "error": row.error or None,
    }


def delivery(row: models.Delivery, attempts=None) -> WebhookDelivery:
    """A delivery with its event, and its attempts: `attempts`, else those read with it
    (`selectors.delivery_with_attempts`, `endpoint_delivery_page`)."""
    event = row.event
    return {
        "id": row.id,
        "event": {"id": event.id, "type": event.type, "createdAt": instant(event.created_at)},
        "status": row.status,
        "createdAt": instant(row.created_at),
        "nextAttemptAt": _optional_instant(row.next_attempt_at) if row.status == models.Delivery.Status.PENDING else None,
        "finishedAt": _optional_instant(row.finished_at),
        "attempts": [attempt(item) for item in (row.attempt_log.all() if attempts is None else attempts)],
    }


WEBHOOK = envelope("WebhookResponse", Webhook)
WEBHOOK_WITH_SECRET = envelope("WebhookSecretResponse", WebhookWithSecret)
WEBHOOK_LIST = envelope("WebhookListResponse", Webhook, many=True, paginated=True)
WEBHOOK_DELETED = envelope("WebhookDeletedResponse", Deleted)
DELIVERY = envelope("WebhookDeliveryResponse", WebhookDelivery)
DELIVERY_LIST = envelope("WebhookDeliveryListResponse", WebhookDelivery, many=True, paginated=True)
