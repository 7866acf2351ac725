"""Delivering: fanning events out into deliveries, claiming due deliveries, making the
attempts and recording their outcomes; closing what a crash abandoned, and the purge.

The work is done in batches, so that a delivery costs a share of a few transactions
rather than a dozen round trips of its own: `fan_out` makes the deliveries of many events
at once (and may claim them in the same transaction), `claim_due` claims many due
deliveries at once, `send_many` makes their attempts one after another over kept-alive
connections and `finish` records all their outcomes in one transaction."""

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from core.formats import instant
from core.ids import random_id
from webhooks import selectors, sender, signing
from webhooks.models import PING, Attempt, Delivery, Endpoint, Event
from webhooks.services.endpoints import DISABLE_AFTER_FAILURES, switch_off

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
USER_AGENT = "Service-Webhooks/1.0"
INTERRUPTED = "interrupted: the worker stopped before recording the outcome"

# Deliveries one sender claims at a time (fan-out with claims, `deliver_due`).
CLAIM_BATCH = 20


@dataclass
class Claim:
    """A delivery in one worker's hands until `delivery.claimed_until`; `attempt` is the
    attempt it is about to make (its id is the X-Service-Delivery header)."""

    delivery: Delivery
    attempt: Attempt
    token: str


@dataclass
class Result:
    """What became of a claim: its attempt's outcome, or None if the attempt was not
    started (the worker is stopping, or its lease no longer covers an attempt); then the
    claim is given back."""

    claim: Claim
    outcome: sender.Outcome | None
    canceled: bool = False


def _oldest_unlocked(queryset: QuerySet, order: str, limit: int) -> QuerySet:
    """Inside a transaction: the first `limit` rows in `order`, locked for it. PostgreSQL
    skips the rows another transaction holds (`FOR UPDATE SKIP LOCKED`), so concurrent
    workers take different rows; on SQLite the transaction already holds the database's
    write lock (IMMEDIATE), so the rows cannot change under it."""
    return queryset.select_for_update(skip_locked=True).order_by(order)[:limit]  # ignored by SQLite


def fan_out(*, limit: int = 500) -> list[str]:
    """Turn events not yet dispatched (the oldest `limit`) into deliveries: one per enabled
    endpoint of the event's space that subscribes to its type and was enabled when the
    event happened, none if the space has no active Pro subscription. Safe to run
    concurrently: each event is fanned out once. Returns the new deliveries' ids."""
    deliveries, _claims = _fan_out(limit=limit, claim=0)
    return [delivery.pk for delivery in deliveries]


def fan_out_and_claim(*, limit: int = CLAIM_BATCH, claim: int = CLAIM_BATCH) -> list[Claim]:
    """`fan_out`, and claim up to `claim` of the new deliveries in the same transaction
    (made with this worker's lease and their first attempt started), saving a claim's
    round trips: what a Celery worker does when an event commits. The rest are due for
    any worker."""
    return _fan_out(limit=limit, claim=claim)[1]


def _fan_out(*, limit: int, claim: int) -> tuple[list[Delivery], list[Claim]]:
    pending = Event.objects.filter(dispatched_at__isnull=True)
    if not pending.exists():  # a plain read first: an idle loop never takes the write lock
        return [], []
    now = timezone.now()
    token = random_id()
    with transaction.atomic():
        events = list(_oldest_unlocked(pending, "created_at", limit))
        if not events:
            return [], []
        Event.objects.filter(pk__in=[event.pk for event in events]).update(dispatched_at=now)
        receivers: dict[str, list[Endpoint]] = {}
        for endpoint in Endpoint.objects.filter(
            space_id__in={event.space_id for event in events}, is_enabled=True, space__subscription__is_active=True
        ).select_related("space__subscription"):
            receivers.setdefault(endpoint.space_id, []).append(endpoint)
        deliveries = [
            Delivery(event=event, endpoint=endpoint, next_attempt_at=now, created_at=now)
            for event in events
            for endpoint in receivers.get(event.space_id, ())
            if endpoint.enabled_at <= event.created_at and event.type in endpoint.event_types
        ]
        for delivery in deliveries[:claim]:
            delivery.claimed_until, delivery.claim_token, delivery.attempts = now + lease(), token, 1
        Delivery.objects.bulk_create(deliveries)
        claimed = deliveries[:claim]
        attempts = Attempt.objects.bulk_create([Attempt(delivery=delivery, started_at=now) for delivery in claimed])
    return deliveries, [Claim(delivery=d, attempt=a, token=token) for d, a in zip(claimed, attempts)]


def lease() -> timedelta:
    return timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)


def claim_due(*, limit: int = 1, delivery_id: str | None = None) -> list[Claim]:
    """Claim up to `limit` due deliveries, the longest due first (or the one given, if it
    is due): one transaction gives each a lease and starts its attempt, so no other worker
    can send it until this one finishes or the lease expires. An attempt left unfinished
    by a worker that died is closed as interrupted."""
    now = timezone.now()
    due = selectors.due_deliveries(now)
    if delivery_id is not None:
        due = due.filter(pk=delivery_id)
    if not due.exists():  # a plain read first: an idle loop never takes the write lock
        return []
    token = random_id()
    with transaction.atomic():
        # A delivery whose lease expired had a worker die on it.
        candidates = dict(_oldest_unlocked(due, "next_attempt_at", limit).values_list("pk", "claimed_until"))
        if not candidates:
            return []
        Delivery.objects.filter(pk__in=candidates).update(
            claimed_until=now + lease(), claim_token=token, attempts=F("attempts") + 1
        )
        deliveries = list(
            Delivery.objects.filter(pk__in=candidates).select_related("event", "endpoint__space__subscription")
        )
        interrupted = [pk for pk, claimed_until in candidates.items() if claimed_until is not None]
        if interrupted:
            Attempt.objects.filter(delivery_id__in=interrupted, finished_at__isnull=True).update(
                finished_at=now, duration_ms=None, error=INTERRUPTED
            )
        attempts = Attempt.objects.bulk_create([Attempt(delivery=delivery, started_at=now) for delivery in deliveries])
    return [Claim(delivery=d, attempt=a, token=token) for d, a in zip(deliveries, attempts)]


def lease_allows_attempt(claim: Claim) -> bool:
    """Whether an attempt may still start under this claim's lease. Claims wait their turn
    in a batch; an attempt starts only while at least the timeout plus half the lease's
    slack beyond it remains, so even a slow resolver cannot carry the attempt past the
    lease (after which another worker would send it too)."""
    timeout = settings.WEBHOOKS_TIMEOUT_SECONDS
    slack = settings.WEBHOOKS_LEASE_SECONDS - timeout
    if slack <= 0:
        return True  # a lease shorter than an attempt cannot be honoured anyway (see the settings)
    return timezone.now() + timedelta(seconds=timeout + slack / 2) <= claim.delivery.claimed_until


def attempt(claim: Claim) -> Result:
    """Make the claimed attempt: a signed POST of the event's stored body. Not sent
    (canceled) if the endpoint was disabled or the space lost Pro since the delivery was
    made; a test ping goes out regardless. Touches no database: `finish` records it."""
    event, endpoint = claim.delivery.event, claim.delivery.endpoint
    is_ping = event.type == PING
    refusal = ""
    if not is_ping and not endpoint.is_enabled:
        refusal = "not sent: the endpoint is disabled"
    elif not is_ping and not endpoint.space.is_pro:
        refusal = "not sent: the space has no Pro subscription"
    if refusal:
        return Result(claim, sender.Outcome(status_code=None, error=refusal, duration_ms=0), canceled=True)
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event.type,
        "X-Service-Delivery": claim.attempt.pk,
        "X-Service-Webhook-Version": json.loads(event.body)["version"],
        "X-Service-Signature": signing.signature_header(secret=endpoint.signing_secrets(), body=event.body, timestamp=timestamp),
    }
    outcome = sender.post(endpoint.url, event.body.encode(), headers, timeout=settings.WEBHOOKS_TIMEOUT_SECONDS)
    return Result(claim, outcome)


def send(claim: Claim) -> sender.Outcome:
    """Make one claimed attempt now and record its outcome (a test ping, a single delivery)."""
    result = attempt(claim)
    finish([result])
    return result.outcome


def send_many(claims: list[Claim]) -> int:
    """Make the claimed attempts one after another (kept-alive connections make a burst to
    one endpoint cheap), then record their outcomes together. An attempt starts only while
    its lease allows (`lease_allows_attempt`): the claims left behind a slow receiver are
    given back, due at once. Returns how many attempts were made."""
    results = [attempt(claim) if lease_allows_attempt(claim) else Result(claim, None) for claim in claims]
    finish(results)
    return sum(1 for result in results if result.outcome is not None)


def finish(results: list[Result]) -> None:
    """Record the outcomes of attempts in one transaction: each attempt's result, each
    delivery's new state (if the claim is still this worker's: a lease that ran out and
    was claimed again belongs to the new holder), the endpoints' failure counts. A claim
    whose attempt was never started is given back, due at once, its attempt unmade."""
    if not results:
        return
    now = timezone.now()
    made = [result for result in results if result.outcome is not None]
    for result in made:
        outcome = result.outcome
        attempt_row = result.claim.attempt
        attempt_row.finished_at, attempt_row.duration_ms, attempt_row.status_code = now, outcome.duration_ms, outcome.status_code
        attempt_row.succeeded, attempt_row.error, attempt_row.response_excerpt = outcome.ok, outcome.error, outcome.excerpt
    with transaction.atomic():
        if made:
            Attempt.objects.bulk_update(
                [result.claim.attempt for result in made],
                ["finished_at", "duration_ms", "status_code", "succeeded", "error", "response_excerpt"],
            )
        tokens = {result.claim.delivery.pk: result.claim.token for result in results}
        held = {
            pk for pk, token in Delivery.objects.select_for_update().filter(pk__in=tokens).values_list("pk", "claim_token")
            if token == tokens[pk]
        }
        for result in results:
            if result.claim.delivery.pk not in held:
                # The lease ran out and another worker claimed the delivery: it decides.
                logger.warning("webhook lease lost before the outcome was recorded",
                               extra={"delivery": result.claim.delivery.pk})
        results = [result for result in results if result.claim.delivery.pk in held]
        _give_back([result.claim for result in results if result.outcome is None])
        succeeded = [result for result in results if result.outcome is not None and result.outcome.ok]
        others = [result for result in results if result.outcome is not None and not result.outcome.ok]
        if succeeded:  # the common case: one UPDATE for them all
            fields = _next_state(succeeded[0], now=now)  # the same for every success
            deliveries = [result.claim.delivery for result in succeeded]
            Delivery.objects.filter(pk__in=[delivery.pk for delivery in deliveries]).update(**fields)
            counted = {delivery.endpoint_id for delivery in deliveries if delivery.event.type != PING}
            Endpoint.objects.filter(pk__in=counted, failure_streak__gt=0).update(failure_streak=0)
            for delivery in deliveries:
                _apply(delivery, fields)
        for result in others:
            delivery = result.claim.delivery
            fields = _next_state(result, now=now)
            Delivery.objects.filter(pk=delivery.pk).update(**fields)
            _apply(delivery, fields)
            if fields["status"] == Delivery.Status.FAILED and delivery.event.type != PING:
                _count_failure(delivery.endpoint_id, now)
            _log_failure(result.claim, result.outcome, fields)


def _next_state(result: Result, *, now: datetime) -> dict:
    """The delivery's fields after the attempt: done, or due again after the retry delay."""
    delivery, outcome = result.claim.delivery, result.outcome
    fields = {"claimed_until": None, "claim_token": "", "last_error": outcome.error}
    if outcome.ok:
        fields.update(status=Delivery.Status.SUCCEEDED, next_attempt_at=None, finished_at=now)
    elif result.canceled:
        fields.update(status=Delivery.Status.CANCELED, next_attempt_at=None, finished_at=now)
    elif delivery.attempts >= delivery.max_attempts:
        fields.update(status=Delivery.Status.FAILED, next_attempt_at=None, finished_at=now)
    else:
        fields.update(status=Delivery.Status.PENDING, next_attempt_at=now + RETRY_DELAYS[delivery.attempts - 1])
    return fields


def _apply(delivery: Delivery, fields: dict) -> None:
    for name, value in fields.items():
        setattr(delivery, name, value)


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


def _give_back(claims: list[Claim]) -> None:
    """Undo claims whose attempt was never started: due again at once, for any worker."""
    if not claims:
        return
    Attempt.objects.filter(pk__in=[claim.attempt.pk for claim in claims]).delete()
    Delivery.objects.filter(pk__in=[claim.delivery.pk for claim in claims]).update(
        claimed_until=None, claim_token="", attempts=F("attempts") - 1
    )


def _count_failure(endpoint_id: str, now: datetime) -> None:
    """A failed delivery adds one to the endpoint's failure count, and the 20th in a row
    disables it (a success resets the count: see `finish`)."""
    Endpoint.objects.filter(pk=endpoint_id).update(failure_streak=F("failure_streak") + 1)
    switch_off(endpoint_id, reason=f"{DISABLE_AFTER_FAILURES} failed deliveries in a row", now=now, only_if_failing=True)


def deliver_due(*, budget_seconds: float = 60.0, limit: int | None = None) -> int:
    """Claim and send due deliveries, a batch at a time, until none is due, `limit` were
    sent or the time budget is spent. Returns how many attempts were made."""
    deadline = time.monotonic() + budget_seconds
    sent = 0
    while time.monotonic() < deadline and (limit is None or sent < limit):
        claims = claim_due(limit=CLAIM_BATCH if limit is None else min(CLAIM_BATCH, limit - sent))
        if not claims:
            break
        sent += send_many(claims)
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
                _count_failure(endpoint_id, now)
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
