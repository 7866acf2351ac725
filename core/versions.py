"""Version tokens in Redis: how a web process knows, within the rate limiter's round trip,
that what it read from the database for an earlier API request is still what the database
holds (spaces.keycache).

A token names one row a cached read depends on, so that a change makes only the reads of
that row out of date:

- `space(id)`: the space, its subscription, its API keys and its webhook endpoints (what
  the key lookup reads of them, and whether the space has an enabled endpoint);
- `user(id)`: a user (a space's owner, a key's creator: their bans; a poll's organizer:
  their name, e-mail and picture);
- `poll(id)`: a poll's row as `GET /v1/polls/{id}` reads it (its fields, status, deletion,
  participant count, the time of its last change, which options' changes move).

A key's cached read names its space, its space's owner and its creator, and what its rider
read names more (a poll and its organizer: `core.rows.Rider.versions`).

A change sets its tokens to new random values (`bump`) as it is made, and again after its
commit; the limiter's script compares the tokens a cached read was made with to the current
ones before counting the request (ratelimit.stores). Random, never counted up: a Redis that
lost its data (a restart without persistence) gives back no value, and a counter starting
again from zero could meet an old value of a cached read made before.

Model saves and deletions of the models above bump by themselves (`bump_on_save`, connected
by each app's `ready`); every `QuerySet.update()`, `bulk_update()` and `delete()` of them,
which send no signals, calls `bump` itself or says why it need not
(tests/test_read_cache.py checks the source for it). A bump that fails (Redis unreachable)
is logged and counted (`service_version_bump_errors_total`): a cached read lives
`READ_CACHE_SECONDS` at most, whatever happens, and so does a change made behind the
models' back (SQL typed into the database).
"""

import logging
import secrets
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from core import metrics
from core.redis_commands import Script, shared

logger = logging.getLogger("service.versions")

#: How long a token lives in Redis: far longer than a cached read (READ_CACHE_SECONDS), so
#: that a read made after a change always finds the token that change set.
TOKEN_SECONDS = 86400


@dataclass(frozen=True)
class Versions:
    """Tokens by name, as a cached read was made with them."""

    names: tuple[str, ...]
    tokens: tuple[str, ...]


class Stale(Exception):
    """A token differs from the one a cached read was made with (the rate limiter counted
    nothing). `current`: the same names with their values now, read before anything the
    caller reads next."""

    def __init__(self, current: Versions):
        super().__init__("a cached read is out of date")
        self.current = current


def space(space_id: str) -> str:
    return f"version:space:{space_id}"


def user(user_id) -> str:
    return f"version:user:{user_id}"


def poll(poll_id: str) -> str:
    return f"version:poll:{poll_id}"


def enabled() -> bool:
    """Whether API requests may use cached reads: Redis is the rate-limit store (the tokens
    are read in its round trip) and READ_CACHE_SECONDS is not 0."""
    return bool(settings.REDIS_URL) and settings.READ_CACHE_SECONDS > 0


def bump(*names: str) -> None:
    """Give these tokens new values now, and again once the current transaction commits
    (inside one). The first makes every read that starts after the commit see the change,
    even in the moment before the commit's callbacks run, and a read inside the same
    transaction too (the tests, which roll every change back, read through the API within
    it); the second replaces the values that a read in between, which saw the rows as they
    were, was kept with. The price: one Redis round trip while the transaction holds its
    locks. Without Redis nothing reads them."""
    if not settings.REDIS_URL or not names:
        return
    _set(names)
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: _set(names), robust=True)


def bump_on_save(model, names, *, unless_only: frozenset = frozenset(), deletes: bool = True) -> None:
    """Bump the tokens `names(instance)` gives whenever an instance of `model` is saved or
    (`deletes`) deleted through the ORM; not for a save of the fields `unless_only` alone (a
    user's `last_login`). A receiver of deletions makes Django load each row a cascade
    deletes, to send it: `deletes=False` for a model whose deletions bump otherwise."""

    def saved(sender, instance, update_fields=None, **kwargs):
        if not (update_fields and unless_only.issuperset(update_fields)):
            bump(*names(instance))

    def deleted(sender, instance, **kwargs):
        bump(*names(instance))

    uid = f"core.versions.{model._meta.label}"
    post_save.connect(saved, sender=model, weak=False, dispatch_uid=uid)
    if deletes:
        post_delete.connect(deleted, sender=model, weak=False, dispatch_uid=uid)


# SET each KEYS[i] to ARGV[i], expiring after ARGV[#KEYS + 1] seconds: one round trip.
_SET = Script("""
for i, name in ipairs(KEYS) do redis.call('SET', name, ARGV[i], 'EX', ARGV[#KEYS + 1]) end
return #KEYS
""")


def _set(names: tuple[str, ...]) -> None:
    tokens = [secrets.token_hex(8) for _ in names]
    try:
        shared(settings.REDIS_URL, settings.RATELIMIT_STORE_TIMEOUT).script(_SET, names, [*tokens, TOKEN_SECONDS])
    except redis.RedisError as exc:
        metrics.version_bump_failed()
        logger.warning("version tokens not bumped (cached reads live READ_CACHE_SECONDS at most): %s %s", names, exc)


