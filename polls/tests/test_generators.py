"""Properties of generator expansion (the function POST /v1/polls uses), over random
ranges, weekdays, windows and time zones with and without daylight saving."""

from datetime import UTC, date, datetime, time, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from polls.generators import WEEKDAYS, Generator, expand
from polls.timezones import get_zone

ZONES = [None, "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Santiago", "Pacific/Chatham"]


@st.composite
def generators(draw):
    start_date = draw(st.dates(min_value=date(2026, 1, 1), max_value=date(2028, 12, 31)))
    end_date = start_date + timedelta(days=draw(st.integers(0, 60)))
    days = tuple(draw(st.lists(st.sampled_from(WEEKDAYS), min_size=1, max_size=7, unique=True)))
    start_minute = draw(st.integers(0, 23 * 60 + 58))
    end_minute = draw(st.integers(start_minute + 1, 23 * 60 + 59))
    duration = draw(st.integers(15, 1440))
    interval = draw(st.integers(15, 1440))
    generator = Generator(start_date, end_date, days, time(*divmod(start_minute, 60)), time(*divmod(end_minute, 60)), interval)
    return generator, duration, draw(st.sampled_from(ZONES))


def _minutes(clock: time) -> int:
    return clock.hour * 60 + clock.minute


@settings(max_examples=300, deadline=None)
@given(generators())
def test_every_slot_lies_inside_its_window_on_a_listed_day(case):
    generator, duration, zone_name = case
    zone = get_zone(zone_name) if zone_name else UTC
    slots = list(expand(generator, duration, get_zone(zone_name) if zone_name else None))
    assert slots == sorted(slots) and len(set(slots)) == len(slots)
    by_day: dict[date, list[datetime]] = {}
    for slot in slots:
        local = slot.astimezone(zone)
        day = local.date()
        # A slot whose window start moved across midnight belongs to the day before.
        if day not in by_day and not (generator.start_date <= day <= generator.end_date and WEEKDAYS[day.weekday()] in generator.days):
            day = day - timedelta(days=1)
        assert generator.start_date <= day <= generator.end_date
        assert WEEKDAYS[day.weekday()] in generator.days
        by_day.setdefault(day, []).append(slot)

    window = _minutes(generator.end) - _minutes(generator.start)
    expected_per_day = 0 if window < duration else (window - duration) // generator.interval + 1
    day = generator.start_date
    while day <= generator.end_date:
        listed = WEEKDAYS[day.weekday()] in generator.days
        midnight = datetime.combine(day, time(0), tzinfo=zone)
        stable = midnight.utcoffset() == (midnight + timedelta(hours=23, minutes=59)).utcoffset()
        if listed and stable:
            # No clock change that day: slots are exactly the wall-clock arithmetic.
            starts = [slot.astimezone(zone) for slot in by_day.get(day, [])]
            assert len(starts) == expected_per_day
            for index, local in enumerate(starts):
                assert local.date() == day
                assert _minutes(local.time()) == _minutes(generator.start) + index * generator.interval
                end = local + timedelta(minutes=duration)
                assert end.date() == day and _minutes(end.time()) <= _minutes(generator.end)
        elif not listed:
            assert day not in by_day
        else:
            # A clock change that day: slots step in real minutes and fit the window's length
            # give or take the change (at most one hour here).
            starts = by_day.get(day, [])
            assert all(b - a == timedelta(minutes=generator.interval) for a, b in zip(starts, starts[1:]))
            assert abs(len(starts) - expected_per_day) <= 60 // generator.interval + 1
        day += timedelta(days=1)
