"""Wire formats: the instant every response writes, and the dates, times and e-mail addresses
requests give.

The parsers raise `ValueError` with the reason as an API client reads it after the field's
path (`must be a date YYYY-MM-DD`); the strict request fields and the back office's forms
both call them, so a value is judged the same everywhere."""

import re
from datetime import UTC, date, datetime, time, timedelta, timezone

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

# Dates and times stay clear of the ends of the calendar (years 1 and 9999), where a time
# zone offset, a duration or the auto-close grace would step outside what can be represented.
MIN_DATE, MAX_DATE = date(1000, 1, 1), date(9998, 12, 31)
RANGE_MESSAGE = f"must be between {MIN_DATE.isoformat()} and {MAX_DATE.isoformat()}"
# Whole years: a date-time's year alone says whether its day is within them.
_MIN_YEAR, _MAX_YEAR = MIN_DATE.year, MAX_DATE.year
assert (MIN_DATE, MAX_DATE) == (date(_MIN_YEAR, 1, 1), date(_MAX_YEAR, 12, 31))

DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
CLOCK_PATTERN = r"^([01]\d|2[0-3]):[0-5]\d$"
DATE_TIME_PATTERN = r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})?$"
# re.ASCII: `\d` as in the JSON Schema patterns, 0-9 only; fullmatch, since `$` alone
# would allow a final "\n".
_DATE, _CLOCK, _DATE_TIME = (re.compile(pattern, re.ASCII) for pattern in (DATE_PATTERN, CLOCK_PATTERN, DATE_TIME_PATTERN))
# The usual forms of DATE_TIME_PATTERN (UTC as `Z`, or a wall clock; `T`), which
# `datetime.fromisoformat` reads as `_by_fields` does (core/tests/test_formats.py compares both),
# checked by a pattern without groups.
_USUAL_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?Z?", re.ASCII)


# Two- and three-digit fields of an instant, written once: a lookup each, where `%02d`
# formats through the generic integer path (twelve instants in a new poll's answer).
_TWO_DIGITS = tuple(f"{number:02d}" for number in range(100))
_THREE_DIGITS = tuple(f"{number:03d}" for number in range(1000))


def instant(value: datetime) -> str:
    """`YYYY-MM-DDTHH:MM:SS.sssZ`: UTC, milliseconds (truncated), `Z` (never `+00:00`), as
    `isoformat(timespec="milliseconds")` of the UTC value writes them, from tables of the
    fields' digits written once (a lookup per field, not `%`-formatting seven integers on
    every call). The year always has four digits (`strftime("%Y")` drops leading zeros on
    some platforms)."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    year, two = value.year, _TWO_DIGITS
    return (
        f"{year if year >= 1000 else f'{year:04d}'}-{two[value.month]}-{two[value.day]}"
        f"T{two[value.hour]}:{two[value.minute]}:{two[value.second]}.{_THREE_DIGITS[value.microsecond // 1000]}Z"
    )


def parse_date(text) -> date:
    """`YYYY-MM-DD`, a real calendar date from MIN_DATE to MAX_DATE."""
    if not isinstance(text, str) or not _DATE.fullmatch(text):
        raise ValueError("must be a date YYYY-MM-DD")
    try:
        value = date.fromisoformat(text)
    except ValueError:
        raise ValueError("must be a date YYYY-MM-DD") from None
    if not MIN_DATE <= value <= MAX_DATE:
        raise ValueError(RANGE_MESSAGE)
    return value


def parse_clock(text) -> time:
    """`HH:MM`, 00:00 to 23:59; seconds are not accepted."""
    if not isinstance(text, str) or not _CLOCK.fullmatch(text):
        raise ValueError("must be a time HH:MM (00:00-23:59)")
    return time(int(text[:2]), int(text[3:]))


def parse_date_time(text) -> datetime:
    """RFC 3339 date-time, seconds kept and fractions dropped: an aware datetime with `Z`
    or an offset, a naive one (wall clock or floating time) without. The usual forms are
    read by the standard library's parser in C after a pattern without groups; the others
    field by field."""
    try:
        if isinstance(text, str) and _USUAL_DATE_TIME.fullmatch(text):
            value = datetime.fromisoformat(text)
            if value.microsecond:  # `replace` parses keywords: only when there is something to drop
                value = value.replace(microsecond=0)
        else:
            match = _DATE_TIME.fullmatch(text) if isinstance(text, str) else None
            if not match:
                raise ValueError
            value = _by_fields(match)
    except ValueError:
        raise ValueError("must be an RFC 3339 date-time") from None
    if not _MIN_YEAR <= value.year <= _MAX_YEAR:  # MIN_DATE <= value.date() <= MAX_DATE
        raise ValueError(RANGE_MESSAGE)
    return value


def _by_fields(match: re.Match) -> datetime:
    """The date-time `_DATE_TIME` matched, read field by field (fractions dropped); ValueError
    for a day, time or offset that does not exist."""
    year, month, day, hour, minute, second, offset = match.groups()
    value = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0))
    if offset and offset not in "Zz":
        hours, minutes = int(offset[1:3]), int(offset[4:6])
        if hours > 23 or minutes > 59:
            raise ValueError
        delta = timedelta(hours=hours, minutes=minutes)
        return value.replace(tzinfo=timezone(delta if offset[0] == "+" else -delta))
    return value.replace(tzinfo=UTC) if offset else value


EMAIL_MAX_LENGTH = 254  # RFC 5321's limit on a forward path, the column's too


def parse_email(text) -> str:
    """An e-mail address (Django's check, at most 254 characters), trimmed."""
    email = text.strip() if isinstance(text, str) else ""
    try:
        validate_email(email)
    except ValidationError:
        raise ValueError("must be an e-mail address") from None
    if len(email) > EMAIL_MAX_LENGTH:
        raise ValueError(f"must be at most {EMAIL_MAX_LENGTH} characters")
    return email


# --- Text ------------------------------------------------------------------------------------
# Control characters: C0 (U+0000-U+001F), DEL and C1 (U+007F-U+009F). A one-line text (a title,
# a location, a name) takes none of them, nor the line and paragraph separators U+2028 and
# U+2029; a text of several lines (a description, a comment) keeps LF, CR and TAB. A line break
# in a title would end an e-mail header built from it (docs/api.md, "Text").
_ONE_LINE_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_LINES_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
ONE_LINE_MESSAGE = "must not contain control characters or line breaks"
LINES_MESSAGE = "must not contain control characters other than line breaks and tabs"


def text_problem(text: str, *, multiline: bool = False) -> str | None:
    """What is wrong with `text`'s characters (the reason, as after a field's path), or None."""
    if (_LINES_FORBIDDEN if multiline else _ONE_LINE_FORBIDDEN).search(text):
        return LINES_MESSAGE if multiline else ONE_LINE_MESSAGE
    return None


def one_line(text: str) -> str:
    """`text` with every run of control characters and line breaks made one space: for an
    e-mail header built from a value stored before the rule above held."""
    return re.sub("[\x00-\x1f\x7f-\x9f\u2028\u2029]+", " ", text).strip()
