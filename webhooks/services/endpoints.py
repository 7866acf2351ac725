"""Endpoints: the URL and event-type rules, the 5-endpoint limit, secrets and their
rotation, enabling and disabling."""

import logging
import threading
from contextlib import contextmanager, nullcontext
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core import metrics
from core.errors import ServiceError
from spaces.models import Space
from webhooks import signing, targets
from webhooks.models import EVENT_TYPES, PING, Delivery, Endpoint
from webhooks.rules import EndpointLimitReached

logger = logging.getLogger("service.webhooks")

# An endpoint is disabled after this many failed deliveries in a row.
DISABLE_AFTER_FAILURES = 20

# How long a replaced secret keeps signing after `rotate_secret`.
SECRET_OVERLAP = timedelta(hours=24)


def clean_event_types(event_types: list[str] | None) -> list[str]:
    """The subscribed types in a fixed order; None means every type (EVENT_TYPES)."""
    if event_types is None:
        return list(EVENT_TYPES)
    chosen = {name.strip() for name in event_types if name.strip()}
    unknown = sorted(chosen - set(EVENT_TYPES))
    if unknown:
        raise ServiceError(f"unknown event type(s): {', '.join(unknown)}; known: {', '.join(EVENT_TYPES)}")
    if not chosen:
        raise ServiceError("subscribe to at least one event type")
    return [name for name in EVENT_TYPES if name in chosen]


_ahead = threading.local()  # per request (greenlet): the URL checked ahead, see `url_checked_ahead`


@contextmanager
def url_checked_ahead(url, *, released=nullcontext):
    """Check the URL rules now, resolving the host, and have `clean_url` use the outcome
    for this URL inside the block instead of resolving again. A view wraps its create or
    update in this: the lookup happens before any transaction (with SQLite one holds the
    database's write lock), and inside `released` (the view gives its request slot back
    meanwhile), so a slow or silent DNS server holds up no one else. Refusals are raised
    later, by `clean_url`, in the service's order. The sender checks every address again
    when it connects."""
    if not isinstance(url, str):
        yield
        return
    with released():
        try:
            outcome = (targets.check_url(url), "")
        except targets.ForbiddenTarget as exc:
            outcome = (None, str(exc))
    _ahead.checked = (url, outcome)
    try:
        yield
    finally:
        _ahead.checked = None


def clean_url(url: str) -> str:
    """The URL rules (`webhooks.targets.check_url`) as a ServiceError."""
    checked = getattr(_ahead, "checked", None)
    if checked is not None and checked[0] == url:
        cleaned, refusal = checked[1]
    else:
        try:
            cleaned, refusal = targets.check_url(url), ""
        except targets.ForbiddenTarget as exc:
            cleaned, refusal = None, str(exc)
    if cleaned is None:
        raise ServiceError(f"url: {refusal}")
    return cleaned


@transaction.atomic
def create_endpoint(*, space: Space, url: str, event_types: list[str] | None = None) -> tuple[Endpoint, str]:
    """A new endpoint of the space (at most 5), enabled, receiving the events that happen
    from now on. Returns it and its secret, which the caller shows once."""
    event_types = clean_event_types(event_types)
    url = clean_url(url)
    Space.objects.select_for_update().filter(pk=space.pk).first()  # serialise the count
    if Endpoint.objects.filter(space=space).count() >= Endpoint.MAX_PER_SPACE:
        raise EndpointLimitReached(
            f"a space may have at most {Endpoint.MAX_PER_SPACE} webhook endpoints; remove one first"
        )
    secret = signing.new_secret()
    now = timezone.now()
    endpoint = Endpoint.objects.create(
        space=space, url=url, secret=secret, event_types=event_types, created_at=now, enabled_at=now
    )
    return endpoint, secret


@transaction.atomic
def update_endpoint(
    *, endpoint: Endpoint, url: str | None = None, event_types: list[str] | None = None, enabled: bool | None = None,
    disabled_reason: str = "disabled by an operator",
) -> Endpoint:
    """Change the URL, the subscribed types and/or the enabled flag (None leaves a value as
    it is); enabling and disabling work as `enable_endpoint` and `disable_endpoint`."""
    if event_types is not None:
        endpoint.event_types = clean_event_types(event_types)
    if url is not None:
        endpoint.url = clean_url(url)
    if url is not None or event_types is not None:
        endpoint.save(update_fields=["url", "event_types"])
    if enabled is True and not endpoint.is_enabled:
        enable_endpoint(endpoint=endpoint)
    elif enabled is False and endpoint.is_enabled:
        disable_endpoint(endpoint=endpoint, reason=disabled_reason)
    return endpoint


@transaction.atomic
def rotate_secret(*, endpoint: Endpoint) -> tuple[Endpoint, str]:
    """Give the endpoint a new secret and return it (the caller shows it once). The
    replaced secret keeps signing for SECRET_OVERLAP: meanwhile every request carries both
    signatures (`v1=<new>,v1=<old>`), so receivers can switch without losing a request.
    A second rotation within the overlap drops the oldest secret at once."""
    locked = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
    secret = signing.new_secret()
    endpoint.previous_secret, endpoint.secret = locked.secret, secret
    endpoint.previous_secret_expires_at = timezone.now() + SECRET_OVERLAP
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at"])
    return endpoint, secret


@transaction.atomic
def delete_endpoint(*, endpoint: Endpoint) -> None:
    """Remove the endpoint with its delivery log; nothing more is sent to it."""
    endpoint.delete()


@transaction.atomic
def enable_endpoint(*, endpoint: Endpoint) -> Endpoint:
    """Enable a disabled endpoint. It receives events from now on: the events of the
    disabled period are not replayed. The failure count starts again at zero."""
    now = timezone.now()
    Endpoint.objects.filter(pk=endpoint.pk, is_enabled=False).update(
        is_enabled=True, enabled_at=now, disabled_at=None, disabled_reason="", failure_streak=0
    )
    endpoint.refresh_from_db()
    return endpoint


@transaction.atomic
def disable_endpoint(*, endpoint: Endpoint, reason: str = "disabled by an operator") -> Endpoint:
    """Stop sending to the endpoint; its pending deliveries are canceled."""
    switch_off(endpoint.pk, reason=reason, now=timezone.now())
    endpoint.refresh_from_db()
    return endpoint


def switch_off(endpoint_id: str, *, reason: str, now: datetime, only_if_failing: bool = False) -> bool:
    endpoints = Endpoint.objects.filter(pk=endpoint_id, is_enabled=True)
    if only_if_failing:
        endpoints = endpoints.filter(failure_streak__gte=DISABLE_AFTER_FAILURES)
    if not endpoints.update(is_enabled=False, disabled_at=now, disabled_reason=reason):
        return False
    # Pending deliveries not in a worker's hands end here; one in flight finishes, and
    # the check in `send` cancels any later attempt.
    canceled = Delivery.objects.filter(endpoint_id=endpoint_id, status=Delivery.Status.PENDING).exclude(
        event__type=PING).filter(Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)).update(
        status=Delivery.Status.CANCELED, next_attempt_at=None, finished_at=now, last_error=f"not sent: {reason}")
    for _ in range(canceled):
        metrics.delivery_finished(Delivery.Status.CANCELED)
    logger.warning("webhook endpoint disabled", extra={"endpoint": endpoint_id, "reason": reason})
    return True
