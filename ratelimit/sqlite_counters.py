"""The embedded store's counters on SQLite, in a database file of their own.

Every API request is counted (`ratelimit.stores.DatabaseStore`: one upsert, a write). In the
service's own file that write took SQLite's single write lock, so a request's count waited
behind whatever write transaction another process had open (a poll being created), and
each count made every other connection drop its page cache (a WAL reader starts cold after
any other connection's commit). Here the counters live in a file beside the service's
database, `<name>-counters<suffix>` (`var/db-counters.sqlite3` beside `var/db.sqlite3`),
with a write lock and a WAL of their own: a count waits only for another count.

The file holds nothing but counters (windows of at most a day): deleting it forgets the
day's counts and nothing else. Its first connection creates the tables, from the models'
fields (`Counter`, `KeyCounter`, whose own tables in the service's database stay empty on
SQLite), and makes them anew, empty, when their definition has changed (`user_version`).
The upsert reads the space's override from the service's database, attached to each
connection as `service`, in the same statement. Statements name their tables with the
database (`table`): the service's database has tables of the same names (empty on
SQLite), and an unqualified name found there by a connection whose copy of this file's
schema predates the tables would count in the wrong file.

Connections are kept idle per process by core/sqlite's own list (`take_idle`, `give_back`) and
wait for the write lock in Python (`core.sqlite.base.when_unlocked`). Statements run in
autocommit: a count is its own transaction, never a part of the caller's, and writes this
file only (a `BEGIN IMMEDIATE` here would take the attached database's write lock too: only
the tables' creation uses one, before the attachment). The WAL is checkpointed by SQLite's
automatic checkpoint, every 1,000 pages (several hundred requests; the file is a few pages).

In tests the service's database is in memory (a shared cache); the counters are then an
in-memory database of their own, and `read_uncommitted`, which applies to shared-cache
databases only, lets the upsert see an override written by the test's open transaction.
"""

import functools
import sqlite3
import zlib
from contextlib import contextmanager
from pathlib import Path

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.sqlite3.base import SQLiteCursorWrapper

from core.sqlite.base import Connection, DatabaseWrapper, give_back, idle_connections, take_idle, when_unlocked
from ratelimit.models import Counter, KeyCounter


@functools.cache  # each count asks: pathlib's work is kept
def counters_name(database: str, in_memory: bool) -> str:
    """The counters' database beside the service's `database` (its settings' NAME)."""
    if in_memory:
        return "file:ratelimit-counters?mode=memory&cache=shared"
    path = Path(database)
    return str(path.with_name(f"{path.stem}-counters{path.suffix}"))


def execute(sql: str, params: dict | tuple = ()) -> list[tuple]:
    """Run one statement (Django's placeholders: `%s`, `%(name)s`) on the counters' database
    and return its rows. Raises `sqlite3.Error`."""
    with raw_connection() as raw:
        return when_unlocked(raw, _run, raw, sql, params)


def _run(raw: Connection, sql: str, params) -> list[tuple]:
    # Django's placeholders as SQLite's, by Django's own conversion.
    names = tuple(params) if isinstance(params, dict) else None
    sql = raw.cursor(factory=SQLiteCursorWrapper).convert_query(sql, param_names=names)
    return raw.execute(sql, params).fetchall()


def clear() -> None:
    """Delete every counter, if the service's database is SQLite and this process has opened
    the counters' database (the tests do after each test: the counters are outside the
    transaction a test rolls back)."""
    db = connections[DEFAULT_DB_ALIAS]
    if not isinstance(db, DatabaseWrapper):  # a test may call another backend "sqlite"
        return
    if idle_connections(counters_name(str(db.settings_dict["NAME"]), db.is_in_memory_db())):
        for model in (Counter, KeyCounter):
            execute(f"DELETE FROM {table(model)}")


@contextmanager
def raw_connection():
    """One of this process's connections to the counters' database, lent for the block."""
    db = connections[DEFAULT_DB_ALIAS]  # looked up once: each `connection.x` is a lookup and a caught AttributeError
    database = str(db.settings_dict["NAME"])
    name = counters_name(database, db.is_in_memory_db())
    raw = take_idle(name) or _connect(db, database, name)
    try:
        yield raw
    finally:
        give_back(name, raw)


def _connect(db, database: str, name: str) -> Connection:
    options = db.settings_dict.get("OPTIONS", {})
    raw = sqlite3.connect(name, uri=True, isolation_level=None, check_same_thread=False, factory=Connection)
    raw.lock_timeout = options.get("timeout", Connection.lock_timeout)
    try:
        raw.execute("PRAGMA busy_timeout = 0")  # waits for the write lock are when_unlocked's
        raw.execute("PRAGMA read_uncommitted = 1")  # shared-cache databases only: the tests' (above)
        when_unlocked(raw, raw.execute, "PRAGMA journal_mode = WAL")
        raw.execute("PRAGMA synchronous = NORMAL")  # as the service's database (docs/rate-limits.md)
        _create_tables(raw)  # first: BEGIN IMMEDIATE would take every attached database's write lock too
        when_unlocked(raw, raw.execute, "ATTACH DATABASE ? AS service", (database,))
    except BaseException:
        raw.close()
        raise
    return raw


def table(model) -> str:
    """`model`'s table as the statements on this database name it: the counters' own in
    `main`, any other in the attached `service`."""
    schema = "main" if model in (Counter, KeyCounter) else "service"
    return f"{schema}.{connection.ops.quote_name(model._meta.db_table)}"


def _tables_sql() -> list[str]:
    """The counters' tables and indexes, from the models' fields."""
    q = connection.ops.quote_name
    statements = []
    for model in (Counter, KeyCounter):
        table, fields = q(model._meta.db_table), model._meta.local_fields
        columns = ", ".join(
            f"{q(field.column)} {field.db_type(connection)} NOT NULL{' PRIMARY KEY' if field.primary_key else ''}"
            for field in fields
        )
        statements.append(f"CREATE TABLE {table} ({columns})")
        statements += [
            f"CREATE INDEX {q(f'{model._meta.db_table}_{field.column}')} ON {table} ({q(field.column)})"
            for field in fields if field.db_index and not field.primary_key
        ]
    return statements


def _create_tables(raw: Connection) -> None:
    statements = _tables_sql()
    version = zlib.crc32("\n".join(statements).encode()) & 0x7FFFFFFF
    # Every statement that reads a file waits while it is locked, this one too: a file just
    # made, opened by several processes at once, is locked while one of them recovers its
    # WAL (SQLITE_BUSY_RECOVERY), and a 503 would answer the request that found it so.
    if when_unlocked(raw, _run, raw, "PRAGMA main.user_version", ())[0][0] == version:
        return
    when_unlocked(raw, raw.execute, "BEGIN IMMEDIATE")
    try:
        if raw.execute("PRAGMA main.user_version").fetchone()[0] != version:  # another process's, meanwhile
            for model in (Counter, KeyCounter):
                raw.execute(f"DROP TABLE IF EXISTS main.{connection.ops.quote_name(model._meta.db_table)}")
            for statement in statements:
                raw.execute(statement)
            raw.execute(f"PRAGMA main.user_version = {version}")
    except BaseException:
        raw.rollback()
        raise
    raw.execute("COMMIT")
