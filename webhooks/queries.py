"""The embedded dispatcher's look for work, the fan-out's reads and write, and the claim of
due deliveries as hand-written statements (core.rows): on SQLite every commit of another
process (each API request's rate-limit counter among them) wakes the dispatcher, under a
stream of writes it fans out a batch every few tens of milliseconds, as Celery's fan-out
tasks do, and under a backlog it claims a batch whenever half its senders' claims came
back; building the ORM's SQL for those statements cost several times more than running
them (docs/performance.md). Each is tested against the ORM query it stands for.
Everything else in webhooks uses the ORM."""

import functools
from datetime import datetime

from django.db import connection

from core.rows import Rider, Table, split
from core.statements import statement_cursor
from spaces.models import Space, Subscription
from webhooks.models import Delivery, Endpoint, Event

_EVENT, _DELIVERY = Table(Event, "e"), Table(Delivery, "d")
_ENDPOINT, _SPACE, _PRO = Table(Endpoint, "n"), Table(Space, "ns"), Table(Subscription, "np")
_CLAIMED = (_DELIVERY, _EVENT, _ENDPOINT, _SPACE, _PRO)
_LISTENER = Table(Endpoint, "ln")  # an alias of its own: it rides on the key lookup (core.rows.Rider)


def _waiting() -> str:
    """The condition of an event not fanned out yet."""
    return f"{_EVENT.column('dispatched_at')} IS NULL"


def _due() -> str:
    """The condition of a delivery due at a time (parameters: the pending status, the time
    twice): `selectors.due_deliveries`."""
    d = _DELIVERY.column
    return (f"{d('status')} = %s AND {d('next_attempt_at')} <= %s AND {d('attempts')} < {d('max_attempts')} "
            f"AND ({d('claimed_until')} IS NULL OR {d('claimed_until')} <= %s)")


def _due_params(now: datetime) -> list:
    at = connection.ops.adapt_datetimefield_value(now)
    return [Delivery.Status.PENDING, at, at]


@functools.cache
def _work_sql(vendor: str) -> str:
    return (f"SELECT EXISTS (SELECT 1 FROM {_EVENT.table} WHERE {_waiting()}), "
            f"EXISTS (SELECT 1 FROM {_DELIVERY.table} WHERE {_due()})")


def work_waiting(now: datetime) -> tuple[bool, bool]:
    """Whether an event waits to be fanned out, and whether a delivery is due at `now`: what
    `Event.objects.filter(dispatched_at__isnull=True).exists()` and
    `selectors.due_deliveries(now).exists()` tell. One query."""
    with statement_cursor() as cursor:
        cursor.execute(_work_sql(connection.vendor), _due_params(now))
        events, due = cursor.fetchone()
    return bool(events), bool(due)


@functools.cache
def _deliveries_due_sql(vendor: str, one: bool) -> str:
    only = f" AND {_DELIVERY.column('id')} = %s" if one else ""
    return f"SELECT 1 FROM {_DELIVERY.table} WHERE {_due()}{only} LIMIT 1"


def deliveries_due(now: datetime, delivery_id: str | None = None) -> bool:
    """`selectors.due_deliveries(now).exists()`, or of that one delivery: the look before a
    claim (a Celery fan-out task makes it after sending its own deliveries, every
    `deliver_due` task in its loop)."""
    one = delivery_id is not None
    with statement_cursor() as cursor:
        cursor.execute(_deliveries_due_sql(connection.vendor, one), _due_params(now) + ([delivery_id] if one else []))
        return cursor.fetchone() is not None


@functools.cache
def _claimable_sql(vendor: str, one: bool) -> str:
    only = f" AND {_DELIVERY.column('id')} = %s" if one else ""
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    return (f"SELECT {_DELIVERY.column('id')}, {_DELIVERY.column('claimed_until')} FROM {_DELIVERY.table} "
            f"WHERE {_due()}{only} ORDER BY {_DELIVERY.column('next_attempt_at')} LIMIT %s{lock}")


def claimable(now: datetime, limit: int, delivery_id: str | None = None) -> dict[str, bool]:
    """Inside a transaction: the `limit` deliveries due at `now` that were due longest (or
    that one, if due), locked for it: `selectors.due_deliveries(now)` ordered by
    `next_attempt_at`, `select_for_update(skip_locked=True)`, where the database can
    (PostgreSQL: concurrent workers take different rows; SQLite's IMMEDIATE transaction
    holds the database's write lock instead). Each id says whether the delivery was
    claimed before (its lease expired: a worker died on it)."""
    one = delivery_id is not None
    params = _due_params(now) + ([delivery_id] if one else []) + [limit]
    with statement_cursor() as cursor:
        cursor.execute(_claimable_sql(connection.vendor, one), params)
        return {pk: claimed_until is not None for pk, claimed_until in cursor.fetchall()}


@functools.lru_cache(maxsize=256)
def _claim_sql(vendor: str, deliveries: int) -> str:
    q, meta = connection.ops.quote_name, Delivery._meta
    attempts = q(meta.get_field("attempts").column)
    return (
        f"UPDATE {q(meta.db_table)} SET {q(meta.get_field('claimed_until').column)} = %s, "
        f"{q(meta.get_field('claim_token').column)} = %s, {attempts} = {attempts} + 1 "
        f"WHERE {q(meta.pk.column)} IN ({', '.join(['%s'] * deliveries)})"
    )


@functools.lru_cache(maxsize=256)
def _claimed_sql(vendor: str, deliveries: int) -> str:
    d = _DELIVERY.column
    return (
        f"SELECT {', '.join(table.columns() for table in _CLAIMED)} FROM {_DELIVERY.table} "
        f"JOIN {_EVENT.table} ON {_EVENT.column('id')} = {d('event')} "
        f"JOIN {_ENDPOINT.table} ON {_ENDPOINT.column('id')} = {d('endpoint')} "
        f"JOIN {_SPACE.table} ON {_SPACE.column('id')} = {_ENDPOINT.column('space')} "
        f"LEFT JOIN {_PRO.table} ON {_PRO.column('space')} = {_SPACE.column('id')} "
        f"WHERE {d('id')} IN ({', '.join(['%s'] * deliveries)}) "
        f"ORDER BY {d('created_at')} DESC, {d('id')}"
    )


def claim(delivery_ids: list[str], until: datetime, token: str) -> list[Delivery]:
    """Inside a transaction: give these deliveries a lease until `until` under `token` and
    count their attempt, then read them with their event, endpoint, space and subscription:
    what `Delivery.objects.filter(pk__in=delivery_ids).update(claimed_until=until,
    claim_token=token, attempts=F("attempts") + 1)` and then the same filter's
    `select_related("event", "endpoint__space__subscription")` give."""
    vendor = connection.vendor
    with statement_cursor() as cursor:
        cursor.execute(_claim_sql(vendor, len(delivery_ids)),
                       [connection.ops.adapt_datetimefield_value(until), token, *delivery_ids])
        cursor.execute(_claimed_sql(vendor, len(delivery_ids)), delivery_ids)
        rows = cursor.fetchall()
    deliveries = []
    for row in rows:
        delivery, event, endpoint, space, subscription = split(row, *_CLAIMED)
        Space.subscription.related.set_cached_value(space, subscription)
        if subscription is not None:
            Subscription.space.field.set_cached_value(subscription, space)
        endpoint.space = space
        delivery.event, delivery.endpoint = event, endpoint
        deliveries.append(delivery)
    return deliveries


@functools.cache
def _events_waiting_sql(vendor: str) -> str:
    return f"SELECT 1 FROM {_EVENT.table} WHERE {_waiting()} LIMIT 1"


def events_waiting() -> bool:
    """`Event.objects.filter(dispatched_at__isnull=True).exists()`."""
    with statement_cursor() as cursor:
        cursor.execute(_events_waiting_sql(connection.vendor))
        return cursor.fetchone() is not None


@functools.cache
def _oldest_events_sql(vendor: str) -> str:
    # Locked as `select_for_update(skip_locked=True)` locks them where the database can
    # (PostgreSQL); SQLite's transaction holds the whole database's write lock instead.
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    return (
        f"SELECT {_EVENT.columns()} FROM {_EVENT.table} WHERE {_waiting()} "
        f"ORDER BY {_EVENT.column('created_at')} LIMIT %s{lock}"
    )


def oldest_waiting_events(limit: int) -> list[Event]:
    """Inside a transaction: the `limit` oldest events not yet fanned out, locked for it as
    `claimable` locks deliveries."""
    with statement_cursor() as cursor:
        cursor.execute(_oldest_events_sql(connection.vendor), [limit])
        return [_EVENT.build(row) for row in cursor.fetchall()]


@functools.lru_cache(maxsize=256)
def _mark_sql(vendor: str, events: int) -> str:
    q, meta = connection.ops.quote_name, Event._meta
    return (
        f"UPDATE {q(meta.db_table)} SET {q(meta.get_field('dispatched_at').column)} = %s "
        f"WHERE {q(meta.pk.column)} IN ({', '.join(['%s'] * events)})"
    )


def mark_dispatched(event_ids: list[str], at: datetime) -> None:
    """`Event.objects.filter(pk__in=event_ids).update(dispatched_at=at)`."""
    with statement_cursor() as cursor:
        cursor.execute(_mark_sql(connection.vendor, len(event_ids)),
                       [connection.ops.adapt_datetimefield_value(at), *event_ids])


@functools.lru_cache(maxsize=256)
def _receivers_sql(vendor: str, spaces: int) -> str:
    return (
        f"SELECT {_ENDPOINT.columns()}, {_SPACE.columns()}, {_PRO.columns()} FROM {_ENDPOINT.table} "
        f"JOIN {_SPACE.table} ON {_SPACE.column('id')} = {_ENDPOINT.column('space')} "
        f"JOIN {_PRO.table} ON {_PRO.column('space')} = {_SPACE.column('id')} "
        f"WHERE {_ENDPOINT.column('space')} IN ({', '.join(['%s'] * spaces)}) "
        f"AND {_ENDPOINT.column('is_enabled')} = %s AND {_PRO.column('is_active')} = %s "
        f"ORDER BY {_ENDPOINT.column('created_at')}, {_ENDPOINT.column('id')}"
    )


def receivers(space_ids: set[str]) -> list[Endpoint]:
    """The enabled endpoints of these spaces whose subscription is active, with their space
    and its subscription loaded: `Endpoint.objects.filter(space_id__in=space_ids,
    is_enabled=True, space__subscription__is_active=True).select_related("space__subscription")`."""
    with statement_cursor() as cursor:
        cursor.execute(_receivers_sql(connection.vendor, len(space_ids)), [*space_ids, True, True])
        rows = cursor.fetchall()
    endpoints = []
    for row in rows:
        endpoint, space, subscription = split(row, _ENDPOINT, _SPACE, _PRO)
        Space.subscription.related.set_cached_value(space, subscription)
        Subscription.space.field.set_cached_value(subscription, space)
        endpoint.space = space
        endpoints.append(endpoint)
    return endpoints


def _enabled_rider_sql(space: str) -> tuple[str, str]:
    return (f"EXISTS (SELECT 1 FROM {_LISTENER.table} WHERE {_LISTENER.column('space')} = {space} "
            f"AND {_LISTENER.column('is_enabled')})"), ""


def _ridden_enabled(values) -> bool:
    return bool(values[0])  # SQLite gives 0 or 1


#: Made once: it has no parameters.
def _no_more_tokens(_) -> tuple:
    return ()  # a space's endpoints are covered by the space's own token (core.versions.space)


_ENABLED_RIDER = Rider(_enabled_rider_sql, [], _ridden_enabled, versions=_no_more_tokens)


def enabled_rider() -> Rider:
    """Whether the key's space has an enabled endpoint, read in the key lookup's statement
    (core.rows.Rider): what `Endpoint.objects.filter(space=space, is_enabled=True).exists()`
    tells, on the index `endpoint_space_enabled`."""
    return _ENABLED_RIDER
