"""Django's SQLite backend with the connections kept open: each process lends its own idle
connections to its requests instead of opening a new one for each (settings.DATABASES sets
ENGINE to this package for SQLite).

Django opens a connection when a request first touches the database and closes it when the
request ends (CONN_MAX_AGE = 0; under gevent a kept connection would belong to a client
connection's greenlet, and die with it). For SQLite that open was the largest part of a
small read: the file opened again, Django's functions registered, the PRAGMAs run, and the
schema read and parsed by the first statement. Here a closed connection is given back
to its process's idle list, rolled back if a transaction was left open, and the next
request takes it as it is, schema and page cache warm.

It also keeps the database file open for as long as the process runs: when the last
connection to a WAL database closes, SQLite checkpoints the WAL into the file and deletes
it, waiting on the disk twice; with one request at a time per process, every request that
wrote (the rate-limit counter writes on each) would pay it. The WAL is now
checkpointed by `manage.py runjobs` instead (core/sqlite/checkpoints.py), or by SQLite's
automatic checkpoint past `checkpoints.BACKSTOP_PAGES` pages when no `runjobs` runs.
Durability is unchanged: `journal_mode=WAL` and `synchronous=NORMAL` (config/settings.py),
so a commit is safe from a crash of the process, and the latest commits may be lost (never
corrupted) when the machine itself loses power (docs/rate-limits.md).

An in-memory database (the test suite's) is never closed by Django and not pooled. A forked
child never takes its parent's connections (the idle lists are per process id).

Its connections wait for the write lock in Python, not in SQLite. With a busy timeout SQLite
sleeps between tries, blocking the whole process for 1, 2, 5, 10, 15 ms and more, however
soon the lock is free: concurrent writers sleep while the lock is free. Here SQLite's own
timeout is 0, and a statement that finds the database locked outside a transaction (BEGIN,
or a write in autocommit: nothing done yet, so safe to run again; `executemany` outside a
transaction runs in one of its own) is tried again after sleeping steps from 0.1 to 0.5 ms,
until the `timeout` of the settings has passed. The first 5 ms of waiting sleep in the
operating system (core/unpatched.py), the rest in gevent's loop, which lets the process's
other greenlets run meanwhile: gevent's timers wake at best a millisecond later, far longer
than a write holds the lock, and a web process on SQLite runs one request at a time.
"""

import os
import sqlite3
import threading
import time

from django.db.backends.sqlite3 import base

from core import unpatched
from core.sqlite import checkpoints

#: Idle connections kept per process and file; more are closed when given back. A web
#: process runs one request at a time on SQLite; `runjobs` has a loop and its sender threads.
MAX_IDLE = 8

_idle: dict[tuple[int, str], list] = {}  # (process id, database file) -> idle connections
_lock = threading.Lock()


def _key(database: str) -> tuple[int, str]:
    return os.getpid(), str(database)


def take_idle(database: str) -> "Connection | None":
    """One of this process's idle connections to `database`, or None."""
    with _lock:
        idle = _idle.get(_key(database))
        return idle.pop() if idle else None


def give_back(database: str, raw: "Connection") -> None:
    """Keep `raw` (out of any transaction) idle for this process's next use of `database`,
    or close it when MAX_IDLE are kept already."""
    if raw.in_transaction:
        raw.rollback()
    with _lock:
        idle = _idle.setdefault(_key(database), [])
        if len(idle) < MAX_IDLE:
            idle.append(raw)
            return
    raw.close()


#: The first and the longest sleep between two tries for the write lock, and how long
#: the sleeps block the process before they go through gevent's loop (above).
FIRST_WAIT_SECONDS = 0.0001
LONGEST_WAIT_SECONDS = 0.0005
BLOCKING_WAIT_SECONDS = 0.005


class Connection(sqlite3.Connection):
    lock_timeout = 5.0  # seconds a statement may wait for the write lock (the settings' `timeout`)


class CursorWrapper(base.SQLiteCursorWrapper):
    def execute(self, query, params=None):
        if self.connection.in_transaction:
            return super().execute(query, params)
        return when_unlocked(self.connection, super().execute, query, params)

    def executemany(self, query, param_list):
        raw = self.connection
        if raw.in_transaction:
            return super().executemany(query, param_list)
        # In autocommit each row would commit by itself, and trying again after a row found
        # the lock taken would write the rows before it twice: all of them in one
        # transaction instead, begun once the write lock is free.
        when_unlocked(raw, raw.execute, "BEGIN IMMEDIATE")
        try:
            result = super().executemany(query, param_list)
        except BaseException:
            raw.rollback()
            raise
        raw.commit()
        return result


def _locked(exc: sqlite3.OperationalError) -> bool:
    return exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY


def when_unlocked(raw: Connection, run, *args):
    """`run(*args)`, tried again while it finds the database locked, for `raw.lock_timeout`."""
    try:
        return run(*args)
    except sqlite3.OperationalError as exc:
        if not _locked(exc):
            raise
    started = time.monotonic()
    deadline = started + raw.lock_timeout
    wait = FIRST_WAIT_SECONDS
    while True:
        if time.monotonic() - started < BLOCKING_WAIT_SECONDS:
            unpatched.sleep(wait)
        else:
            time.sleep(wait)
        try:
            return run(*args)
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() >= deadline:
                raise
        wait = min(wait * 2, LONGEST_WAIT_SECONDS)


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self):
        params = super().get_connection_params()
        params["factory"] = Connection
        return params

    def create_cursor(self, name=None):
        return self.connection.cursor(factory=CursorWrapper)

    def get_new_connection(self, conn_params):
        if not self.is_in_memory_db():
            raw = take_idle(conn_params["database"])
            if raw is not None:
                return raw
        raw = super().get_new_connection(conn_params)  # set up under SQLite's own busy timeout
        raw.lock_timeout = conn_params.get("timeout", Connection.lock_timeout)
        raw.execute("PRAGMA busy_timeout = 0")  # waits for the write lock are when_unlocked's
        raw.execute(f"PRAGMA wal_autocheckpoint = {checkpoints.BACKSTOP_PAGES}")  # runjobs checkpoints
        return raw

    def _close(self):
        raw = self.connection
        if raw is None or self.is_in_memory_db():
            return super()._close()
        with self.wrap_database_errors:
            give_back(self.settings_dict["NAME"], raw)


def idle_connections(database: str) -> int:
    """How many connections this process keeps idle for `database` (for tests)."""
    with _lock:
        return len(_idle.get(_key(database), []))
