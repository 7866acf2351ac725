"""The key lookup of every API request as one hand-written statement (core.rows): the ORM
spent longer building its SQL than the database spent running it.

Each process keeps the objects it built for the keys it served lately, with the row they
were built from, and gives them again only when this request's row (every column of the
key, its space, the space's owner and subscription and the key's creator) equals that row:
a revoked key, a ban, a renamed space or a lapsed subscription is a different row, seen at
once. Building them (five model instances through the backend's converters) cost more than
the query. The objects are shared by the requests of the process and must not be changed
in memory (the services change rows in the database, never these instances)."""

import functools

from django.db import connection

from core.rows import Kept, Table, split
from spaces.models import ApiKey, Space, Subscription, User

_KEY, _SPACE, _OWNER, _CREATOR, _PRO = (
    Table(ApiKey, "k"), Table(Space, "s"), Table(User, "o"), Table(User, "c"), Table(Subscription, "p"),
)


@functools.cache
def _key_sql(vendor: str) -> str:
    tables = (_KEY, _SPACE, _OWNER, _CREATOR, _PRO)
    return (
        f"SELECT {', '.join(table.columns() for table in tables)} FROM {_KEY.table} "
        f"JOIN {_SPACE.table} ON {_SPACE.column('id')} = {_KEY.column('space')} "
        f"JOIN {_OWNER.table} ON {_OWNER.column('id')} = {_SPACE.column('owner')} "
        f"JOIN {_CREATOR.table} ON {_CREATOR.column('id')} = {_KEY.column('created_by')} "
        f"LEFT JOIN {_PRO.table} ON {_PRO.column('space')} = {_SPACE.column('id')} "
        f"WHERE {_KEY.column('prefix')} = %s"
    )


def key_by_prefix(prefix: str) -> ApiKey | None:
    """The key with `prefix`, its space, the space's owner and subscription (None when it has
    none) and the key's creator, all loaded: what
    `ApiKey.objects.select_related("space__owner", "space__subscription", "created_by")` gives."""
    with connection.cursor() as cursor:
        cursor.execute(_key_sql(connection.vendor), [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    return _KEYS_KEPT.made([(prefix, row)], _build)[0]


#: Keys whose built objects each process keeps (a few KB each; core.rows.Kept).
_KEYS_KEPT = Kept(1024)


def _build(row) -> ApiKey:
    key, space, owner, creator, subscription = split(row, _KEY, _SPACE, _OWNER, _CREATOR, _PRO)
    space.owner = owner
    key.space = space
    key.created_by = creator
    Space.subscription.related.set_cached_value(space, subscription)
    if subscription is not None:
        Subscription.space.field.set_cached_value(subscription, space)
    return key
