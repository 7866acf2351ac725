"""Wire formats shared by every response."""

from datetime import UTC, datetime


def instant(value: datetime) -> str:
    """`YYYY-MM-DDTHH:MM:SS.sssZ`: UTC, milliseconds, `Z` (never `+00:00`)."""
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
