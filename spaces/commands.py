"""Helpers of the operator commands that name spaces and users (any app's `manage.py` group)."""

from datetime import datetime

from django.core.management.base import CommandError

from core.commands import optional_instant
from spaces import selectors
from spaces.models import ApiKey, Space, User


def space_or_error(space_id: str) -> Space:
    space = selectors.get_space(space_id)
    if space is None:
        raise CommandError(f"no space with id {space_id!r}")
    return space


def user_dict(user: User) -> dict:
    return {"id": user.id, "name": user.name, "email": user.email, "banned": user.is_banned}


def key_dict(key: ApiKey, now: datetime) -> dict:
    """What an operator may see of a key: never its hash or salt."""
    return {
        "id": key.id,
        "spaceId": key.space_id,
        "name": key.name,
        "prefix": key.prefix,
        "state": selectors.key_state(key, now),
        "createdAt": optional_instant(key.created_at),
        "lastUsedAt": optional_instant(key.last_used_at),
        "expiresAt": optional_instant(key.expires_at),
        "revokedAt": optional_instant(key.revoked_at),
    }
