"""The time an option stands for: domain time maths that the lifecycle, the reads and the
event payloads share (no HTTP here)."""

from datetime import UTC, date, datetime, time, timedelta
from typing import NamedTuple

from core.formats import instant


class Span(NamedTuple):
    """From `start` (inclusive) to `end` (exclusive), both aware UTC instants; `all_day` for
    a date option, which runs midnight to midnight UTC."""

    start: datetime
    end: datetime
    all_day: bool


def option_span(date: date | None, start_time: datetime | None, duration: int | None) -> Span:
    """The span of an option: a date is all day; a time option runs from its start for its
    duration (minutes)."""
    if date is not None:
        start = datetime.combine(date, time(), UTC)
        return Span(start, start + timedelta(days=1), True)
    return Span(start_time, start_time + timedelta(minutes=duration), False)


def span_data(span: Span) -> dict:
    """A span as event payloads and API answers write it: `start`, `end` (instants) and `allDay`."""
    return {"start": instant(span.start), "end": instant(span.end), "allDay": span.all_day}
