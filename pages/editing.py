"""What the organizer's page reads from its forms beyond details and settings: the deadline
(a wall-clock time in the poll's zone, UTC for a poll without one) and the options to keep
and to add (dates, or a day, a time in the poll's zone and a duration), checked by the API's
parsers and then by `update_poll`."""

from collections import Counter
from datetime import datetime

from django.utils.translation import gettext as _

from core.errors import ServiceError
from core.formats import parse_clock, parse_date
from pages.display import long_date_time
from pages.problems import in_words
from polls.generators import wall_clock_to_utc
from polls.models import Option, Poll
from polls.timezones import get_zone

ADD_ROWS = 3  # empty rows for new options on the form


def deadline_zone(poll: Poll) -> str:
    """The zone the deadline is read and shown in: the poll's, else UTC."""
    return poll.time_zone or "UTC"


def read_deadline(poll: Poll, text: str) -> datetime:
    """The instant of a `datetime-local` value (YYYY-MM-DDTHH:MM) in the deadline's zone."""
    try:
        local = datetime.fromisoformat((text or "").strip()[:19])
    except ValueError:
        raise ServiceError(_("Deadline: give a date and a time, e.g. 2030-06-01 18:00.")) from None
    if local.tzinfo is not None:
        raise ServiceError(_("Deadline: give a date and a time, e.g. 2030-06-01 18:00."))
    return wall_clock_to_utc(local.date(), local.time(), get_zone(deadline_zone(poll)))


def deadline_label(poll: Poll) -> dict | None:
    """The deadline as the pages show it: {"text", "value" (for the form's field), "zone"}."""
    if poll.closes_at is None:
        return None
    zone = deadline_zone(poll)
    local = poll.closes_at.astimezone(get_zone(zone))
    return {"text": long_date_time(local), "value": f"{local:%Y-%m-%dT%H:%M}", "zone": zone}


def default_duration(options: list[Option]) -> int:
    """The duration a new time option is offered with: the options' most common one."""
    counted = Counter(option.duration for option in options if option.duration)
    return counted.most_common(1)[0][0] if counted else 60


def wanted_options(poll: Poll, options: list[Option], data) -> list[dict]:
    """The options `update_poll` is to keep (by id) and add, from the form: `remove` (ids),
    `add_date` (a date poll), `add_day`, `add_time` and `add_duration` (a time poll, in the
    poll's zone). An added option equal to another counts once, as the API counts them."""
    removed = set(data.getlist("remove"))
    unknown = sorted(removed - {option.pk for option in options})
    if unknown:
        raise ServiceError(f"options: {', '.join(unknown)} not an option of poll {poll.pk}")
    wanted = [{"id": option.pk, "date": option.date, "start_time": option.start_time, "duration": option.duration}
              for option in options if option.pk not in removed]
    seen = {(item["date"], item["start_time"], item["duration"]) for item in wanted}
    for item in _added(poll, data):
        key = (item.get("date"), item.get("start_time"), item.get("duration"))
        if key not in seen:
            seen.add(key)
            wanted.append(item)
    return wanted


def _added(poll: Poll, data) -> list[dict]:
    problems, added = [], []
    if poll.kind == Poll.Kind.DATE:
        for text in data.getlist("add_date"):
            if text.strip():
                try:
                    added.append({"date": parse_date(text.strip())})
                except ValueError as error:
                    problems.append(_("New option %(value)s: %(error)s") % {"value": text.strip()[:40],
                                                                           "error": in_words(str(error))})
    else:
        zone = get_zone(poll.time_zone) if poll.time_zone else None
        days, clocks, durations = data.getlist("add_day"), data.getlist("add_time"), data.getlist("add_duration")
        for day, clock, minutes in zip(days, clocks, durations + [""] * (len(days) - len(durations)), strict=False):
            if not day.strip() and not clock.strip():
                continue
            try:
                start = wall_clock_to_utc(parse_date(day.strip()), parse_clock(clock.strip()), zone)
            except ValueError as error:
                problems.append(_("New option %(value)s: %(error)s") % {"value": f"{day} {clock}".strip()[:40],
                                                                       "error": in_words(str(error))})
                continue
            try:
                duration = int(minutes)
            except ValueError:
                duration = None  # update_poll names the duration's range
            added.append({"start_time": start, "duration": duration})
    if problems:
        raise ServiceError("; ".join(problems))
    return added
