"""Helpers of the operator commands that name spaces and users (any app's `manage.py` group)."""

from django.core.management.base import CommandError

from spaces import selectors
from spaces.models import Space, User


def space_or_error(space_id: str) -> Space:
    space = selectors.get_space(space_id)
    if space is None:
        raise CommandError(f"no space with id {space_id!r}")
    return space


def user_dict(user: User) -> dict:
    return {"id": user.id, "name": user.name, "email": user.email, "banned": user.is_banned}
