"""Webhooks: recording events in the outbox, managing endpoints, and delivering.

Delivery is at least once, whatever crashes:
- an event is recorded in the transaction of its change (`record_event`); when that
  commits, the dispatcher is told (a Celery task, or the embedded loop's wake-up), and
  the sweeper fans out any event it was not told about (`fan_out`);
- each delivery's retry time lives in the database; a worker claims a due delivery with a
  conditional UPDATE (`claim_due`), which gives it a lease; it sends and records the
  outcome (`send`); a worker that dies leaves a lease that expires, and the delivery is
  claimed again.
Keyword-only, transactional; the back office, `manage.py`, Celery tasks and the embedded
loop call these and nothing else.
"""

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.errors import ServiceError
from core.formats import instant
from core.ids import random_id
from spaces.models import Space
from webhooks import notify, selectors, sender, signing, targets
from webhooks.models import EVENT_TYPES, PAYLOAD_VERSION, PING, Attempt, Delivery, Endpoint, Event

logger = logging.getLogger("service.webhooks")

# Waits after the 1st to 5th failed attempt; the 6th failure marks the delivery failed.
RETRY_DELAYS = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=12),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1
DISABLE_AFTER_FAILURES = 20
USER_AGENT = "Service-Webhooks/1.0"
INTERRUPTED = "interrupted: the worker stopped before recording the outcome"


# --- Recording ---------------------------------------------------------------------------


def record_event(
    *,
    space_id: str,
    type: str,
    poll_id: str,
    participant_id: str | None = None,
    extra: dict | None = None,
    at: datetime | None = None,
) -> Event:
    """Record one event. Call it inside the transaction of the change it describes, so the
    event exists if and only if the change does. `extra` is merged into `data` beside
    `poll` (and `participant`), e.g. `{"reason": "manual"}`. Once the transaction
    commits, the dispatcher is told; if that is lost, the sweeper finds the event."""
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}: add it to webhooks.models.EVENT_TYPES first")
    data = {"poll": {"id": poll_id}}
    if participant_id is not None:
        data["participant"] = {"id": participant_id}
    data.update(extra or {})
    event = _new_event(space_id=space_id, type=type, poll_id=poll_id, participant_id=participant_id, data=data, at=at)
    event.save(force_insert=True)
    transaction.on_commit(lambda: notify.event_recorded(event.id), robust=True)
    return event


def _new_event(*, space_id: str, type: str, poll_id: str, data: dict, participant_id: str | None = None,
               at: datetime | None = None) -> Event:
    """An unsaved event with its envelope serialized once, the bytes every attempt sends."""
    at = at or timezone.now()
    event = Event(space_id=space_id, type=type, poll_id=poll_id, participant_id=participant_id, data=data, created_at=at)
    event.body = json.dumps(
        {"version": PAYLOAD_VERSION, "id": event.id, "type": type, "createdAt": instant(at), "data": data},
        separators=(",", ":"),
    )
    return event


# --- Endpoints ---------------------------------------------------------------------------

# How long a replaced secret keeps signing after `rotate_secret`.
SECRET_OVERLAP = timedelta(hours=24)


class EndpointLimitReached(ServiceError):
    """The space has MAX_PER_SPACE endpoints already."""

    code = "TOO_MANY_WEBHOOKS"


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


def clean_url(url: str) -> str:
    """The URL rules (`webhooks.targets.check_url`) as a ServiceError."""
    try:
        return targets.check_url(url)
    except targets.ForbiddenTarget as exc:
        raise ServiceError(f"url: {exc}") from None


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
    _disable(endpoint.pk, reason=reason, now=timezone.now())
    endpoint.refresh_from_db()
    return endpoint


def _disable(endpoint_id: str, *, reason: str, now: datetime, only_if_failing: bool = False) -> bool:
    endpoints = Endpoint.objects.filter(pk=endpoint_id, is_enabled=True)
    if only_if_failing:
        endpoints = endpoints.filter(failure_streak__gte=DISABLE_AFTER_FAILURES)
    if not endpoints.update(is_enabled=False, disabled_at=now, disabled_reason=reason):
        return False
    # Pending deliveries not in a worker's hands end here; one in flight finishes, and
    # the check in `send` cancels any later attempt.
    Delivery.objects.filter(endpoint_id=endpoint_id, status=Delivery.Status.PENDING).exclude(event__type=PING).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)
    ).update(status=Delivery.Status.CANCELED, next_attempt_at=None, finished_at=now,
             last_error=f"not sent: {reason}")
    logger.warning("webhook endpoint disabled", extra={"endpoint": endpoint_id, "reason": reason})
    return True


def send_ping(*, endpoint: Endpoint) -> Delivery:
    """Send a test ping (type `ping`, `data: {}`) to the endpoint now, even if it is
    disabled, and return its delivery with the outcome. Never retried. Blocks for at most
    the delivery timeout."""
    now = timezone.now()
    token = random_id()
    with transaction.atomic():
        event = _new_event(space_id=endpoint.space_id, type=PING, poll_id="", data={}, at=now)
        event.dispatched_at = now  # it goes to this endpoint only, never fanned out
        event.save(force_insert=True)
        # Created already claimed by this caller, so no worker takes it meanwhile.
        delivery = Delivery.objects.create(
            event=event, endpoint=endpoint, max_attempts=1, attempts=1, next_attempt_at=now,
            claimed_until=now + _lease(), claim_token=token, created_at=now,
        )
        attempt = Attempt.objects.create(delivery=delivery, started_at=now)
    send(Claim(delivery=delivery, attempt=attempt, token=token))
    delivery.refresh_from_db()
    return delivery


@transaction.atomic
def resend_delivery(*, delivery: Delivery) -> Delivery:
    """Send a delivery's event to its endpoint again, as a new delivery with the full
    retry schedule (same event id and body). Refused for pings and disabled endpoints."""
    if delivery.event.type == PING:
        raise ServiceError("a ping is not resent; send a new ping")
    if not delivery.endpoint.is_enabled:
        raise ServiceError("the endpoint is disabled; enable it first")
    now = timezone.now()
    again = Delivery.objects.create(event_id=delivery.event_id, endpoint_id=delivery.endpoint_id, next_attempt_at=now,
                                    created_at=now)
    transaction.on_commit(lambda: notify.delivery_due(again.pk), robust=True)
    return again


# --- Dispatch ----------------------------------------------------------------------------


def fan_out(*, event_id: str | None = None, limit: int = 500) -> list[str]:
    """Turn events not yet dispatched (or the one given) into deliveries: one per enabled
    endpoint of the event's space that subscribes to its type and was enabled when the
    event happened, none if the space has no active Pro subscription. Safe to run
    concurrently: each event is fanned out once. Returns the new deliveries' ids."""
    pending = Event.objects.filter(dispatched_at__isnull=True)
    if event_id is not None:
        pending = pending.filter(pk=event_id)
    # A plain read first: an idle loop never takes the write lock.
    candidates = list(pending.order_by("created_at").values_list("pk", flat=True)[:limit])
    if not candidates:
        return []
    now = timezone.now()
    with transaction.atomic():
        events = list(
            pending.filter(pk__in=candidates).select_for_update(skip_locked=True).only("id", "space_id", "type", "created_at")
        )
        if not events:
            return []
        Event.objects.filter(pk__in=[event.pk for event in events]).update(dispatched_at=now)
        receivers: dict[str, list[Endpoint]] = {}
        for endpoint in Endpoint.objects.filter(
            space_id__in={event.space_id for event in events}, is_enabled=True, space__subscription__is_active=True
        ).only("id", "space_id", "event_types", "enabled_at"):
            receivers.setdefault(endpoint.space_id, []).append(endpoint)
        deliveries = [
            Delivery(event_id=event.pk, endpoint_id=endpoint.pk, next_attempt_at=now, created_at=now)
            for event in events
            for endpoint in receivers.get(event.space_id, ())
            if endpoint.enabled_at <= event.created_at and event.type in endpoint.event_types
        ]
        Delivery.objects.bulk_create(deliveries)
    return [delivery.pk for delivery in deliveries]


@dataclass
class Claim:
    """A delivery in one worker's hands until `delivery.claimed_until`; `attempt` is the
    attempt it is about to make (its id is the X-Service-Delivery header)."""

    delivery: Delivery
    attempt: Attempt
    token: str


def _lease() -> timedelta:
    return timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)


def claim_due(*, limit: int = 1, delivery_id: str | None = None) -> list[Claim]:
    """Claim up to `limit` due deliveries (or the one given, if it is due): a conditional
    UPDATE gives each a lease and starts its attempt, so no other worker can send it until
    this one finishes or the lease expires. An attempt left unfinished by a worker that
    died is closed as interrupted."""
    now = timezone.now()
    due = selectors.due_deliveries(now)
    if delivery_id is not None:
        due = due.filter(pk=delivery_id)
    # A plain read first (an idle loop never takes the write lock); a delivery whose lease
    # expired had a worker die on it: its unfinished attempt is closed as interrupted.
    candidates = dict(due.order_by("next_attempt_at").values_list("pk", "claimed_until")[:limit])
    if not candidates:
        return []
    token = random_id()
    with transaction.atomic():
        ids = list(candidates)
        if connection.features.has_select_for_update:
            # PostgreSQL: skip the rows another worker is claiming right now. (SQLite: the
            # transaction holds the database's write lock; the UPDATE's conditions decide.)
            ids = list(due.filter(pk__in=ids).select_for_update(skip_locked=True).values_list("pk", flat=True))
        if not ids or not due.filter(pk__in=ids).update(
            claimed_until=now + _lease(), claim_token=token, attempts=F("attempts") + 1
        ):
            return []
        deliveries = list(
            Delivery.objects.filter(pk__in=ids, claim_token=token).select_related("event", "endpoint__space__subscription")
        )
        interrupted = [d.pk for d in deliveries if candidates.get(d.pk) is not None]
        if interrupted:
            Attempt.objects.filter(delivery_id__in=interrupted, finished_at__isnull=True).update(
                finished_at=now, duration_ms=None, error=INTERRUPTED
            )
        attempts = Attempt.objects.bulk_create([Attempt(delivery=delivery, started_at=now) for delivery in deliveries])
    return [Claim(delivery=d, attempt=a, token=token) for d, a in zip(deliveries, attempts)]


def send(claim: Claim) -> sender.Outcome:
    """Make the claimed attempt: a signed POST of the event's stored body, then record the
    outcome. Not sent (canceled) if the endpoint was disabled or the space lost Pro since
    the delivery was made; a test ping goes out regardless."""
    event, endpoint = claim.delivery.event, claim.delivery.endpoint
    is_ping = event.type == PING
    refusal = ""
    if not is_ping and not endpoint.is_enabled:
        refusal = "not sent: the endpoint is disabled"
    elif not is_ping and not endpoint.space.is_pro:
        refusal = "not sent: the space has no Pro subscription"
    if refusal:
        outcome = sender.Outcome(status_code=None, error=refusal, duration_ms=0)
    else:
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Service-Event": event.type,
            "X-Service-Delivery": claim.attempt.pk,
            "X-Service-Webhook-Version": json.loads(event.body)["version"],
            "X-Service-Signature": signing.signature_header(
                secret=endpoint.signing_secrets(), body=event.body, timestamp=timestamp
            ),
        }
        outcome = sender.post(endpoint.url, event.body.encode(), headers, timeout=settings.WEBHOOKS_TIMEOUT_SECONDS)
    _finish(claim, outcome, canceled=bool(refusal))
    return outcome


def _finish(claim: Claim, outcome: sender.Outcome, *, canceled: bool = False) -> None:
    delivery = claim.delivery
    now = timezone.now()
    fields = {"claimed_until": None, "claim_token": "", "last_error": outcome.error}
    if outcome.ok:
        fields.update(status=Delivery.Status.SUCCEEDED, next_attempt_at=None, finished_at=now)
    elif canceled:
        fields.update(status=Delivery.Status.CANCELED, next_attempt_at=None, finished_at=now)
    elif delivery.attempts >= delivery.max_attempts:
        fields.update(status=Delivery.Status.FAILED, next_attempt_at=None, finished_at=now)
    else:
        fields.update(next_attempt_at=now + RETRY_DELAYS[delivery.attempts - 1])
    with transaction.atomic():
        Attempt.objects.filter(pk=claim.attempt.pk).update(
            finished_at=now, duration_ms=outcome.duration_ms, status_code=outcome.status_code, succeeded=outcome.ok,
            error=outcome.error, response_excerpt=outcome.excerpt,
        )
        if not Delivery.objects.filter(pk=delivery.pk, claim_token=claim.token).update(**fields):
            # The lease ran out and another worker claimed the delivery: it decides.
            logger.warning("webhook lease lost before the outcome was recorded", extra={"delivery": delivery.pk})
            return
        if delivery.event.type != PING:
            _count_outcome(delivery.endpoint_id, fields.get("status"), now)
    for name, value in fields.items():
        setattr(delivery, name, value)
    if not outcome.ok:
        _log_failure(claim, outcome, fields)


def _log_failure(claim: Claim, outcome: sender.Outcome, fields: dict) -> None:
    """One line per failed attempt, saying what happens next."""
    delivery = claim.delivery
    if fields.get("status") == Delivery.Status.CANCELED:
        then = "canceled"
    elif fields.get("status") == Delivery.Status.FAILED:
        then = "failed: no attempt left"
    else:
        then = f"retry at {instant(fields['next_attempt_at'])}"
    logger.warning("webhook attempt failed", extra={
        "endpoint": delivery.endpoint_id, "event": delivery.event_id, "event_type": delivery.event.type,
        "delivery": delivery.pk, "attempt": claim.attempt.pk, "attempt_number": delivery.attempts,
        "status_code": outcome.status_code, "error": outcome.error, "then": then,
    })


def _count_outcome(endpoint_id: str, status: str | None, now: datetime) -> None:
    """A success resets the endpoint's failure count; a failed delivery adds one, and the
    20th in a row disables the endpoint."""
    if status == Delivery.Status.SUCCEEDED:
        Endpoint.objects.filter(pk=endpoint_id, failure_streak__gt=0).update(failure_streak=0)
    elif status == Delivery.Status.FAILED:
        Endpoint.objects.filter(pk=endpoint_id).update(failure_streak=F("failure_streak") + 1)
        _disable(endpoint_id, reason=f"{DISABLE_AFTER_FAILURES} failed deliveries in a row", now=now,
                 only_if_failing=True)


def deliver_due(*, budget_seconds: float = 60.0, limit: int | None = None) -> int:
    """Claim and send due deliveries one after another until none is due, `limit` were
    sent or the time budget is spent. Returns how many were sent."""
    deadline = time.monotonic() + budget_seconds
    sent = 0
    while time.monotonic() < deadline and (limit is None or sent < limit):
        claims = claim_due(limit=1)
        if not claims:
            break
        send(claims[0])
        sent += 1
    return sent


def close_abandoned() -> int:
    """Deliveries whose last attempt's worker died (lease expired, no attempt left) are
    marked failed, and count as such for their endpoint. Returns how many."""
    now = timezone.now()
    closed = 0
    abandoned = Delivery.objects.filter(
        status=Delivery.Status.PENDING, attempts__gte=F("max_attempts"), claimed_until__lte=now
    ).values_list("pk", "claim_token", "endpoint_id", "event__type")[:500]
    for delivery_id, token, endpoint_id, event_type in abandoned:
        with transaction.atomic():
            if not Delivery.objects.filter(pk=delivery_id, claim_token=token, status=Delivery.Status.PENDING).update(
                status=Delivery.Status.FAILED, claimed_until=None, claim_token="", next_attempt_at=None,
                finished_at=now, last_error=INTERRUPTED,
            ):
                continue
            Attempt.objects.filter(delivery_id=delivery_id, finished_at__isnull=True).update(finished_at=now,
                                                                                             error=INTERRUPTED)
            if event_type != PING:
                _count_outcome(endpoint_id, Delivery.Status.FAILED, now)
            closed += 1
    return closed


def purge(*, older_than: datetime, batch: int = 1000) -> int:
    """Delete dispatched events older than `older_than` with their deliveries and
    attempts, once none of their deliveries is pending. Returns how many events."""
    purged = 0
    while True:
        ids = list(
            Event.objects.filter(created_at__lt=older_than, dispatched_at__isnull=False)
            .exclude(deliveries__status=Delivery.Status.PENDING)
            .values_list("pk", flat=True)[:batch]
        )
        if not ids:
            return purged
        with transaction.atomic():
            Attempt.objects.filter(delivery__event_id__in=ids).delete()
            Delivery.objects.filter(event_id__in=ids).delete()
            Event.objects.filter(pk__in=ids).delete()
        purged += len(ids)
