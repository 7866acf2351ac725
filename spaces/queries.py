"""The key lookup of every API request as one hand-written statement (core.rows): the ORM
spent longer building its SQL than the database spent running it.

Each process keeps the objects it built for the keys it served lately, with the row they
were built from, and gives them again only when this request's row (every column of the
key, its space, the space's owner and subscription and the key's creator) equals that row:
a revoked key, a ban, a renamed space or a lapsed subscription is a different row, seen at
once. Building them (five model instances through the backend's converters) cost more than
the query. The row comes packed (core.rows.pack): one text, compared as one string, and
unpacked only to build the objects again. The objects are shared by the requests of the
process and must not be changed in memory (the services change rows in the database, never
these instances)."""

import functools

from django.db import DEFAULT_DB_ALIAS, connections

from core.rows import Kept, Rider, RowsRider, Table, pack, split, unpacker
from core.statements import statement_cursor
from spaces.models import ApiKey, Space, Subscription, User

# Aliases of their own: a rider (core.rows.Rider) adds its tables to the statement.
_KEY, _SPACE, _OWNER, _CREATOR, _PRO = (
    Table(ApiKey, "k"), Table(Space, "ks"), Table(User, "ko"), Table(User, "kc"), Table(Subscription, "kp"),
)
_TABLES = (_KEY, _SPACE, _OWNER, _CREATOR, _PRO)
_FIELDS = [field for table in _TABLES for field in table.fields]


def _key_from() -> str:
    return (
        f"FROM {_KEY.table} "
        f"JOIN {_SPACE.table} ON {_SPACE.column('id')} = {_KEY.column('space')} "
        f"JOIN {_OWNER.table} ON {_OWNER.column('id')} = {_SPACE.column('owner')} "
        f"JOIN {_CREATOR.table} ON {_CREATOR.column('id')} = {_KEY.column('created_by')} "
        f"LEFT JOIN {_PRO.table} ON {_PRO.column('space')} = {_SPACE.column('id')}"
    )


def _key_columns(vendor: str) -> str:
    """The key's row packed: one column."""
    return pack(vendor, ", ".join(table.columns() for table in _TABLES))


@functools.cache
def _key_sql(vendor: str, rider_sql=None) -> str:
    columns, joins = rider_sql(_KEY.column("space")) if rider_sql else ("", "")
    return (
        f"SELECT {_key_columns(vendor)}{', ' + columns if columns else ''} {_key_from()} "
        f"{joins + ' ' if joins else ''}WHERE {_KEY.column('prefix')} = %s"
    )


@functools.cache
def _key_rows_sql(vendor: str, rider_sql, width: int, order: tuple) -> str:
    """The key's row (its packed column, NULL in the rider's), then the rider's rows (NULL,
    then the rider's columns), in one result: the key's first, since the order puts NULLs
    first."""
    anchor = Table(ApiKey, "rk")
    order_by = ", ".join(f"{index + 2} {direction} NULLS FIRST" for index, direction in order)
    return (
        f"SELECT {_key_columns(vendor)}, {', '.join(['NULL'] * width)} {_key_from()} WHERE {_KEY.column('prefix')} = %s "
        f"UNION ALL SELECT NULL, r.* FROM {anchor.table} "
        f"CROSS JOIN LATERAL ({rider_sql(anchor.column('space'))}) r WHERE {anchor.column('prefix')} = %s "
        f"ORDER BY {order_by}"
    )


def key_by_prefix(prefix: str, rider: Rider | RowsRider | None = None) -> tuple[ApiKey | None, object]:
    """The key with `prefix`, its space, the space's owner and subscription (None when it has
    none) and the key's creator, all loaded: what
    `ApiKey.objects.select_related("space__owner", "space__subscription", "created_by")` gives;
    and what `rider` read in the same statement, hanging on the key's space (None without a
    rider, or a key)."""
    db = connections[DEFAULT_DB_ALIAS]  # looked up once: each `connection.x` is a lookup and a caught AttributeError
    with statement_cursor(db) as cursor:
        if isinstance(rider, RowsRider):
            cursor.execute(_key_rows_sql(db.vendor, rider.sql, rider.width, rider.order), [prefix, *rider.params, prefix])
            rows = cursor.fetchall()
            row = rows[0] if rows else None
        else:
            cursor.execute(_key_sql(db.vendor, rider and rider.sql), [*(rider.params if rider else ()), prefix])
            row = cursor.fetchone()
    if row is None:
        return None, None
    key = _KEYS_KEPT.made([(prefix, row[0])], lambda packed: _build(unpacker(db, _FIELDS)(packed)))[0]
    if isinstance(rider, RowsRider):
        return key, rider.read([values[1:] for values in rows[1:]])
    return key, rider.read(row[1:]) if rider else None


#: Keys whose built objects each process keeps (a few KB each; core.rows.Kept).
_KEYS_KEPT = Kept(1024)


def _build(row) -> ApiKey:
    key, space, owner, creator, subscription = split(row, *_TABLES)
    space.owner = owner
    key.space = space
    key.created_by = creator
    Space.subscription.related.set_cached_value(space, subscription)
    if subscription is not None:
        Subscription.space.field.set_cached_value(subscription, space)
    return key
