"""How options read on the pages: date options as floating calendar days (never through a
time zone), time options in the poll's zone or the viewer's choice (`?tz=`), floating
times (a time poll without a zone) as their wall clock."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from polls.models import Option, Poll
from polls.timezones import InvalidTimeZone, canonical_time_zone, get_zone


@dataclass(frozen=True)
class Zone:
    name: str | None  # None: floating times, or a date poll
    asked: str | None = None  # a ?tz= that was not a time zone


def display_zone(poll: Poll, asked: str | None) -> Zone:
    if poll.kind != Poll.Kind.TIME or not poll.time_zone:
        return Zone(None)
    if asked:
        try:
            return Zone(canonical_time_zone(asked[:64]))
        except InvalidTimeZone:
            return Zone(poll.time_zone, asked=asked[:64])
    return Zone(poll.time_zone)


def _day(moment) -> tuple[str, str, str]:
    """(weekday, day, long form) e.g. ("Mon", "3 Jun 2030", "Monday 3 June 2030")."""
    return moment.strftime("%a"), f"{moment.day} {moment:%b %Y}", f"{moment:%A} {moment.day} {moment:%B %Y}"


def option_label(option: Option, zone: Zone) -> dict:
    """weekday, day, time (empty for a date) and `text`, the whole label in words."""
    if option.date is not None:
        weekday, day, text = _day(option.date)
        return {"weekday": weekday, "day": day, "time": "", "text": text}
    length = timedelta(minutes=option.duration)
    if zone.name:  # both ends as that zone's clock reads them (across a DST change too)
        start, end = (moment.astimezone(get_zone(zone.name)) for moment in (option.start_time, option.start_time + length))
    else:  # floating: the stored wall clock
        start = option.start_time.astimezone(UTC)
        end = start + length
    weekday, day, text = _day(start)
    time = f"{start:%H:%M}–{end:%H:%M}"
    if end.date() != start.date():
        time += f" (+{(end.date() - start.date()).days}d)"
    return {"weekday": weekday, "day": day, "time": time, "text": f"{text}, {time}"}


def ics_stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
