"""Functions that change spaces, members, subscriptions, users and keys.

Each is keyword-only and transactional; the back office and `manage.py` call these and
nothing else. Bad input raises `ServiceError` with a message fit for a person.
"""

from datetime import datetime

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from spaces import keys
from spaces.models import ApiKey, Membership, Space, Subscription, User


class ServiceError(Exception):
    """A refused action; the message says why."""


def _clean_email(email: str) -> str:
    email = (email or "").strip()
    try:
        validate_email(email)
    except ValidationError:
        raise ServiceError(f"not a valid e-mail address: {email!r}")
    return email


def get_or_create_user(*, email: str, name: str | None = None) -> User:
    email = _clean_email(email)
    user = User.objects.filter(email__iexact=email).first()
    if user is None:
        try:
            with transaction.atomic():
                user = User.objects.create(email=email, name=name or email.split("@")[0])
        except IntegrityError:  # created concurrently
            user = User.objects.get(email__iexact=email)
    return user


@transaction.atomic
def create_space(*, name: str, owner_email: str, owner_name: str | None = None, pro: bool = False) -> Space:
    name = (name or "").strip()
    if not name or len(name) > 255:
        raise ServiceError("the space name must be 1 to 255 characters")
    owner = get_or_create_user(email=owner_email, name=owner_name)
    space = Space.objects.create(name=name, owner=owner)
    Membership.objects.create(space=space, user=owner)
    Subscription.objects.create(space=space, is_active=pro)
    return space


@transaction.atomic
def add_member(*, space: Space, email: str, name: str | None = None) -> Membership:
    user = get_or_create_user(email=email, name=name)
    membership, _ = Membership.objects.get_or_create(space=space, user=user)
    return membership


@transaction.atomic
def set_plan(*, space: Space, pro: bool) -> Subscription:
    subscription, _ = Subscription.objects.update_or_create(space=space, defaults={"is_active": pro})
    return subscription


@transaction.atomic
def create_key(*, space: Space, name: str = "", expires_at: datetime | None = None) -> tuple[ApiKey, str]:
    """A new key for the space, created by its owner. Returns the row and the key itself,
    which is never stored and cannot be shown again."""
    Space.objects.select_for_update().filter(pk=space.pk).first()  # serialise the count
    now = timezone.now()
    if expires_at is not None and expires_at <= now:
        raise ServiceError("the expiry must be in the future")
    active = [k for k in ApiKey.objects.filter(space=space, revoked_at__isnull=True) if k.is_active_at(now)]
    if len(active) >= ApiKey.MAX_ACTIVE_PER_SPACE:
        raise ServiceError(f"a space may have at most {ApiKey.MAX_ACTIVE_PER_SPACE} active keys; revoke one first")
    while True:
        raw, prefix = keys.new_key()
        salt = keys.new_salt()
        try:
            with transaction.atomic():
                key = ApiKey.objects.create(
                    space=space,
                    name=name.strip(),
                    prefix=prefix,
                    salt=salt,
                    hash=keys.hash_key(raw, salt),
                    created_by=space.owner,
                    expires_at=expires_at,
                )
            return key, raw
        except IntegrityError:  # prefix taken: draw again
            continue


@transaction.atomic
def revoke_key(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def set_banned(*, user: User, banned: bool) -> User:
    if user.is_banned != banned:
        user.is_banned = banned
        user.save(update_fields=["is_banned"])
    return user
