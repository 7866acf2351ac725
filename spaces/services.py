"""Functions that change spaces, members, subscriptions, users and keys.

Each is keyword-only and transactional; the back office and `manage.py` call these and
nothing else. Bad input raises `ServiceError` with a message fit for a person.
"""

from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import ServiceError
from core.formats import parse_email
from spaces import keys, selectors
from spaces.models import ApiKey, Membership, Space, Subscription, User

KEY_NAME_MAX_LENGTH = ApiKey._meta.get_field("name").max_length
USER_NAME_MAX_LENGTH = User._meta.get_field("name").max_length
SPACE_NAME_MAX_LENGTH = Space._meta.get_field("name").max_length


def clean_email(email: str) -> str:
    """The e-mail address trimmed, or `ServiceError` if it is not one."""
    try:
        return parse_email(email)
    except ValueError:
        raise ServiceError(f"not a valid e-mail address: {(email or '').strip()!r}")


def get_or_create_user(*, email: str, name: str | None = None) -> User:
    """The user with this e-mail (matched case-insensitively), created if new; `name` is
    used only for a new user (default: the part of the address before the @)."""
    email = clean_email(email)
    name = (name or "").strip()
    if len(name) > USER_NAME_MAX_LENGTH:
        raise ServiceError(f"a user name must be at most {USER_NAME_MAX_LENGTH} characters")
    user = User.objects.filter(email__iexact=email).first()
    if user is None:
        try:
            with transaction.atomic():
                user = User.objects.create(email=email, name=name or email.split("@")[0][:USER_NAME_MAX_LENGTH])
        except IntegrityError:  # created concurrently
            user = User.objects.get(email__iexact=email)
    return user


@transaction.atomic
def create_space(*, name: str, owner_email: str, owner_name: str | None = None, pro: bool = False) -> Space:
    name = (name or "").strip()
    if not name or len(name) > SPACE_NAME_MAX_LENGTH:
        raise ServiceError(f"the space name must be 1 to {SPACE_NAME_MAX_LENGTH} characters")
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


def check_removable(membership: Membership) -> None:
    """Refuse to remove the owner from their own space."""
    if membership.user_id == membership.space.owner_id:
        raise ServiceError("the owner of a space cannot be removed from it")


@transaction.atomic
def remove_member(*, membership: Membership) -> None:
    check_removable(membership)
    membership.delete()


@transaction.atomic
def set_plan(*, space: Space, pro: bool) -> Subscription:
    subscription, _ = Subscription.objects.update_or_create(space=space, defaults={"is_active": pro})
    return subscription


def _clean_key_name(name: str) -> str:
    name = (name or "").strip()
    if len(name) > KEY_NAME_MAX_LENGTH:
        raise ServiceError(f"the key name must be at most {KEY_NAME_MAX_LENGTH} characters")
    return name


def _check_expiry(expires_at: datetime | None, now: datetime) -> None:
    if expires_at is None:
        return
    if timezone.is_naive(expires_at):
        raise ServiceError("the expiry must include a time zone")
    if expires_at <= now:
        raise ServiceError("the expiry must be in the future")


def _check_room_for_active_key(space: Space, now: datetime, *, excluding: ApiKey | None = None) -> None:
    """Lock the space (serialising concurrent key changes) and refuse an 11th active key."""
    Space.objects.select_for_update().filter(pk=space.pk).first()
    others = ApiKey.objects.filter(space=space)
    if excluding is not None:
        others = others.exclude(pk=excluding.pk)
    if selectors.keys_in_state(others, "active", now).count() >= ApiKey.MAX_ACTIVE_PER_SPACE:
        raise ServiceError(
            f"a space may have at most {ApiKey.MAX_ACTIVE_PER_SPACE} active keys; revoke one first"
        )


@transaction.atomic
def create_key(*, space: Space, name: str = "", expires_at: datetime | None = None) -> tuple[ApiKey, str]:
    """A new key for the space, created by its owner. Returns the row and the key itself,
    which is never stored and cannot be shown again."""
    now = timezone.now()
    name = _clean_key_name(name)
    _check_expiry(expires_at, now)
    _check_room_for_active_key(space, now)
    while True:
        raw, prefix = keys.new_key()
        salt = keys.new_salt()
        try:
            with transaction.atomic():
                key = ApiKey.objects.create(
                    space=space,
                    name=name,
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
def update_key(*, key: ApiKey, name: str, expires_at: datetime | None) -> ApiKey:
    """Rename a key or change its expiry. A new expiry must lie in the future; one that
    brings an expired key back to life must leave the space at most 10 active keys."""
    now = timezone.now()
    name = _clean_key_name(name)
    if expires_at != key.expires_at:
        _check_expiry(expires_at, now)
        if key.revoked_at is None and not key.is_active_at(now):
            _check_room_for_active_key(key.space, now, excluding=key)
    key.name, key.expires_at = name, expires_at
    key.save(update_fields=["name", "expires_at"])
    return key


@transaction.atomic
def revoke_key(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


@transaction.atomic
def set_banned(*, user: User, banned: bool) -> User:
    """Ban or unban a user: the keys of spaces they own or keys they created stop (or start
    again) working on the next request."""
    if user.is_banned != banned:
        user.is_banned = banned
        user.save(update_fields=["is_banned"])
    return user
