"""Django's PostgreSQL backend with a connection pool that heals at once and lends only
live connections (settings.DATABASES sets ENGINE to this package for PostgreSQL).

psycopg_pool, as Django makes it, has three habits that turn a short fault into a long one:
- while the server is down it retries connecting with a doubling back-off (1, 2, 4, 8...
  seconds), so that after an outage of 17 s a process went on answering 503 for 9 s
  after the server was back. Here it retries every quarter of a second: the server is used
  within a second of being ready, for one refused connection attempt (or one connect
  timeout, if the server hangs) per process every quarter of a second while it is down.
- it lends a pooled connection without looking at it, unless asked to run a query first
  (CONN_HEALTH_CHECKS), which on a frozen server would hang outside any deadline. Here each
  lend looks without a round trip: an idle connection has nothing to read unless the
  server (or something between) closed it or sent a termination notice, and a connection
  whose socket core.dbguard shut at a request's deadline reads as closed too. A connection
  idle for DB_POOL_CHECK_IDLE_SECONDS or more, long enough for a peer to have vanished
  without a word (a failover, a firewall that forgot the flow), must also answer an empty
  query within CHECK_TIMEOUT. A connection that fails is discarded and the next one tried.
- its wait for a free connection (the pool's `timeout`) does not know the request's
  deadline. Here it never outlasts what is left of it (core.dbguard.remaining).

In a gevent worker (config/gunicorn.py) psycopg waits for the server through gevent's
emulation of `poll` (a `Timeout` and an `Event` in Python per wait); here it waits on
gevent's hub itself (`wait_on_hub`).

Also: `timestamptz` values are read by psycopg's own loader (`UtcTimestamptzLoader`), and
migrations make no `_like` pattern index (core/postgresql/schema.py).
"""

import select
import time
from datetime import UTC

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base
from gevent.monkey import is_module_patched
from gevent.socket import wait_read, wait_readwrite, wait_write
from psycopg import waiting
from psycopg.adapt import Loader
from psycopg.pq import Format, TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout
from psycopg_pool.base import AttemptWithBackoff

from core import dbguard, unpatched
from core.postgresql.schema import DatabaseSchemaEditor

RECONNECT_DELAY = 0.25  # seconds between connection attempts while the server is down
CHECK_TIMEOUT = 1.0  # seconds a long-idle connection has to answer its check


class _SteadyRetry(AttemptWithBackoff):
    INITIAL_DELAY = RECONNECT_DELAY
    DELAY_BACKOFF = 1.0


class ServicePool(ConnectionPool):
    def _add_connection(self, attempt, growing: bool = False) -> None:
        super()._add_connection(attempt or _SteadyRetry(timeout=self.reconnect_timeout), growing=growing)

    def getconn(self, timeout: float | None = None):
        timeout = self.timeout if timeout is None else timeout
        remaining = dbguard.remaining()
        if remaining is not None:
            timeout = min(timeout, remaining)
        ends = time.monotonic() + timeout
        while True:
            left = ends - time.monotonic()
            if left <= 0:
                raise PoolTimeout(f"couldn't get a connection after {timeout:.2f} sec")
            conn = super().getconn(timeout=left)
            if self._usable(conn, ends):
                return conn
            conn.close()  # returned closed: the pool discards it and makes another
            self.putconn(conn)

    @staticmethod
    def _usable(conn, ends: float) -> bool:
        if not is_alive(conn):
            return False
        idle = time.monotonic() - getattr(conn, "_idle_since", 0.0)
        return idle < settings.DB_POOL_CHECK_IDLE_SECONDS or answers(conn, min(CHECK_TIMEOUT, ends - time.monotonic()))

    def _add_to_pool(self, conn) -> None:
        conn._idle_since = time.monotonic()
        super()._add_to_pool(conn)


def is_alive(conn) -> bool:
    """Whether an idle pooled connection still looks usable, without a round trip."""
    if conn.closed or conn.pgconn.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        # Never through gevent's select or poll, which yield to the hub even when they
        # need not wait: every other greenlet would run before the request got its connection.
        return not unpatched.readable(conn.pgconn.socket)
    except (OSError, ValueError):
        return False


def answers(conn, seconds: float) -> bool:
    """Whether the connection answers an empty query within `seconds` (psycopg's own
    calls have no client-side bound: on a vanished peer they would wait for TCP's)."""
    pgconn, ends = conn.pgconn, time.monotonic() + seconds
    try:
        pgconn.send_query(b"")
        while pgconn.flush():
            if not _ready(pgconn.socket, ends, write=True):
                return False
        pgconn.consume_input()
        while pgconn.is_busy():
            if not _ready(pgconn.socket, ends):
                return False
            pgconn.consume_input()
        while pgconn.get_result() is not None:
            pass
    except psycopg.Error:
        return False
    return pgconn.transaction_status == TransactionStatus.IDLE


def _ready(sock: int, ends: float, *, write: bool = False) -> bool:
    left = ends - time.monotonic()
    if left <= 0:
        return False
    readable, writable, _ = select.select([] if write else [sock], [sock] if write else [], [], left)
    return bool(writable if write else readable)


class _Interval(Exception):
    pass


_INTERVAL = _Interval()
_WAITS = {
    waiting.WAIT_R: (wait_read, waiting.READY_R),
    waiting.WAIT_W: (wait_write, waiting.READY_W),
    waiting.WAIT_RW: (wait_readwrite, waiting.READY_RW),
}


def wait_on_hub(gen, fileno: int, interval: float = 0.0, timeout: float | None = None):
    """psycopg's wait (`psycopg.waiting.wait_poll`'s contract: run the generator until it
    returns, waking it when the socket is ready, `_WaitTimeout` after `timeout`) on gevent's
    hub: one watcher per wait, in gevent's C, where psycopg's own choice under gevent went
    through gevent's `poll` in Python. A `SELECT 1` in a loop of four greenlets: 43-53 ->
    28-30 us of CPU (33 with psycopg's wake-ups kept). Without a `timeout` no timer is set:
    psycopg's wake-ups every `interval` seconds let a blocked thread see a signal, which a
    greenlet sees in the hub anyway, and the generators only wait again when woken with
    nothing ready (a request's deadline shuts the socket instead, core.dbguard, which wakes
    the wait). A wait for reading and writing at once wakes on either and says both, which
    psycopg's generators take as they take a spurious wake-up."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        state = next(gen)
        while True:
            wait, ready = _WAITS[state]
            if deadline is None:
                wait(fileno)
            else:
                try:
                    wait(fileno, max(0.0, min(interval, deadline - time.monotonic())), _INTERVAL)
                except _Interval:
                    ready = waiting.READY_NONE
            state = gen.send(ready)
            if deadline is not None and time.monotonic() >= deadline:
                raise psycopg.errors._WaitTimeout("wait timeout expired")
    except StopIteration as stop:
        return stop.value


if is_module_patched("select"):  # a gevent worker: psycopg chose its wait on gevent's `poll`
    waiting.wait = wait_on_hub  # what psycopg.Connection.wait calls


_PSYCOPG_TZ_LOADER = psycopg.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, Format.TEXT)


class UtcTimestamptzLoader(Loader):
    """`timestamptz` in text, read by psycopg's own loader (in C with psycopg[binary]: 0.15 µs
    a value, against 1.8 µs for Django's, which parses in Python before setting tzinfo; a
    page of 50 polls reads over a hundred). Used only where both give the same datetime:
    Django's time zone UTC, so the session's is UTC too and psycopg's loader gives UTC."""

    timezone = UTC  # what Django's create_cursor compares with its own

    def __init__(self, oid, context=None):
        super().__init__(oid, context)
        self._load = _PSYCOPG_TZ_LOADER(oid, context).load

    def load(self, data):
        return self._load(data)


class DatabaseWrapper(base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor

    def get_connection_params(self):
        pool = self._connection_pools.get(self.alias)
        if pool is not None:
            # Django's `connect` asks for the parameters on every checkout and a pooled
            # connection never uses them: they were the pool's, made once (below).
            return pool.kwargs
        params = super().get_connection_params()
        if self.timezone == UTC and "context" in params:
            # Django's adapters for this time zone (shared by its connections), with psycopg's
            # own timestamptz loader in place of Django's.
            params["context"].register_loader("timestamptz", UtcTimestamptzLoader)
        return params

    @property
    def pool(self):
        pool = self._connection_pools.get(self.alias)  # asked seven times per checkout
        if pool is not None:
            return pool
        options = self.settings_dict["OPTIONS"].get("pool")
        if options and self.alias != base.NO_DB_ALIAS:
            # As Django makes its pool (base.DatabaseWrapper.pool), of the class above.
            pool = ServicePool(
                kwargs={**self.get_connection_params(), "autocommit": True},
                open=False,
                configure=self._configure_connection,
                **({} if options is True else options),
            )
            self._connection_pools.setdefault(self.alias, pool)
        return super().pool

    def _set_autocommit(self, autocommit):
        # A pooled connection comes in autocommit, and psycopg's setter takes the
        # connection's lock and runs a wait even when nothing changes.
        if self.connection.autocommit != autocommit:
            super()._set_autocommit(autocommit)
