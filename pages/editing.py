"""What the organizer's page reads from its forms beyond details and settings: the deadline
(a wall-clock time in the poll's zone, UTC for a poll without one)."""

from datetime import datetime

from django.utils.translation import gettext as _

from core.errors import ServiceError
from polls.generators import wall_clock_to_utc
from polls.models import Poll
from polls.timezones import get_zone


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
    return {"text": f"{local:%A} {local.day} {local:%B %Y}, {local:%H:%M}", "value": f"{local:%Y-%m-%dT%H:%M}",
            "zone": zone}
