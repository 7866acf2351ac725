"""What each web process read for an API key, used again without the database while it is
provably the same: the key with its space, owner, creator and subscription
(spaces.queries.key_by_prefix) and what the view's rider read with it (a poll's row for the
poll's reads; whether the space has an enabled webhook endpoint for a create).

With Redis as the rate-limit store, every API request makes one round trip to Redis anyway:
the limiter's script. A cached read names the version tokens it depends on (core.versions:
the key's space, the space's owner and the key's creator; a poll and its organizer for a
poll's row), with the values they had before it was read from the database; the script
compares them with the current ones and counts the request only if none changed
(ratelimit.stores). So a request whose key this process served
lately costs one round trip instead of two, and a change committed before the request
arrived is never missed: its bump came first. When a token did change (`Stale`), nothing was
counted, and the request is checked again from the start with a fresh read
(core.api.views.ApiView), the tokens the script returned being kept with it.

An entry lives READ_CACHE_SECONDS at most (the bound for a change whose tokens could not be
set: Redis unreachable at that moment), and is only used for a key that is still active
then (expiry is a time: checked on every request), whose space is Pro and whose owner and
creator are not banned; anything else reads the database and answers as it says. Keyed by
the key's prefix and the rider's statement and parameters; the raw key is checked against
the key's salted hash on every use and never kept. A key first read has no tokens yet: it
is kept with none, so that its next request reads the tokens and the rows again, in that
order, and is cached from then on.
"""

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from core import versions
from core.rows import Rider, RowsRider
from core.versions import Versions
from spaces.models import ApiKey

#: Entries each process keeps (least recently used out): a few KB each.
SIZE = 4096
#: Tokens no Redis holds: an entry made before its tokens were read never passes the check.
UNKNOWN = "?"


@dataclass(slots=True)
class Entry:
    key: ApiKey
    ridden: object
    versions: Versions
    expires: float  # time.monotonic()


_entries: OrderedDict = OrderedDict()
_lock = threading.Lock()
#: Each key's last use (by prefix) as the database has it, as far as this process knows: one
#: per key, however many entries (one per poll read) it has.
_last_uses: dict[str, datetime] = {}


def cacheable(rider: Rider | RowsRider | None) -> bool:
    """Whether a key's read with `rider` may be kept: no rider, or one that names the tokens
    its result depends on (not a page of the poll list)."""
    return rider is None or getattr(rider, "versions", None) is not None


def token_names(key: ApiKey, rider: Rider | None, ridden) -> tuple[str, ...]:
    """The version tokens a key's read with `rider`, which gave `ridden`, depends on."""
    names = [versions.space(key.space_id), versions.user(key.space.owner_id), versions.user(key.created_by_id)]
    if rider is not None:
        names += rider.versions(ridden)
    return tuple(dict.fromkeys(names))  # the owner is often the key's creator


def _slot(prefix: str, rider: Rider | None) -> tuple:
    return (prefix, None, ()) if rider is None else (prefix, rider.sql, tuple(rider.params))


def get(prefix: str, rider: Rider | None) -> Entry | None:
    """The entry of this key and rider, unless there is none or it has expired."""
    slot = _slot(prefix, rider)
    with _lock:
        entry = _entries.get(slot)
        if entry is None:
            return None
        if entry.expires <= time.monotonic():
            del _entries[slot]
            return None
        _entries.move_to_end(slot)
        return entry


def keep(prefix: str, rider: Rider | None, key: ApiKey, ridden, fresh: Versions | None) -> None:
    """Keep what was read for this key and rider, with `fresh`, the tokens read before it,
    if they are those it depends on (None, or others: the entry's first use reads them)."""
    names = token_names(key, rider, ridden)
    tokens = fresh.tokens if fresh is not None and fresh.names == names else (UNKNOWN,) * len(names)
    entry = Entry(key, ridden, Versions(names, tokens), time.monotonic() + settings.READ_CACHE_SECONDS)
    slot = _slot(prefix, rider)
    with _lock:
        _entries[slot] = entry
        _entries.move_to_end(slot)
        while len(_entries) > SIZE:
            _entries.popitem(last=False)


def last_use(prefix: str, read: datetime | None) -> datetime | None:
    """The key's last use: the later of what this process recorded and `read`, the value the
    database gave with the key's row (another process may have recorded one since)."""
    known = _last_uses.get(prefix)
    return read if known is None or read is not None and read > known else known


def used(prefix: str, when: datetime) -> None:
    """This process recorded the key's use at `when`."""
    if len(_last_uses) >= SIZE:
        _last_uses.clear()
    _last_uses[prefix] = when


def drop(prefix: str, rider: Rider | None) -> None:
    with _lock:
        _entries.pop(_slot(prefix, rider), None)


def clear() -> None:
    """Forget every entry (tests)."""
    with _lock:
        _entries.clear()
        _last_uses.clear()
