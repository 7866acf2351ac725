"""The scheduled event of a poll as an iCalendar file (RFC 5545) for the invite page."""

import re
from datetime import timedelta

from django.utils import timezone

from pages.display import ics_stamp
from polls.models import Poll

# Every line break Unicode knows (what str.splitlines splits on: CR LF, LF, CR, VT, FF, the
# separators U+001C-U+001E, NEL, U+2028, U+2029) becomes the escaped `\n` of a TEXT value;
# every other control character (C0 but TAB, DEL, C1), which RFC 5545 does not allow in
# TEXT, is left out. A value stored before the API refused them still makes a valid file.
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")


def _text(value: str) -> str:
    value = value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
    return _CONTROL.sub("", _LINE_BREAK.sub("\\\\n", value))


def _fold(line: str) -> str:
    """Lines longer than 75 octets continue on the next line after a space."""
    out, current = [], b""
    for char in line:
        encoded = char.encode()
        if len(current) + len(encoded) > 75:
            out.append(current.decode())
            current = b" "
        current += encoded
    out.append(current.decode())
    return "\r\n".join(out)


def event_ics(poll: Poll, host: str, sequence: int = 0) -> str:
    """A VEVENT of the poll's scheduled option: a date as an all-day event, a time in UTC,
    a floating time (a poll without a zone) as floating local time."""
    option = poll.scheduled_option
    if option.date is not None:
        when = [f"DTSTART;VALUE=DATE:{option.date:%Y%m%d}",
                f"DTEND;VALUE=DATE:{option.date + timedelta(days=1):%Y%m%d}"]
    elif poll.time_zone:
        when = [f"DTSTART:{ics_stamp(option.start_time)}",
                f"DTEND:{ics_stamp(option.start_time + timedelta(minutes=option.duration))}"]
    else:
        end = option.start_time + timedelta(minutes=option.duration)
        when = [f"DTSTART:{option.start_time:%Y%m%dT%H%M%S}", f"DTEND:{end:%Y%m%dT%H%M%S}"]
    lines = [
        "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Scheduling Poll//Invite page//EN", "METHOD:PUBLISH",
        "BEGIN:VEVENT",
        f"UID:{poll.pk}@{host}",  # the UID of the decision e-mails' invitations (pages/invitations.py): one event
        f"DTSTAMP:{ics_stamp(timezone.now())}",
        f"SEQUENCE:{sequence}",  # the last invitation's: a calendar takes this file as that event's latest
        *when,
        f"SUMMARY:{_text(poll.title)}",
    ]
    if poll.location:
        lines.append(f"LOCATION:{_text(poll.location)}")
    if poll.description:
        lines.append(f"DESCRIPTION:{_text(poll.description)}")
    lines += ["END:VEVENT", "END:VCALENDAR"]
    return "\r\n".join(_fold(line) for line in lines) + "\r\n"
