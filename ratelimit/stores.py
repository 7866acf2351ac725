"""Where the counters live: Redis (`REDIS_URL` set) or the database (the embedded default).

Both stores check and count both windows of a space in one atomic step, one round trip per
request, and read the space's override (`LimitOverride`) within that budget:

- `RedisStore`: one Lua script per request (`EVALSHA`, or `EVAL` when a new or restarted
  Redis does not have it yet; sent through `core.redis_commands`). The override is cached
  in the space's hash and read by the script; on a miss (first request, after
  `OVERRIDE_CACHE_SECONDS`, or after a change in the back office dropped it) one indexed
  database query and a second script call refresh it.
- `DatabaseStore`: one `INSERT ... ON CONFLICT DO UPDATE ... RETURNING` statement on the
  space's `Counter` row, with the override read by sub-selects in the same statement. The
  database serialises it on the row (PostgreSQL row lock; SQLite's single writer), so every
  process and thread sees exact counts. On PostgreSQL the rows are in the service's
  database; on SQLite in a file of their own beside it (ratelimit.sqlite_counters), so that
  a count never waits for the service's write lock.

Time comes from the caller (`now_ms`), never from the store's clock, so that tests control
it and both stores agree. A store that cannot answer raises `StoreUnavailable`.
"""

import functools
import logging
import sqlite3
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections

from core.redis_commands import Script, shared
from ratelimit import sqlite_counters
from ratelimit.models import Counter, KeyCounter, LimitOverride
from ratelimit.windows import DAY, MINUTE, Outcome, Window

logger = logging.getLogger("service.ratelimit")

#: How long the Redis store trusts its cached copy of a space's override.
OVERRIDE_CACHE_SECONDS = 60


class StoreUnavailable(Exception):
    """The store could not be reached or answered with an error."""


def get_store() -> "RedisStore | DatabaseStore":
    if settings.REDIS_URL:
        return _redis_store(settings.REDIS_URL, settings.RATELIMIT_STORE_TIMEOUT)
    return DatabaseStore()


def default_limits() -> tuple[int, int]:
    return settings.RATELIMIT_PER_MINUTE, settings.RATELIMIT_PER_DAY


def _windows(now_ms: int, minute: tuple, day: tuple) -> tuple[Window, Window]:
    """Both windows from `(limit, start_ms, count)` as a store holds them."""
    return (
        Window.at(now_ms, seconds=MINUTE, limit=minute[0], start_ms=minute[1], count=minute[2]),
        Window.at(now_ms, seconds=DAY, limit=day[0], start_ms=day[1], count=day[2]),
    )


# --- Redis ------------------------------------------------------------------------------

# KEYS[1]: the space's hash. ARGV: now, default per-minute and per-day limits, the window
# lengths and the override cache lifetime (all milliseconds), then optionally the override to
# cache (per minute, per day; '' = the default). Returns {-1} when the cached override is
# missing or stale and none was passed, else {counted (1/0), minute
# limit, minute start, minute count, day limit, day start, day count}. Hash fields: ms/mc and
# ds/dc = start and count of the minute and day windows, om/od/oa = the cached override and
# when it was cached.
LUA = """
local key = KEYS[1]
local now = tonumber(ARGV[1])
local minute_ms, day_ms, cache_ms = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local extra = 7
local h = redis.call('HMGET', key, 'ms', 'mc', 'ds', 'dc', 'om', 'od', 'oa')
local om, od = h[5], h[6]
if ARGV[extra] then
  om, od = ARGV[extra], ARGV[extra + 1]
  redis.call('HSET', key, 'om', om, 'od', od, 'oa', now)
  if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, cache_ms) end
elseif not h[7] or math.abs(now - tonumber(h[7])) >= cache_ms then
  return {-1}
end
local mlimit = tonumber(om) or tonumber(ARGV[2])
local dlimit = tonumber(od) or tonumber(ARGV[3])
local function window(start, count, length)
  start = tonumber(start)
  if not start or start + length <= now then return now, 0, -1 end
  return start, tonumber(count) or 0, start
end
local ms, mc, mseen = window(h[1], h[2], minute_ms)
local ds, dc, dseen = window(h[3], h[4], day_ms)
if mc < mlimit and dc < dlimit then
  mc, dc = mc + 1, dc + 1
  redis.call('HSET', key, 'ms', ms, 'mc', mc, 'ds', ds, 'dc', dc)
  redis.call('PEXPIRE', key, ds + day_ms - now + cache_ms)
  return {1, mlimit, ms, mc, dlimit, ds, dc}
end
return {0, mlimit, mseen, mc, dlimit, dseen, dc}
"""
_SCRIPT = Script(LUA)


@functools.cache
def _redis_store(url: str, timeout: float) -> "RedisStore":
    return RedisStore(url, timeout)


class RedisStore:
    name = "redis"

    def __init__(self, url: str, timeout: float):
        self.url = url
        # A short timeout and no retries: a dead Redis costs one timeout, never a hang, and a
        # script that ran but whose answer was lost is never run twice. The pool replaces a
        # connection Redis closed (a restart) by itself.
        self.commands = shared(url, timeout)

    def script(self, keys: list[str], args: list) -> list[int]:
        return self.commands.script(_SCRIPT, keys, args)

    @staticmethod
    def key(space_id: str) -> str:
        return f"ratelimit:{space_id}"

    def hit(self, space_id: str, now_ms: int) -> Outcome:
        """Count one request of the space."""
        return self.start_hit(space_id, now_ms)()

    def start_hit(self, space_id: str, now_ms: int) -> Callable[[], Outcome]:
        """`hit`, its answer read later: sends the count and returns the function that reads
        its outcome (or raises as `hit` does)."""
        keys = [self.key(space_id)]
        args = [now_ms, *default_limits(), MINUTE * 1000, DAY * 1000, OVERRIDE_CACHE_SECONDS * 1000]
        with _unavailable_on(redis.RedisError):
            reply = self.commands.send_script(_SCRIPT, keys, args)

        def outcome() -> Outcome:
            with _unavailable_on(redis.RedisError):
                result = reply.read()
                if result[0] == -1:
                    override = _override(space_id)
                    result = self.script(keys=keys, args=[*args, *("" if v is None else v for v in override)])
            counted, *state = result
            minute, day = _windows(now_ms, state[0:3], state[3:6])
            return Outcome(allowed=counted == 1, minute=minute, day=day)

        return outcome

    def hit_key(self, key: str, now_ms: int, limits: tuple[int, int]) -> Outcome:
        """Count one request of a key that is not a space, against the caller's limits: the
        same script, given an empty override so that it never asks the database."""
        args = [now_ms, *limits, MINUTE * 1000, DAY * 1000, OVERRIDE_CACHE_SECONDS * 1000, "", ""]
        with _unavailable_on(redis.RedisError):
            counted, *state = self.script(keys=[f"ratelimit:key:{key}"], args=args)
        minute, day = _windows(now_ms, state[0:3], state[3:6])
        return Outcome(allowed=counted == 1, minute=minute, day=day)

    def peek(self, space_id: str, now_ms: int, limits: tuple[int, int]) -> tuple[Window, Window]:
        with _unavailable_on(redis.RedisError):
            stored = self.commands.run("HMGET", self.key(space_id), "ms", "mc", "ds", "dc")
        ms, mc, ds, dc = (None if value is None else int(value) for value in stored)
        return _windows(now_ms, (limits[0], ms, mc), (limits[1], ds, dc))

    def reset(self, space_id: str) -> None:
        with _unavailable_on(redis.RedisError):
            self.commands.run("DEL", self.key(space_id))

    def forget_override(self, space_id: str) -> None:
        with _unavailable_on(redis.RedisError):
            self.commands.run("HDEL", self.key(space_id), "om", "od", "oa")


# --- Database (embedded) ----------------------------------------------------------------


@functools.cache
def _upsert_sql(asynchronous: bool, keyed: bool = False) -> str:
    """The statement of a space's counters, or (`keyed`) of a `KeyCounter`, whose limits are
    the caller's and never overridden."""
    q = connection.ops.quote_name
    counter, override = _table(KeyCounter if keyed else Counter), _table(LimitOverride)
    key_column = q("key") if keyed else "space_id"
    new = "excluded"  # the row the INSERT proposed: now and the current limits

    def used(window: str, length_ms: int) -> str:
        # Requests counted in the window if it is still open at `now`, else 0.
        return (f"CASE WHEN {counter}.{window}_start + {length_ms} > {new}.{window}_start "
                f"THEN {counter}.{window}_count ELSE 0 END")

    minute_used, day_used = used("minute", MINUTE * 1000), used("day", DAY * 1000)
    ok = f"({minute_used} < {new}.minute_limit AND {day_used} < {new}.day_limit)"

    def assign(window: str, window_used: str) -> str:
        return (f"{window}_start = CASE WHEN {ok} AND {window_used} = 0 THEN {new}.{window}_start "
                f"ELSE {counter}.{window}_start END, "
                f"{window}_count = CASE WHEN {ok} THEN {window_used} + 1 ELSE {counter}.{window}_count END")

    def limit(column: str) -> str:
        if keyed:
            return f"%({column})s"
        # A parameter of its own: with server-side binding PostgreSQL deduces one type per
        # parameter, and `space` is text in the VALUES but varchar here.
        return f"COALESCE((SELECT {column} FROM {override} WHERE space_id = %(override_space)s), %({column})s)"

    row = f"%(space)s, TRUE, {limit('per_minute')}, %(now)s, 1, {limit('per_day')}, %(now)s, 1"
    if asynchronous:
        # The counter's commit does not wait for the WAL to reach the disk (a disk flush on
        # every request): PostgreSQL's `synchronous_commit` off for this statement's
        # own transaction only (autocommit; inside a caller's transaction the plain statement
        # runs). A crash of the database server may forget the last counts (it never corrupts
        # anything); every other write of the service stays synchronous.
        values = f"SELECT {row} FROM (SELECT set_config('synchronous_commit', 'off', true)) AS asynchronous_commit"
    else:
        values = f"VALUES ({row})"
    return (
        f"INSERT INTO {counter} "
        f"({key_column}, last_counted, minute_limit, minute_start, minute_count, day_limit, day_start, day_count) "
        f"{values} "
        f"ON CONFLICT ({key_column}) DO UPDATE SET "
        f"last_counted = {ok}, minute_limit = {new}.minute_limit, day_limit = {new}.day_limit, "
        f"{assign('minute', minute_used)}, {assign('day', day_used)} "
        "RETURNING last_counted, minute_limit, minute_start, minute_count, day_limit, day_start, day_count"
    )


class DatabaseStore:
    name = "database"

    def hit(self, space_id: str, now_ms: int) -> Outcome:
        return self._upsert(space_id, now_ms, default_limits(), keyed=False)

    def start_hit(self, space_id: str, now_ms: int) -> Callable[[], Outcome]:
        """`hit`, counted now (the statement is the request's to wait for either way)."""
        outcome = self.hit(space_id, now_ms)
        return lambda: outcome

    def hit_key(self, key: str, now_ms: int, limits: tuple[int, int]) -> Outcome:
        return self._upsert(key, now_ms, limits, keyed=True)

    @staticmethod
    def _upsert(key: str, now_ms: int, limits: tuple[int, int], *, keyed: bool) -> Outcome:
        params = {"space": key, "override_space": key, "now": now_ms, "per_minute": limits[0], "per_day": limits[1]}
        db = connections[DEFAULT_DB_ALIAS]  # looked up once: each `connection.x` is a lookup and a caught AttributeError
        asynchronous = db.vendor == "postgresql" and not db.in_atomic_block
        with _unavailable_on(DatabaseError, sqlite3.Error):
            (counted, *state), = _counters(_upsert_sql(asynchronous, keyed), params)
        minute, day = _windows(now_ms, state[0:3], state[3:6])
        return Outcome(allowed=bool(counted), minute=minute, day=day)

    def peek(self, space_id: str, now_ms: int, limits: tuple[int, int]) -> tuple[Window, Window]:
        with _unavailable_on(DatabaseError, sqlite3.Error):
            sql = f"SELECT minute_start, minute_count, day_start, day_count FROM {_table(Counter)} WHERE space_id = %s"
            row = next(iter(_counters(sql, [space_id])), (None, None, None, None))
        return _windows(now_ms, (limits[0], *row[0:2]), (limits[1], *row[2:4]))

    def reset(self, space_id: str) -> None:
        with _unavailable_on(DatabaseError, sqlite3.Error):
            _counters(f"DELETE FROM {_table(Counter)} WHERE space_id = %s RETURNING 1", [space_id])

    def forget_override(self, space_id: str) -> None:
        """Nothing cached: the upsert reads the override every time."""


def _table(model) -> str:
    """A table as the embedded store's statements name it: qualified on SQLite, where they
    run on the counters' own database (ratelimit.sqlite_counters)."""
    if connection.vendor == "sqlite":
        return sqlite_counters.table(model)
    return connection.ops.quote_name(model._meta.db_table)


def _counters(sql: str, params: list | dict) -> list[tuple]:
    """The rows of a statement on the embedded store's counters (every statement returns
    rows: `RETURNING` for the writes), in their own file on SQLite
    (ratelimit.sqlite_counters), in the service's database elsewhere."""
    db = connections[DEFAULT_DB_ALIAS]  # looked up once: each `connection.x` is a lookup and a caught AttributeError
    if db.vendor == "sqlite":
        return sqlite_counters.execute(sql, params)
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def purge_counters(before_ms: int) -> int:
    """Delete the embedded store's counters (spaces' and keys') whose day window opened at or
    before `before_ms`, i.e. has ended (Redis expires its own); returns how many. On
    PostgreSQL a space's row also goes with the space (a foreign key); on SQLite, whose
    counters' file has none, a deleted space's row goes here, a day later."""
    return sum(
        len(_counters(f"DELETE FROM {_table(model)} WHERE day_start <= %s RETURNING 1", [before_ms]))
        for model in (Counter, KeyCounter)
    )


def _override(space_id: str) -> tuple[int | None, int | None]:
    return LimitOverride.objects.filter(space_id=space_id).values_list("per_minute", "per_day").first() or (None, None)


class _unavailable_on:
    """Turn the store's own errors into `StoreUnavailable` (logged once, here)."""

    def __init__(self, *errors: type[Exception]):
        self.errors = errors

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is not None and isinstance(exc, self.errors):
            logger.warning("rate-limit store unavailable: %s", exc)
            raise StoreUnavailable(str(exc)) from exc
        return False
