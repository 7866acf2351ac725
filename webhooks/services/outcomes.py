"""Recording what became of attempts: each attempt's outcome on its row, the delivery's
next state (done, due again after its retry delay, or ended), the endpoint's failure
count, and claims given back unmade.

Recording is on the hot path of delivery, so the statements are prepared SQL built once
from the models' metadata rather than compiled by the ORM per call: an attempt's outcome
is one UPDATE run for each row of a batch (`executemany`), and on PostgreSQL a success
is recorded in a single statement (`record`)."""

import logging
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.db import connections, router, transaction
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
    """Record one attempt's outcome as soon as it ends. On PostgreSQL a success (the common
    case) is one statement in its own transaction: the attempt's row, the endpoint's
    failure count and the delivery, if the claim is still this worker's; anything else
    takes `finish`."""
    connection = connections[router.db_for_write(Delivery)]
    if connection.vendor != "postgresql" or result.outcome is None or not result.outcome.ok:
        finish([result])
        return
    now = timezone.now()
    _set_outcome(result, now=now)
    delivery = result.claim.delivery
    fields = _next_state(result, now=now)
    counted = delivery.endpoint_id if delivery.event.type != PING else None
    with connection.cursor() as cursor:
        cursor.execute(_success_sql(connection), [
            *_outcome_params(connection, result.claim.attempt),
            counted,
            *(_prepare(connection, Delivery, name, value) for name, value in fields.items()),
            delivery.pk, result.claim.token,
        ])
        held = cursor.fetchone() is not None
    if held:
        _apply(delivery, fields)
        metrics.delivery_finished(Delivery.Status.SUCCEEDED)
    else:
        _lease_lost(result)


@cache
def _success_sql(connection) -> str:
    """Three UPDATEs in one statement: the attempt, the endpoint's failure count (reset;
    NULL for a ping, which does not count) and the delivery, `RETURNING` its id if the
    claim token still matched."""
    quote = connection.ops.quote_name
    streak = quote(Endpoint._meta.get_field("failure_streak").column)
    delivery = _assignments(connection, Delivery, _next_state_names())
    return (
        f"WITH outcome AS ({_outcome_sql(connection)}), "
        f"streak AS (UPDATE {quote(Endpoint._meta.db_table)} SET {streak} = 0 "
        f"WHERE {quote(Endpoint._meta.pk.column)} = %s AND {streak} > 0) "
        f"UPDATE {quote(Delivery._meta.db_table)} SET {delivery} "
        f"WHERE {quote(Delivery._meta.pk.column)} = %s AND {quote(Delivery._meta.get_field('claim_token').column)} = %s "
        f"RETURNING {quote(Delivery._meta.pk.column)}"
    )


def _next_state_names() -> tuple[str, ...]:
    """The fields `_next_state` sets for a success, in its order."""
    return ("claimed_until", "claim_token", "last_error", "status", "next_attempt_at", "finished_at")


def _assignments(connection, model, names) -> str:
    quote = connection.ops.quote_name
    return ", ".join(f"{quote(model._meta.get_field(name).column)} = %s" for name in names)


def _prepare(connection, model, name: str, value):
    return model._meta.get_field(name).get_db_prep_save(value, connection)


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
    """Each attempt's outcome, on its row (whoever holds the delivery now: it happened).
    One prepared UPDATE run for every row (`executemany`; psycopg pipelines it into one
    round trip): `bulk_update` built a CASE expression per field and row, which cost
    more than all the other statements of a batch together."""
    for result in made:
        _set_outcome(result, now=now)
    if not made:
        return
    connection = connections[router.db_for_write(Attempt)]
    with connection.cursor() as cursor:
        cursor.executemany(_outcome_sql(connection),
                           [_outcome_params(connection, result.claim.attempt) for result in made])


def _set_outcome(result: Result, *, now: datetime) -> None:
    outcome, row = result.outcome, result.claim.attempt
    row.finished_at, row.duration_ms, row.status_code = now, outcome.duration_ms, outcome.status_code
    row.succeeded, row.error, row.response_excerpt = outcome.ok, outcome.error, outcome.excerpt


def _outcome_params(connection, row: Attempt) -> list:
    return [*(_prepare(connection, Attempt, name, getattr(row, name)) for name in OUTCOME_FIELDS), row.pk]


@cache
def _outcome_sql(connection) -> str:
    quote = connection.ops.quote_name
    return (f"UPDATE {quote(Attempt._meta.db_table)} SET {_assignments(connection, Attempt, OUTCOME_FIELDS)} "
            f"WHERE {quote(Attempt._meta.pk.column)} = %s")


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
    counted = {delivery.endpoint_id for delivery in deliveries if delivery.event.type != PING}
    Endpoint.objects.filter(pk__in=counted, failure_streak__gt=0).update(failure_streak=0)  # no version bump: not read with keys
    for delivery in deliveries:
        _apply(delivery, fields)
        metrics.delivery_finished(Delivery.Status.SUCCEEDED)


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
