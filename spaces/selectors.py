"""Reads of spaces, users, keys and service switches for the back office and `manage.py`."""

from datetime import datetime

from django.db.models import Q, QuerySet

from spaces.models import ApiKey, Space, User


def get_space(space_id: str) -> Space | None:
    """The space with this id, with its owner and subscription, or None."""
    return Space.objects.select_related("owner", "subscription").filter(pk=space_id).first()


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
