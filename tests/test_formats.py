"""`core.formats.instant`, the API's timestamps, writes what
`isoformat(timespec="milliseconds")` of the UTC value writes, with `Z`."""

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from core.formats import instant


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
