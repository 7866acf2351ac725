"""Django's PostgreSQL backend with a connection pool that heals at once and lends only
live connections (settings.DATABASES sets ENGINE to this package for PostgreSQL).

psycopg_pool, as Django makes it, has three habits that turn a short fault into a long one:
- while the server is down it retries connecting with a doubling back-off (1, 2, 4, 8...
  seconds), so that after a long outage a process goes on answering 503 for seconds after
  the server is back. Here it retries every quarter of a second: the server is used
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

Also: migrations make no `_like` pattern index (core/postgresql/schema.py).
"""

import select
import time

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base
from psycopg.pq import TransactionStatus
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


class DatabaseWrapper(base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor

    @property
    def pool(self):
        options = self.settings_dict["OPTIONS"].get("pool")
        if options and self.alias != base.NO_DB_ALIAS and self.alias not in self._connection_pools:
            # As Django makes its pool (base.DatabaseWrapper.pool), of the class above.
            pool = ServicePool(
                kwargs={**self.get_connection_params(), "autocommit": True},
                open=False,
                configure=self._configure_connection,
                **({} if options is True else options),
            )
            self._connection_pools.setdefault(self.alias, pool)
        return super().pool
