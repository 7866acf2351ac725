"""`core.formats.instant`, the API's timestamps, writes what
`isoformat(timespec="milliseconds")` of the UTC value writes, with `Z`."""

import re
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from core.formats import DATE_TIME_PATTERN, instant


def reference(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"


def test_instant_is_isoformat_in_utc_with_milliseconds():
    zones = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=11)), ZoneInfo("UTC"),
             ZoneInfo("Europe/Berlin"), ZoneInfo("America/St_Johns")]
    values = [
        datetime(year, month, day, hour, minute, second, micro, tzinfo=zone)
        for zone in zones
        for year, month, day in [(2, 1, 1), (999, 12, 31), (2026, 3, 29), (2026, 10, 25), (9998, 12, 31)]
        for hour, minute, second in [(0, 0, 0), (1, 30, 0), (2, 30, 59), (23, 59, 59)]
        for micro in [0, 999, 1000, 123456, 999999]
    ]
    assert len(values) == 600
    for value in values:
        assert instant(value) == reference(value), value
    assert instant(datetime(2031, 3, 4, 7, 6, 7, 123999, tzinfo=timezone(timedelta(hours=2)))) == "2031-03-04T05:06:07.123Z"


@settings(max_examples=2000, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-3, minutes=-30)), ZoneInfo("Asia/Tokyo")])))
def test_instant_matches_isoformat_for_any_value(value):
    assert instant(value) == reference(value)


def _parsed_field_by_field(text: str):
    """What parse_date_time gave for every form before its fast path for `Z` and wall clocks
    (2026-11-28): each field read with int() (core.formats._by_fields, still its reading of
    the other forms), fractions dropped."""
    from core.formats import _DATE_TIME, MAX_DATE, MIN_DATE, _by_fields

    match = _DATE_TIME.fullmatch(text)
    if not match:
        return "invalid"
    try:
        value = _by_fields(match)
    except ValueError:
        return "invalid"
    return value if MIN_DATE <= value.date() <= MAX_DATE else "out of range"


@settings(max_examples=3000, deadline=None)
@given(st.one_of(
    st.from_regex(re.compile(DATE_TIME_PATTERN, re.ASCII), fullmatch=True),
    # Mostly real calendar values, so that the parsed values are compared, not only refusals.
    st.builds(
        lambda day, clock, fraction, offset: f"{day}T{clock}{fraction}{offset}",
        st.dates().map(date.isoformat).filter(lambda text: len(text) == 10),
        st.sampled_from(["00:00", "23:59", "07:30:00", "12:00:59", "24:00:00", "07:60", "23:59:60"]),
        st.sampled_from(["", ".5", ".123456", ".1234567", ".123456789"]),
        st.sampled_from(["", "Z", "z", "+00:00", "-00:00", "+05:30", "-23:59", "+24:00", "+05:60"]),
    ),
))
def test_parse_date_time_reads_every_accepted_form_as_field_by_field(text):
    from core.formats import parse_date_time

    try:
        parsed = parse_date_time(text)
    except ValueError as error:
        parsed = "out of range" if str(error).startswith("must be between") else "invalid"
    expected = _parsed_field_by_field(text)
    assert parsed == expected
    if isinstance(expected, datetime):
        assert parsed.utcoffset() == expected.utcoffset() and parsed.microsecond == 0
