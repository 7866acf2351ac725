"""Wire formats shared by every response."""

from datetime import UTC, datetime


def instant(value: datetime) -> str:
    """`YYYY-MM-DDTHH:MM:SS.sssZ`: UTC, milliseconds, `Z` (never `+00:00`). The year always
    has four digits (`strftime("%Y")` drops leading zeros on some platforms)."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"
