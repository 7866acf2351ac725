"""How options read on the pages: date options as floating calendar days (never through a
time zone), time options in the poll's zone or the viewer's choice (`?tz=`), floating
times (a time poll without a zone) as their wall clock."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from urllib.parse import unquote
from zoneinfo import available_timezones

from django.utils.dateformat import format as date_format
from django.utils.translation import pgettext

from polls.models import Option, Poll
from polls.timezones import InvalidTimeZone, canonical_time_zone, get_zone

TZ_COOKIE = "tz"  # the viewer's zone: set by app.js from the browser, or by choosing one (?tz=)


@dataclass(frozen=True)
class Zone:
    name: str | None  # None: floating times, or a date poll
    asked: str | None = None  # a ?tz= that was not a time zone
    chosen: str | None = None  # a valid ?tz= to remember in the cookie


def valid_zone(name: str | None) -> str | None:
    try:
        return canonical_time_zone(unquote(name or "")[:64]) if name else None
    except InvalidTimeZone:
        return None


def display_zone(poll: Poll, request=None) -> Zone:
    """The zone a time poll's options are shown in: the one asked for (`?tz=`), else this
    browser's (the `tz` cookie), else (and without a request) the poll's own."""
    if poll.kind != Poll.Kind.TIME or not poll.time_zone:
        return Zone(None)
    if request is None:
        return Zone(poll.time_zone)
    asked = request.GET.get("tz")
    if asked:
        chosen = valid_zone(asked)
        if chosen:
            return Zone(chosen, chosen=chosen)
        return Zone(valid_zone(request.COOKIES.get(TZ_COOKIE)) or poll.time_zone, asked=asked[:64])
    return Zone(valid_zone(request.COOKIES.get(TZ_COOKIE)) or poll.time_zone)


@cache
def zone_names() -> tuple[str, ...]:
    """The IANA zones the picker offers: canonical Area/City names, no fixed offsets."""
    return tuple(sorted(name for name in available_timezones()
                        if "/" in name and valid_zone(name) == name and not name.startswith(("posix/", "right/"))))


def _day(moment) -> tuple[str, str, str]:
    """(weekday, day, long form) in the active language, e.g. ("Mon", "3 Jun 2030", "Monday 3
    June 2030"); the formats are the catalogues' (Django's date format characters)."""
    return (date_format(moment, "D"), date_format(moment, pgettext("day of an option", "j M Y")),
            date_format(moment, pgettext("long date", "l j F Y")))


def long_date_time(moment: datetime) -> str:
    """A moment in words and on the clock, e.g. "Monday 3 June 2030, 18:00"."""
    return date_format(moment, pgettext("long date and time", "l j F Y, H:i"))


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
        time += " " + pgettext("ends days later", "(+%(days)d d)") % {"days": (end.date() - start.date()).days}
    return {"weekday": weekday, "day": day, "time": time, "text": f"{text}, {time}"}


def ics_stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
