"""Random identifiers: never sequential, never revealing counts."""

import secrets
import string

_LOWER_DIGITS = string.ascii_lowercase + string.digits
_ALNUM = string.ascii_letters + string.digits


def random_id() -> str:
    """Ids of options, participants, users, spaces, keys and events: 24 of [a-z0-9]."""
    return "".join(secrets.choice(_LOWER_DIGITS) for _ in range(24))


def poll_id() -> str:
    """Poll ids double as invite links: 12 of [A-Za-z0-9] (71 bits)."""
    return "".join(secrets.choice(_ALNUM) for _ in range(12))
