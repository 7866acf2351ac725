"""Expanding time-slot generators into slots.

Rules (also in the OpenAPI description):
- Every date from `startDate` to `endDate` inclusive whose weekday is listed in `days`
  (every day when `days` is left out) gets a daily window from `from` to `to`, read as
  wall-clock time in the poll's time zone (or as floating time, i.e. UTC, without one).
- Slots start at `from + k * interval` and are kept while they end at or before `to`.
- Daylight saving: a wall-clock time that does not exist that day moves forward by the
  gap; an ambiguous one takes its first occurrence; slots step in real elapsed minutes
  from the window start (so a window that spans a change holds one hour more or less).
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class Generator:
    start_date: date
    end_date: date
    days: tuple[str, ...]
    start: time  # `from`
    end: time  # `to`
    interval: int  # minutes


def wall_clock_to_utc(day: date, clock: time, zone: tzinfo | None) -> datetime:
    """The UTC instant of a wall-clock time; with no zone the wall clock is taken as UTC.

    `fold=0` gives exactly the rule above: for a time in a spring-forward gap zoneinfo
    applies the offset from before the change, which lands `gap` later on the new clock;
    for an ambiguous time it picks the first occurrence."""
    local = datetime.combine(day, clock, tzinfo=zone or UTC)
    return local.astimezone(UTC)


def matching_days(generator: Generator) -> Iterator[date]:
    wanted = {WEEKDAYS.index(name) for name in generator.days}
    day = generator.start_date
    while day <= generator.end_date:
        if day.weekday() in wanted:
            yield day
        day += timedelta(days=1)


def slot_ranges(generator: Generator, duration: int, zone: tzinfo | None) -> Iterator[range]:
    """Per matching day, the UTC start instants of its slots as a range of Unix seconds.

    Ranges, not datetimes: a year of quarter-hour slots is 35,000 values, and counting or
    deduplicating them through `set.update(range)` stays cheap."""
    step = generator.interval * 60
    length = duration * 60
    for day in matching_days(generator):
        window_start = int(wall_clock_to_utc(day, generator.start, zone).timestamp())
        window_end = int(wall_clock_to_utc(day, generator.end, zone).timestamp())
        yield range(window_start, window_end - length + 1, step)


def expand(generator: Generator, duration: int, zone: tzinfo | None) -> Iterator[datetime]:
    """The UTC start instants of every slot the generator produces, in order."""
    for seconds in slot_ranges(generator, duration, zone):
        for start in seconds:
            yield datetime.fromtimestamp(start, UTC)
