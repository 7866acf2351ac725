"""Reads of a space's limits and counters, for `manage.py ratelimit` and the back office."""

from dataclasses import dataclass

from ratelimit.limiter import now_ms
from ratelimit.models import LimitOverride
from ratelimit.stores import default_limits, get_store
from ratelimit.windows import Window, policy


@dataclass(frozen=True)
class Usage:
    store: str
    override: LimitOverride | None
    minute: Window
    day: Window
    now_ms: int

    def as_dict(self) -> dict:
        def window(w: Window) -> dict:
            return {
                "limit": w.limit,
                "used": w.count,
                "remaining": w.remaining,
                "open": w.start_ms is not None,
                "resetSeconds": w.reset_seconds(self.now_ms) if w.start_ms is not None else None,
            }

        return {
            "store": self.store,
            "policy": policy(self.minute.limit, self.day.limit),
            "override": None if self.override is None else {
                "perMinute": self.override.per_minute, "perDay": self.override.per_day, "note": self.override.note,
            },
            "minute": window(self.minute),
            "day": window(self.day),
        }

    def summary(self) -> str:
        def window(name: str, w: Window) -> str:
            text = f"{name}: {w.count}/{w.limit} used, {w.remaining} left"
            if w.start_ms is None:
                return text + " (no window open)"
            return text + f", resets in {w.reset_seconds(self.now_ms)} s"

        return f"{window('minute', self.minute)}; {window('day', self.day)}"


def get_override(space_id: str) -> LimitOverride | None:
    return LimitOverride.objects.filter(space_id=space_id).first()


def usage(*, space_id: str) -> Usage:
    """The space's limits and both windows as they stand now; nothing is counted.
    Raises `StoreUnavailable` when the store cannot answer."""
    override = get_override(space_id)
    per_minute, per_day = default_limits()
    if override is not None:
        per_minute, per_day = override.per_minute or per_minute, override.per_day or per_day
    store = get_store()
    now = now_ms()
    minute, day = store.peek(space_id, now, (per_minute, per_day))
    return Usage(store=store.name, override=override, minute=minute, day=day, now_ms=now)
