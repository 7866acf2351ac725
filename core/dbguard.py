"""A deadline for the database work of one request.

The server-side bounds (statement_timeout, lock_timeout) end a slow query, and libpq's
connect_timeout a connection attempt, but nothing ends a query sent to a server that has
stopped answering altogether (a frozen process, a lost network path: the kernel still
acknowledges the bytes, so TCP timeouts never fire). `RequestDeadline` does: when a request
is still running after its deadline, the sockets of the PostgreSQL connections it uses are
shut down, which makes the waiting query fail at once (OperationalError, answered as 503
SERVICE_UNAVAILABLE), and the connection is closed when the request ends, so that the pool
discards it. One watchdog thread per process (core.watchdog; a greenlet under gevent) keeps
every request's deadline, so it fires while the request waits on the database, and no timer
is started per request. The pool's wait for a free connection is bounded by what is left of
the deadline too (`remaining`, core.postgresql).
"""

import logging
import os
import socket
import threading
import time

from django.db import connections
from django.db.backends.signals import connection_created

from core.watchdog import Watchdog

logger = logging.getLogger("service.database")

_local = threading.local()  # per thread, or per greenlet under gevent
_watchdog = Watchdog("request-deadlines")

#: Set by config/wsgi.py in the WSGI environ of a request that found no free request slot
#: within its deadline; the request middleware answers it 503 before anything touches the
#: database.
NO_SLOT = "service.no_slot"
#: Set by config/wsgi.py to the VALIDATION_ERROR message of a request whose body it refused
#: (too large, or not received within REQUEST_BODY_TIMEOUT): answered 400 without a slot.
REFUSED = "service.refused"


def _watch(sender, connection, **kwargs) -> None:
    watched = getattr(_local, "watched", None)
    if watched is not None and connection.vendor == "postgresql":
        watched.append(connection)


connection_created.connect(_watch, dispatch_uid="core.dbguard")


def remaining() -> float | None:
    """Seconds left to the current request's deadline (at least 0); None outside one."""
    deadline = getattr(_local, "deadline", None)
    return None if deadline is None else deadline.remaining()


class RequestDeadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.watched: list = []
        self.expired = False
        self.done = False  # the watchdog's mark of a deadline that ended in time
        self.at = time.monotonic() + seconds if seconds > 0 else None

    def remaining(self) -> float | None:
        """Seconds left (at least 0); None without a deadline."""
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def __enter__(self) -> "RequestDeadline":
        if self.at is not None:
            _local.watched, _local.deadline = self.watched, self
            # Connections this thread keeps open from an earlier request count too.
            self.watched.extend(db for db in connections.all(initialized_only=True)
                                if db.vendor == "postgresql" and db.connection is not None)
            _watchdog.watch(self)
        return self

    def __exit__(self, *exc) -> None:
        if self.at is not None:
            _watchdog.forget(self)
        _local.watched = _local.deadline = None
        if self.expired:
            # A connection cut while idle still looks healthy to psycopg: closed here, it is
            # discarded when Django gives it back to the pool instead of failing the next
            # request (core.postgresql would catch it too).
            for db in self.watched:
                if db.connection is not None and not db.connection.closed:
                    db.connection.close()

    def expire(self) -> None:
        """From the watchdog's thread, when the deadline passes before the request ends."""
        self.expired = True
        for db in list(self.watched):
            raw = db.connection
            if raw is None or raw.closed:
                continue
            try:
                # A duplicate of the descriptor: shutdown acts on the socket itself and wakes
                # the blocked read; closing the duplicate leaves libpq's descriptor alone.
                with socket.socket(fileno=os.dup(raw.pgconn.socket)) as sock:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                continue
            logger.warning("database work of a request cut off at its deadline", extra={"seconds": self.seconds})
