"""The two fixed windows of a space and the headers that describe them (pure functions).

A window opens at the first request counted in it and lasts `seconds`; a window whose time
is up is as good as none: nothing counted, and the next counted request opens a new one.
Instants are Unix milliseconds, so that the arithmetic is exact in SQL, Lua and Python.
"""

from typing import NamedTuple

MINUTE = 60
DAY = 86_400


class Window(NamedTuple):
    seconds: int
    limit: int
    #: Requests counted in the open window (0 when none is open).
    count: int
    #: When the open window opened, or None when none is open.
    start_ms: int | None

    @classmethod
    def at(cls, now_ms: int, *, seconds: int, limit: int, start_ms: int | None, count: int | None) -> "Window":
        """The window as it stands at `now_ms`, from what a store holds (None: nothing)."""
        if start_ms is None or start_ms < 0 or start_ms + seconds * 1000 <= now_ms:
            return cls(seconds=seconds, limit=limit, count=0, start_ms=None)
        return cls(seconds=seconds, limit=limit, count=count or 0, start_ms=start_ms)

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.count)

    @property
    def exhausted(self) -> bool:
        return self.count >= self.limit

    def reset_seconds(self, now_ms: int) -> int:
        """Whole seconds until the window resets, rounded up; a window not yet open would
        last its full length from now."""
        if self.start_ms is None:
            return self.seconds
        return -(-(self.start_ms + self.seconds * 1000 - now_ms) // 1000)


class Outcome(NamedTuple):
    """What the store decided for one request, and both windows after it."""

    allowed: bool
    minute: Window
    day: Window


def policy(minute_limit: int, day_limit: int) -> str:
    return f"{minute_limit};w={MINUTE}, {day_limit};w={DAY}"


def headers(outcome: Outcome, now_ms: int) -> dict[str, str]:
    """RateLimit-* headers: the policy lists both windows; Limit, Remaining and Reset describe
    the one with the smaller fraction remaining (the minute window wins ties)."""
    minute, day = outcome.minute, outcome.day
    # remaining/limit compared without division: exact.
    binding = minute if minute.remaining * day.limit <= day.remaining * minute.limit else day
    return {
        "RateLimit-Policy": policy(minute.limit, day.limit),
        "RateLimit-Limit": str(binding.limit),
        "RateLimit-Remaining": str(binding.remaining),
        "RateLimit-Reset": str(binding.reset_seconds(now_ms)),
    }


def retry_after(outcome: Outcome, now_ms: int) -> int:
    """Seconds until every exhausted window has reset: the longest of their resets."""
    return max(w.reset_seconds(now_ms) for w in (outcome.minute, outcome.day) if w.exhausted)
