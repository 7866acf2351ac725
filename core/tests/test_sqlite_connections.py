"""SQLite connections kept open per process and lent to each request (core/sqlite/base.py)."""

import threading
import time

import pytest
from django.db import IntegrityError, OperationalError

from core import unpatched
from core.sqlite import base, checkpoints


def wrapper(path, alias="kept"):
    return base.DatabaseWrapper({
        "ENGINE": "core.sqlite", "NAME": str(path), "USER": "", "PASSWORD": "", "HOST": "", "PORT": "",
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"},
        "TIME_ZONE": None, "CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": False, "AUTOCOMMIT": True,
        "ATOMIC_REQUESTS": False, "TEST": {},
    }, alias)


@pytest.fixture
def database(tmp_path, django_db_blocker):
    """A database file of its own (not the suite's database: no `db` fixture needed)."""
    path = tmp_path / "kept.sqlite3"
    with django_db_blocker.unblock():
        yield path
        while base.idle_connections(str(path)):  # close what the tests left idle
            db = wrapper(path)
            db.ensure_connection()
            db.connection.close()
            db.connection = None


def test_a_closed_connection_is_lent_to_the_next_request_as_it_is(database):
    first = wrapper(database)
    first.ensure_connection()
    raw = first.connection
    first.close()
    assert first.connection is None and base.idle_connections(str(database)) == 1

    second = wrapper(database)
    second.ensure_connection()
    assert second.connection is raw and base.idle_connections(str(database)) == 0
    with second.cursor() as cursor:  # still in autocommit, with the PRAGMAs of its first opening
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone() == ("wal",)
        cursor.execute("PRAGMA foreign_keys")
        assert cursor.fetchone() == (1,)
    assert second.get_autocommit()
    second.close()


def test_a_transaction_left_open_is_rolled_back_before_the_connection_is_lent_again(database):
    db = wrapper(database)
    with db.cursor() as cursor:
        cursor.execute("CREATE TABLE t (n INTEGER)")
    db.connection.execute("BEGIN")
    db.connection.execute("INSERT INTO t VALUES (1)")
    db.close()

    again = wrapper(database)
    with again.cursor() as cursor:
        assert not again.connection.in_transaction
        cursor.execute("SELECT count(*) FROM t")
        assert cursor.fetchone() == (0,)
    again.close()


def test_at_most_max_idle_connections_are_kept(database):
    many = [wrapper(database, f"kept{n}") for n in range(base.MAX_IDLE + 3)]
    for db in many:
        db.ensure_connection()
    raws = [db.connection for db in many]
    assert len({id(raw) for raw in raws}) == len(many)
    for db in many:
        db.close()
    assert base.idle_connections(str(database)) == base.MAX_IDLE
    with pytest.raises(Exception, match="closed"):  # the ones over the cap are closed
        raws[-1].execute("SELECT 1")


def test_another_process_opens_its_own(database, monkeypatch):
    db = wrapper(database)
    db.ensure_connection()
    raw = db.connection
    db.close()
    monkeypatch.setattr(base.os, "getpid", lambda: -1)  # a forked child
    child = wrapper(database)
    child.ensure_connection()
    assert child.connection is not raw
    child.connection.close()
    child.connection = None
    monkeypatch.undo()
    assert base.idle_connections(str(database)) == 1


def test_a_statement_waits_for_the_write_lock_in_python_and_runs_once_it_is_free(database):
    """SQLite's own busy timeout is 0 (its waits sleep the whole process, in growing steps);
    the cursor tries again itself, BEGIN and writes in autocommit alike."""
    holder, waiter = wrapper(database, "holder"), wrapper(database, "waiter")
    with holder.cursor() as cursor:
        cursor.execute("CREATE TABLE t (n INTEGER)")
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone() == (0,)
    holder.connection.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, holder.connection.commit).start()
    started = time.monotonic()
    with waiter.cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (1)")  # autocommit: waits, then runs once
    assert time.monotonic() - started >= 0.25

    holder.connection.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, holder.connection.commit).start()
    with waiter.cursor() as cursor:
        cursor.execute("BEGIN IMMEDIATE")  # as transaction.atomic() begins (settings: transaction_mode)
        cursor.execute("INSERT INTO t VALUES (2)")
        cursor.execute("COMMIT")
        cursor.execute("SELECT n FROM t ORDER BY n")
        assert cursor.fetchall() == [(1,), (2,)]
    holder.close()
    waiter.close()


def test_short_waits_for_the_write_lock_block_and_long_ones_go_through_time_sleep(database, monkeypatch):
    """Under gevent `time.sleep` is gevent's, whose timers wake a millisecond late at best:
    the first BLOCKING_WAIT_SECONDS of waiting sleep in the operating system instead, and
    only a longer wait goes through `time.sleep` (gevent's loop), letting other greenlets run."""
    holder, waiter = wrapper(database, "holder"), wrapper(database, "waiter")
    with holder.cursor() as cursor:
        cursor.execute("CREATE TABLE t (n INTEGER)")
    waiter.connect()
    blocking, cooperative = [], []
    os_sleep = unpatched.sleep

    def sleeper(kind, commit_at):
        def sleep(seconds):
            kind.append(seconds)
            os_sleep(seconds)
            if len(kind) == commit_at:
                holder.connection.commit()  # the lock is free for the next try
        return sleep

    holder.connection.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(unpatched, "sleep", sleeper(blocking, commit_at=1))
    monkeypatch.setattr(time, "sleep", sleeper(cooperative, commit_at=0))
    with waiter.cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (1)")
    assert blocking == [base.FIRST_WAIT_SECONDS]
    assert cooperative == []

    blocking.clear()
    holder.connection.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(unpatched, "sleep", sleeper(blocking, commit_at=0))
    monkeypatch.setattr(time, "sleep", sleeper(cooperative, commit_at=3))
    started = time.monotonic()
    with waiter.cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (2)")
    assert time.monotonic() - started >= base.BLOCKING_WAIT_SECONDS
    assert blocking[0] == base.FIRST_WAIT_SECONDS
    assert len(cooperative) == 3 and max(cooperative) <= base.LONGEST_WAIT_SECONDS
    with waiter.cursor() as cursor:
        cursor.execute("SELECT n FROM t ORDER BY n")
        assert cursor.fetchall() == [(1,), (2,)]
    holder.close()
    waiter.close()


def test_a_statement_gives_up_on_the_write_lock_after_the_settings_timeout(database):
    holder = wrapper(database, "holder")
    with holder.cursor() as cursor:
        cursor.execute("CREATE TABLE t (n INTEGER)")
    waiter = wrapper(database, "waiter")
    waiter.settings_dict["OPTIONS"]["timeout"] = 0.3
    waiter.connect()
    holder.connection.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(OperationalError, match="database is locked"), waiter.cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (1)")
    assert 0.3 <= time.monotonic() - started < 3
    holder.connection.rollback()
    with waiter.cursor() as cursor:  # nothing was written
        cursor.execute("SELECT count(*) FROM t")
        assert cursor.fetchone() == (0,)
    holder.close()
    waiter.close()


def test_runjobs_checkpoints_the_wal_and_starts_it_over_so_that_commits_do_not(database):
    """The service's connections checkpoint by themselves only past the backstop; the
    checkpointer copies the WAL and, past RESTART_FRAMES, makes the next write start it
    again from its first frame."""
    db = wrapper(database)
    with db.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        assert cursor.fetchone() == (checkpoints.BACKSTOP_PAGES,)
        cursor.execute("CREATE TABLE t (n INTEGER, filler TEXT)")
        for n in range(checkpoints.RESTART_FRAMES + 100):  # a commit, one frame or more, each
            cursor.execute("INSERT INTO t VALUES (%s, %s)", [n, "x" * 3000])
    busy, frames, copied = checkpoints.checkpoint(db)
    assert busy == 0 and frames == copied >= checkpoints.RESTART_FRAMES
    with db.cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (-1, '')")
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
        assert cursor.fetchone()[1] < 10  # the WAL started over
        cursor.execute("SELECT count(*) FROM t")
        assert cursor.fetchone() == (checkpoints.RESTART_FRAMES + 101,)
    db.close()


def test_the_checkpointer_runs_only_beside_a_database_file(db):
    assert checkpoints.embedded_worker(threading.Event()) is None  # the suite's in-memory database


def test_executemany_outside_a_transaction_waits_for_the_lock_and_writes_every_row_once(database):
    holder, waiter = wrapper(database, "holder"), wrapper(database, "waiter")
    with holder.cursor() as cursor:
        cursor.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)")
    holder.connection.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, holder.connection.commit).start()
    with waiter.cursor() as cursor:
        cursor.executemany("INSERT INTO t VALUES (%s)", [(n,) for n in range(50)])
        assert not waiter.connection.in_transaction
        cursor.execute("SELECT count(*), count(DISTINCT n) FROM t")
        assert cursor.fetchone() == (50, 50)
        with pytest.raises(IntegrityError):  # all or none: the 51st row repeats the first
            cursor.executemany("INSERT INTO t VALUES (%s)", [(n,) for n in range(50, 100)] + [(0,)])
        assert not waiter.connection.in_transaction
        cursor.execute("SELECT count(*) FROM t")
        assert cursor.fetchone() == (50,)
    holder.close()
    waiter.close()
