"""Delivering: fanning events out into deliveries, claiming due deliveries, making the
attempts; closing what a crash abandoned, and the purge (recording the outcomes:
`webhooks.services.outcomes`).

The work is done in batches, so that a delivery costs a share of a few transactions
rather than a dozen round trips of its own: `fan_out` makes the deliveries of many events
at once (and may claim them in the same transaction), `claim_due` claims many due
deliveries at once, `send_many` makes their attempts one after another over kept-alive
connections, recording each outcome as it comes (one short transaction each), and
the embedded dispatcher records the outcomes its senders hand over with `finish`, one
transaction for what arrived since its last look."""

import json
import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from core import metrics
from core.ids import random_id
from webhooks import selectors, sender, signing
from webhooks.models import PING, Attempt, Delivery, DispatcherHeartbeat, Endpoint, Event
from webhooks.services.outcomes import INTERRUPTED, Claim, Result, count_failure, finish, record
from webhooks.services.shares import Shares

logger = logging.getLogger("service.webhooks")

USER_AGENT = "Service-Webhooks/1.0"

# Deliveries one sender claims at a time (fan-out with claims, `deliver_due`).
CLAIM_BATCH = 20


def fan_out(*, limit: int = 500) -> list[str]:
    """Turn events not yet dispatched (the oldest `limit`) into deliveries: one per enabled
    endpoint of the event's space that subscribes to its type and was enabled when the
    event happened, none if the space has no active Pro subscription. Safe to run
    concurrently: each event is fanned out once. Returns the new deliveries' ids."""
    _events, deliveries, _claims = _fan_out(limit=limit, claim=0)
    return [delivery.pk for delivery in deliveries]


def fan_out_all(*, limit: int = 500) -> int:
    """`fan_out`, `limit` events at a time, until no event waits. Returns how many events."""
    total = 0
    while True:
        events, _deliveries, _claims = _fan_out(limit=limit, claim=0)
        total += events
        if events < limit:
            return total


def fan_out_and_claim(*, limit: int = CLAIM_BATCH, claim: int = CLAIM_BATCH) -> list[Claim]:
    """`fan_out`, and claim up to `claim` of the new deliveries in the same transaction
    (made with this worker's lease and their first attempt started), saving a claim's
    round trips: what a Celery worker does when an event commits. The rest are due for
    any worker."""
    return fan_out_and_claim_batch(limit=limit, claim=claim)[0]


def fan_out_and_claim_batch(*, limit: int = CLAIM_BATCH, claim: int = CLAIM_BATCH) -> tuple[list[Claim], list[Delivery]]:
    """`fan_out_and_claim`, and the new deliveries left unclaimed: the claim is one
    sender's batch, of one endpoint within the shares (`claim_batches`)."""
    _events, deliveries, claims = _fan_out(limit=limit, claim=claim)
    claimed = {claim.delivery.pk for claim in claims}
    return claims, [delivery for delivery in deliveries if delivery.pk not in claimed]


def _fan_out(*, limit: int, claim: int) -> tuple[int, list[Delivery], list[Claim]]:
    """(how many events were fanned out, their deliveries, the claimed ones)."""
    if not selectors.waiting_events().exists():  # a plain read first: an idle loop never takes the write lock
        return 0, [], []
    now = timezone.now()
    token = random_id()
    with transaction.atomic():
        # The oldest first, from the partial index `event_pending`; locked where the database
        # can (PostgreSQL: concurrent workers take different events; SQLite's transaction
        # holds the whole database's write lock instead).
        events = list(selectors.waiting_events().select_for_update(skip_locked=True).order_by("created_at")[:limit])
        if not events:
            return 0, [], []
        Event.objects.filter(pk__in=[event.pk for event in events]).update(dispatched_at=now)
        receivers: dict[str, list[Endpoint]] = {}
        for endpoint in selectors.receivers({event.space_id for event in events}):
            receivers.setdefault(endpoint.space_id, []).append(endpoint)
        deliveries = [
            Delivery(event=event, endpoint=endpoint, next_attempt_at=now, created_at=now)
            for event in events
            for endpoint in receivers.get(event.space_id, ())
            if endpoint.enabled_at <= event.created_at and event.type in endpoint.event_types
        ]
        claimed = _fan_out_batch(deliveries, claim, now)
        for delivery in claimed:
            delivery.claimed_until, delivery.claim_token, delivery.attempts = now + lease(), token, 1
        Delivery.objects.bulk_create(deliveries)
        attempts = Attempt.objects.bulk_create([Attempt(delivery=delivery, started_at=now) for delivery in claimed])
    return len(events), deliveries, [Claim(delivery=d, attempt=a, token=token) for d, a in zip(claimed, attempts)]


def _fan_out_batch(deliveries: list[Delivery], claim: int, now: datetime) -> list[Delivery]:
    """The new deliveries a fan-out claims for its own sender: one batch (up to `claim`, of
    one endpoint) within the shares (webhooks.services.shares), the first events first."""
    if not (claim and deliveries):
        return []
    batches = Shares.held(now).batches(
        [(delivery.pk, delivery.endpoint_id, delivery.endpoint.space_id) for delivery in deliveries],
        senders=1, per_batch=claim,
    )
    picked = set(batches[0]) if batches else set()
    return [delivery for delivery in deliveries if delivery.pk in picked]


def lease() -> timedelta:
    return timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)


def claim_due(*, limit: int = 1, delivery_id: str | None = None) -> list[Claim]:
    """One sender's batch (`claim_batches`): up to `limit` due deliveries of one endpoint,
    the longest due first (or the one given, if it is due and its shares allow)."""
    batches = claim_batches(senders=1, per_batch=limit, delivery_id=delivery_id)
    return batches[0] if batches else []


def claim_batches(*, senders: int, per_batch: int, delivery_id: str | None = None) -> list[list[Claim]]:
    """Claim batches for up to `senders` senders: each up to `per_batch` due deliveries of
    one endpoint under a claim token of its own, the longest due first, within each space's
    and endpoint's share of the senders (webhooks.services.shares). One transaction gives
    each a lease and starts its attempt, so no other worker can send it until this one
    finishes or the lease expires. An attempt left unfinished by a worker that died is
    closed as interrupted."""
    now = timezone.now()
    due = selectors.due_deliveries(now)
    if delivery_id is not None:
        due = due.filter(pk=delivery_id)
    if not due.exists():  # a plain read first, so that an idle loop never takes the write lock
        return []
    with transaction.atomic():
        shares = Shares.held(now)
        # Locked where the database can (PostgreSQL: concurrent workers take different
        # rows; SQLite's transaction holds the database's write lock instead). A delivery
        # claimed before had a worker die on it (its lease expired).
        candidates = list(
            shares.without_full(due).select_for_update(skip_locked=True, of=("self",)).order_by("next_attempt_at")
            .values_list("pk", "endpoint_id", "endpoint__space_id", "claimed_until")[:senders * per_batch]
        )
        batches = shares.batches([row[:3] for row in candidates], senders=senders, per_batch=per_batch)
        if not batches:
            return []
        tokens = {pk: token for batch, token in zip(batches, [random_id() for _ in batches]) for pk in batch}
        claimed = Delivery.objects.filter(pk__in=list(tokens))
        claimed.update(claimed_until=now + lease(), claim_token=_tokens(batches, tokens), attempts=F("attempts") + 1)
        deliveries = list(claimed.select_related("event", "endpoint__space__subscription"))
        interrupted = [row[0] for row in candidates if row[3] is not None and row[0] in tokens]
        if interrupted:
            Attempt.objects.filter(delivery_id__in=interrupted, finished_at__isnull=True).update(
                finished_at=now, duration_ms=None, error=INTERRUPTED
            )
        attempts = [Attempt(delivery=delivery, started_at=now) for delivery in deliveries]
        Attempt.objects.bulk_create(attempts)
    claims: dict[str, list[Claim]] = {}
    for delivery, attempt in zip(deliveries, attempts):
        token = tokens[delivery.pk]
        claims.setdefault(token, []).append(Claim(delivery=delivery, attempt=attempt, token=token))
    return list(claims.values())


def _tokens(batches: list[list[str]], tokens: dict[str, str]):
    """The claim token of each batch's deliveries: a value, or one CASE for several batches."""
    if len(batches) == 1:
        return tokens[batches[0][0]]
    return Case(*(When(pk__in=batch, then=Value(tokens[batch[0]])) for batch in batches))


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
    secrets = endpoint.signing_secrets()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event.type,
        "X-Service-Delivery": claim.attempt.pk,
        "X-Service-Webhook-Version": json.loads(event.body)["version"],
        "X-Service-Signature": signing.signature_header(secret=secrets, body=event.body, timestamp=timestamp),
        # Standard Webhooks, beside ours: the event id is the message id (the same for every retry).
        "webhook-id": event.id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signing.standard_signature_header(
            secret=secrets, msg_id=event.id, body=event.body, timestamp=timestamp
        ),
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
    one endpoint cheap), recording each outcome as soon as its attempt ends (`record`: one
    short transaction), so that a worker that dies re-sends at most the attempt it
    was making, not its whole batch. An attempt starts only while its lease allows
    (`lease_allows_attempt`): the claims left behind a slow receiver are given back, due
    at once. Returns how many attempts were made."""
    made = 0
    left = []
    for claim in claims:
        if lease_allows_attempt(claim):
            record(attempt(claim))
            made += 1
        else:
            left.append(Result(claim, None))
    finish(left)
    return made


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
                count_failure(endpoint_id, now)
            metrics.delivery_finished(Delivery.Status.FAILED)
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


def heartbeat(name: str) -> None:
    """The embedded dispatcher `name` (host:pid) is alive now: one UPDATE of its row (an
    INSERT the first time)."""
    now = timezone.now()
    if not DispatcherHeartbeat.objects.filter(pk=name).update(beat_at=now):
        DispatcherHeartbeat.objects.update_or_create(pk=name, defaults={"beat_at": now})


def forget_heartbeats(*, older_than: datetime) -> int:
    """Forget the heartbeats of dispatchers silent since before `older_than` (processes that
    stopped: each `runjobs` beats under its own host and process id), except the newest,
    whose age `/metrics` goes on reporting. Returns how many."""
    newest = DispatcherHeartbeat.objects.order_by("-beat_at").values_list("pk", flat=True).first()
    return DispatcherHeartbeat.objects.filter(beat_at__lt=older_than).exclude(pk=newest).delete()[0]
