"""Reads of spaces, users, keys and service switches for the back office and `manage.py`."""

from datetime import datetime

from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from spaces.models import ApiKey, Membership, Space, Subscription, User


def get_space(space_id: str) -> Space | None:
    """The space with this id, with its owner and subscription, or None."""
    return Space.objects.select_related("owner", "subscription").filter(pk=space_id).first()


def key_by_prefix(prefix: str) -> ApiKey | None:
    """The key with `prefix` (one query) as every API request reads it: the key's fields, its
    `space` (id and owner id; its other fields are read when first asked for) and, beside
    them, `space_is_pro`, `owner_is_banned` and `creator_is_banned`.

    The one read written in SQL (through `raw()`, column names from `_meta`): the ORM's
    compilation of the four joins cost more than the rest of a poll read's queries together."""
    quote = connection.ops.quote_name
    key, space, user, subscription = (model._meta for model in (ApiKey, Space, User, Subscription))

    def column(alias: str, meta, name: str) -> str:
        return f"{alias}.{quote(meta.get_field(name).column)}"

    sql = (
        f"SELECT k.*, {column('s', space, 'owner')} AS owner_id, {column('o', user, 'is_banned')} AS owner_is_banned, "
        f"{column('c', user, 'is_banned')} AS creator_is_banned, {column('p', subscription, 'is_active')} AS space_is_pro "
        f"FROM {quote(key.db_table)} k "
        f"JOIN {quote(space.db_table)} s ON {column('s', space, 'id')} = {column('k', key, 'space')} "
        f"JOIN {quote(user.db_table)} o ON {column('o', user, 'id')} = {column('s', space, 'owner')} "
        f"JOIN {quote(user.db_table)} c ON {column('c', user, 'id')} = {column('k', key, 'created_by')} "
        f"LEFT JOIN {quote(subscription.db_table)} p ON {column('p', subscription, 'space')} = {column('s', space, 'id')} "
        f"WHERE {column('k', key, 'prefix')} = %s"
    )
    for found in ApiKey.objects.raw(sql, [prefix]):  # a prefix is unique: at most one row
        found.space = Space.from_db(found._state.db, ["id", "owner_id"], [found.space_id, found.owner_id])
        found.space_is_pro = bool(found.space_is_pro)  # NULL without a subscription
        return found
    return None


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
