"""Reads of spaces, users, keys and service switches for the back office and `manage.py`."""

from datetime import datetime
from typing import NamedTuple

from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from spaces.models import ApiKey, Membership, Space, Subscription, User


def get_space(space_id: str) -> Space | None:
    """The space with this id, with its owner and subscription, or None."""
    return Space.objects.select_related("owner", "subscription").filter(pk=space_id).first()


class KeyRow(NamedTuple):
    """An API key as a request is authenticated by it (`key_by_prefix`)."""

    id: str
    space_id: str
    salt: str
    hash: str
    owner_id: str
    usable: bool  # neither revoked nor expired, its creator and its space's owner not banned
    space_is_pro: bool
    use_unrecorded: bool  # its last use recorded at or before `recorded_since` (or never)


def key_by_prefix(prefix: str, *, now: datetime, recorded_since: datetime) -> KeyRow | None:
    """The key with `prefix` as every API request reads it, one query. The one read written
    in SQL (column names from `_meta`): the ORM's compilation of the four joins cost more
    than the rest of a poll read's queries together."""
    quote = connection.ops.quote_name
    key, space, user, subscription = (model._meta for model in (ApiKey, Space, User, Subscription))

    def k(name: str) -> str:
        return f"k.{quote(key.get_field(name).column)}"

    def column(alias: str, meta, name: str) -> str:
        return f"{alias}.{quote(meta.get_field(name).column)}"

    owner, creator_banned = column("s", space, "owner"), column("c", user, "is_banned")
    sql = (
        f"SELECT {k('id')}, {k('space')}, {k('salt')}, {k('hash')}, {owner}, "
        f"({k('revoked_at')} IS NULL AND ({k('expires_at')} IS NULL OR {k('expires_at')} > %s) "
        f"AND NOT {column('o', user, 'is_banned')} AND NOT {creator_banned}), "
        f"{column('p', subscription, 'is_active')}, ({k('last_used_at')} IS NULL OR {k('last_used_at')} <= %s) "
        f"FROM {quote(key.db_table)} k "
        f"JOIN {quote(space.db_table)} s ON {column('s', space, 'id')} = {k('space')} "
        f"JOIN {quote(user.db_table)} o ON {column('o', user, 'id')} = {owner} "
        f"JOIN {quote(user.db_table)} c ON {column('c', user, 'id')} = {k('created_by')} "
        f"LEFT JOIN {quote(subscription.db_table)} p ON {column('p', subscription, 'space')} = {column('s', space, 'id')} "
        f"WHERE {k('prefix')} = %s"
    )
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(sql, [adapt(now), adapt(recorded_since), prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    # SQLite answers the conditions 0 or 1; no subscription: NULL.
    return KeyRow(*row[:5], usable=bool(row[5]), space_is_pro=bool(row[6]), use_unrecorded=bool(row[7]))


def get_key(key_id: str) -> ApiKey | None:
    return ApiKey.objects.select_related("space").filter(pk=key_id).first()


def get_user_by_email(email: str) -> User | None:
    """The user with this e-mail address, matched case-insensitively, or None."""
    return User.objects.filter(email__iexact=(email or "").strip()).first()


def space_keys(space: Space) -> QuerySet[ApiKey]:
    """Every key of the space, revoked and expired ones included, newest first."""
    return ApiKey.objects.filter(space=space).order_by("-created_at", "id")


KEY_STATES = ("active", "expired", "revoked")


def key_state(key: ApiKey, now: datetime) -> str:
    """`revoked`, `expired` or `active`: revocation wins over expiry."""
    if key.revoked_at is not None:
        return "revoked"
    if not key.is_active_at(now):
        return "expired"
    return "active"


def keys_in_state(keys: QuerySet[ApiKey], state: str, now: datetime) -> QuerySet[ApiKey]:
    """Narrow a queryset of keys to one `key_state`."""
    if state == "revoked":
        return keys.filter(revoked_at__isnull=False)
    live = keys.filter(revoked_at__isnull=True)
    if state == "expired":
        return live.filter(expires_at__lte=now)
    return live.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))


# --- Operator listings ----------------------------------------------------------------------


def list_spaces(*, plan: str | None = None, name_contains: str | None = None, limit: int = 100) -> list[Space]:
    """Spaces by name, each with its owner, subscription and counts of members and active
    keys (`member_count`, `active_key_count`): one query whatever the number. `plan`:
    `pro` (an active subscription) or `free`."""
    now = timezone.now()
    spaces = Space.objects.select_related("owner", "subscription").annotate(
        member_count=Count("memberships", distinct=True),
        active_key_count=Count("api_keys", distinct=True, filter=Q(api_keys__revoked_at__isnull=True)
                               & (Q(api_keys__expires_at__isnull=True) | Q(api_keys__expires_at__gt=now))),
    ).order_by("name", "id")
    if plan == "pro":
        spaces = spaces.filter(subscription__is_active=True)
    elif plan == "free":
        spaces = spaces.exclude(subscription__is_active=True)
    if name_contains:
        spaces = spaces.filter(name__icontains=name_contains)
    return list(spaces[:limit])


def space_members(space: Space) -> QuerySet[Membership]:
    """The space's memberships with their users, oldest first."""
    return Membership.objects.filter(space=space).select_related("user").order_by("created_at", "id")


def list_users(*, banned: bool | None = None, email_contains: str | None = None, limit: int = 100) -> list[User]:
    """Users by e-mail address, each with `owned_count` and `member_count` (spaces): one query."""
    users = User.objects.annotate(
        owned_count=Count("owned_spaces", distinct=True), member_count=Count("memberships", distinct=True)
    ).order_by("email", "id")
    if banned is not None:
        users = users.filter(is_banned=banned)
    if email_contains:
        users = users.filter(email__icontains=email_contains)
    return list(users[:limit])
