"""Changes to a space's limits and counters; the back office and `manage.py` call these."""

import logging

from django.db import transaction

from core.errors import ServiceError
from ratelimit.models import LimitOverride
from ratelimit.stores import OVERRIDE_CACHE_SECONDS, StoreUnavailable, get_store
from spaces.models import Space

logger = logging.getLogger("service.ratelimit")


@transaction.atomic
def set_override(*, space: Space, per_minute: int | None, per_day: int | None, note: str = "") -> LimitOverride:
    """Give the space its own limits (None: keep the default); they apply from its next request."""
    for name, value in (("per_minute", per_minute), ("per_day", per_day)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ServiceError(f"{name} must be a whole number of at least 1, or empty for the default")
    override, _ = LimitOverride.objects.update_or_create(
        space=space, defaults={"per_minute": per_minute, "per_day": per_day, "note": note.strip()}
    )
    transaction.on_commit(lambda: _forget_override(space.pk))
    return override


@transaction.atomic
def remove_override(*, space_id: str) -> bool:
    """Back to the default limits; False if the space had no override."""
    deleted, _ = LimitOverride.objects.filter(space_id=space_id).delete()
    transaction.on_commit(lambda: _forget_override(space_id))
    return bool(deleted)


def reset_counters(*, space_id: str) -> None:
    """Forget both windows of the space: its next request opens new ones.
    Raises `StoreUnavailable` when the store cannot answer."""
    get_store().reset(space_id)


def _forget_override(space_id: str) -> None:
    try:
        get_store().forget_override(space_id)
    except StoreUnavailable:
        logger.warning(
            "rate-limit override of space %s changed while the store was unreachable; "
            "Redis keeps using the old one for at most %s seconds", space_id, OVERRIDE_CACHE_SECONDS,
        )
