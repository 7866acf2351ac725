"""IANA time zone names: validation and canonical names.

`tz_aliases.json` lists the legacy names of the tz database's `backward` file with their
current names (`Asia/Calcutta` -> `Asia/Kolkata`). It was generated from the tz database's
`tzdata.zi` (version 2025b) link lines.
"""

import json
import zoneinfo
from functools import cache
from pathlib import Path

# Zone data comes from the pinned `tzdata` package only, never from the host, so that every
# machine validates and converts alike.
zoneinfo.reset_tzpath(to=[])

_ALIASES: dict[str, str] = json.loads((Path(__file__).parent / "tz_aliases.json").read_text())


class InvalidTimeZone(ValueError):
    pass


@cache
def _available() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _is_fixed_offset(name: str) -> bool:
    return name in {"UTC", "UCT", "Zulu", "Universal", "Greenwich", "Factory"} or name.startswith(("GMT", "Etc/"))


def canonical_time_zone(name: str) -> str:
    """The canonical IANA name for `name`; raises InvalidTimeZone with the reason."""
    if name not in _available():
        raise InvalidTimeZone("unknown time zone (use an IANA name such as Europe/Berlin)")
    canonical = _ALIASES.get(name, name)
    if _is_fixed_offset(name) or _is_fixed_offset(canonical):
        raise InvalidTimeZone("fixed-offset zones are not accepted (omit timeZone for floating times)")
    return canonical


@cache
def get_zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)
