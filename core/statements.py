"""A cursor for the hot statements (the key lookup of every API request, a new poll's
INSERTs): the backend's own cursor, as `connection.cursor()` makes it, without Django's
`CursorWrapper` around it.

`with statement_cursor(db) as cursor:` does what `with db.cursor() as cursor:` does for
statements run and fetched inside the block (the backend's cursor class, its placeholders
and lock waits on SQLite; errors raised as Django's, with `errors_occurred` set as Django
sets it; a broken transaction refused; the cursor closed at the end), minus the wrapper's
layers around each call: the wrapper made per cursor, its `__getattr__` and error wrapping
per method call, the execute wrappers' chain (27k instructions per cursor on SQLite, 43k on
PostgreSQL, docs/performance.md). Whenever something watches the statements
(`connection.queries` logged: DEBUG, the tests' query counts; an `execute_wrapper`
installed) it is `db.cursor()` itself, so every statement is seen as before.

One difference: inside the block a failed statement raises the driver's error, which
becomes Django's as it leaves the block. Catch database errors outside the block."""

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper


class statement_cursor:
    __slots__ = ("db", "cursor", "wrapped")

    def __init__(self, db: BaseDatabaseWrapper | None = None):
        self.db = connections[DEFAULT_DB_ALIAS] if db is None else db  # the default database's
        self.wrapped = None

    def __enter__(self):
        db = self.db
        if db.queries_logged or db.execute_wrappers:
            self.wrapped = db.cursor()
            return self.wrapped.__enter__()
        if db.connection is None or db.health_check_enabled:
            db.close_if_health_check_failed()
            db.ensure_connection()
        db.validate_thread_sharing()
        if db.in_atomic_block:
            db.validate_no_broken_transaction()
        with db.wrap_database_errors:
            self.cursor = db.create_cursor()
        return self.cursor

    def __exit__(self, kind, error, traceback):
        if self.wrapped is not None:
            return self.wrapped.__exit__(kind, error, traceback)
        try:
            self.cursor.close()
        except self.db.Database.Error:
            pass  # as CursorWrapper.__exit__: closing a cursor of a dead connection may fail
        if kind is not None:
            # Raises the driver's error as Django's (DatabaseErrorWrapper), like the wrapper's
            # own execute and fetch methods.
            self.db.wrap_database_errors.__exit__(kind, error, traceback)
        return False
