"""Recording what became of attempts: each attempt's outcome on its row, the delivery's
next state (done, due again after its retry delay, or ended), the endpoint's failure
count, and claims given back unmade. Plain ORM updates in one transaction, the same on
every database."""

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core import metrics
from core.formats import instant
from webhooks import sender
from webhooks.models import PING, RETRY_DELAYS, Attempt, Delivery, Endpoint
from webhooks.services.endpoints import DISABLE_AFTER_FAILURES, switch_off

logger = logging.getLogger("service.webhooks")

INTERRUPTED = "interrupted: the worker stopped before recording the outcome"
# A receiver answering 410 Gone asks for no more: its endpoint is disabled at once.
GONE = 410
GONE_REASON = "the receiver answered 410 Gone"


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


def record(result: Result) -> None:
    """Record one attempt's outcome as soon as it ends. A success (the common case) is one
    short transaction: the attempt's row, the delivery (if the claim is still this
    worker's: the UPDATE's row count tells) and the endpoint's failure count; anything
    else takes `finish`."""
    if result.outcome is None or not result.outcome.ok:
        finish([result])
        return
    now = timezone.now()
    delivery = result.claim.delivery
    fields = _next_state(result, now=now)
    with transaction.atomic():
        _record_attempts([result], now=now)
        held = Delivery.objects.filter(pk=delivery.pk, claim_token=result.claim.token).update(**fields)
        if held:
            _reset_streaks([delivery])
    if held:
        _apply(delivery, fields)
        metrics.delivery_finished(Delivery.Status.SUCCEEDED)
    else:
        _lease_lost(result)


def finish(results: list[Result]) -> None:
    """Record the outcomes of attempts in one transaction: each attempt's result, each
    delivery's new state (if the claim is still this worker's: a lease that ran out and
    was claimed again belongs to the new holder), the endpoints' failure counts. A claim
    whose attempt was never started is given back, due at once, its attempt unmade."""
    if not results:
        return
    now = timezone.now()
    with transaction.atomic():
        _record_attempts([result for result in results if result.outcome is not None], now=now)
        held = _still_held(results)
        _give_back([result.claim for result in held if result.outcome is None])
        _record_successes([result for result in held if result.outcome is not None and result.outcome.ok], now=now)
        for result in held:
            if result.outcome is not None and not result.outcome.ok:
                _record_failure(result, now=now)


# What an attempt's row learns when it ends.
OUTCOME_FIELDS = ("finished_at", "duration_ms", "status_code", "succeeded", "error", "response_excerpt")


def _record_attempts(made: list[Result], *, now: datetime) -> None:
    """Each attempt's outcome, on its row (whoever holds the delivery now: it happened): an
    UPDATE per row, which costs less than `bulk_update`'s CASE per field and row."""
    for result in made:
        outcome, row = result.outcome, result.claim.attempt
        row.finished_at, row.duration_ms, row.status_code = now, outcome.duration_ms, outcome.status_code
        row.succeeded, row.error, row.response_excerpt = outcome.ok, outcome.error, outcome.excerpt
        Attempt.objects.filter(pk=row.pk).update(**{name: getattr(row, name) for name in OUTCOME_FIELDS})


def _still_held(results: list[Result]) -> list[Result]:
    """The results whose claim is still this worker's (locked until the commit); a lease
    that ran out and was claimed again belongs to the new holder, which decides."""
    tokens = {result.claim.delivery.pk: result.claim.token for result in results}
    held = {
        pk for pk, token in Delivery.objects.select_for_update().filter(pk__in=tokens).values_list("pk", "claim_token")
        if token == tokens[pk]
    }
    for result in results:
        if result.claim.delivery.pk not in held:
            _lease_lost(result)
    return [result for result in results if result.claim.delivery.pk in held]


def _lease_lost(result: Result) -> None:
    logger.warning("webhook lease lost before the outcome was recorded", extra={"delivery": result.claim.delivery.pk})


def _record_successes(succeeded: list[Result], *, now: datetime) -> None:
    """The common case, one UPDATE for them all: the deliveries are done, and their
    endpoints' failure counts start again (pings do not count)."""
    if not succeeded:
        return
    fields = _next_state(succeeded[0], now=now)  # the same for every success
    deliveries = [result.claim.delivery for result in succeeded]
    Delivery.objects.filter(pk__in=[delivery.pk for delivery in deliveries]).update(**fields)
    _reset_streaks(deliveries)
    for delivery in deliveries:
        _apply(delivery, fields)
        metrics.delivery_finished(Delivery.Status.SUCCEEDED)


def _reset_streaks(deliveries: list[Delivery]) -> None:
    """A success starts the endpoint's failure count again (pings do not count)."""
    counted = {delivery.endpoint_id for delivery in deliveries if delivery.event.type != PING}
    Endpoint.objects.filter(pk__in=counted, failure_streak__gt=0).update(failure_streak=0)  # no version bump: not read with keys


def _record_failure(result: Result, *, now: datetime) -> None:
    """A failed or canceled attempt: the delivery is due again after its retry delay, or
    ends; a delivery that ends failed counts against its endpoint. A receiver answering
    410 Gone ends the delivery and disables its endpoint at once (a ping too: the
    receiver says it is gone). Logged."""
    delivery = result.claim.delivery
    fields = _next_state(result, now=now)
    Delivery.objects.filter(pk=delivery.pk).update(**fields)
    _apply(delivery, fields)
    if fields["status"] != Delivery.Status.PENDING:
        metrics.delivery_finished(fields["status"])
    if result.outcome.status_code == GONE:
        switch_off(delivery.endpoint_id, reason=GONE_REASON, now=now)
    elif fields["status"] == Delivery.Status.FAILED and delivery.event.type != PING:
        count_failure(delivery.endpoint_id, now)
    _log_failure(result.claim, result.outcome, fields)


def _next_state(result: Result, *, now: datetime) -> dict:
    """The delivery's fields after the attempt: done, or due again after the retry delay."""
    delivery, outcome = result.claim.delivery, result.outcome
    fields = {"claimed_until": None, "claim_token": "", "last_error": outcome.error}
    if outcome.ok:
        fields.update(status=Delivery.Status.SUCCEEDED, next_attempt_at=None, finished_at=now)
    elif result.canceled:
        fields.update(status=Delivery.Status.CANCELED, next_attempt_at=None, finished_at=now)
    elif outcome.status_code == GONE or delivery.attempts >= delivery.max_attempts:
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


def count_failure(endpoint_id: str, now: datetime) -> None:
    """A failed delivery adds one to the endpoint's failure count, and the 20th in a row
    disables it (a success resets the count: see `finish`)."""
    Endpoint.objects.filter(pk=endpoint_id).update(failure_streak=F("failure_streak") + 1)  # no version bump: not read with keys
    switch_off(endpoint_id, reason=f"{DISABLE_AFTER_FAILURES} failed deliveries in a row", now=now, only_if_failing=True)
