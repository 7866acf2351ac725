"""core.statements.statement_cursor: the backend's cursor without Django's wrapper, doing
for the statements run in its block what `connection.cursor()` does, on either database."""

import threading

import pytest
from django.db import DatabaseError, IntegrityError, connection, connections, transaction
from django.db.backends.utils import CursorWrapper
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from core.statements import statement_cursor
from spaces.models import User

pytestmark = pytest.mark.django_db(transaction=True)

_USER = connection.ops.quote_name(User._meta.db_table)


def _user(email: str) -> User:
    return User.objects.create(name="Statements", email=email)


def test_gives_the_rows_django_s_cursor_gives():
    user = _user("statements-rows@example.test")
    sql = f"SELECT id, email FROM {_USER} WHERE email = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [user.email])
        expected = cursor.fetchall()
    with statement_cursor() as cursor:
        cursor.execute(sql, [user.email])
        assert cursor.fetchall() == expected == [(user.pk, user.email)]


def test_is_the_backend_s_cursor_unless_statements_are_watched():
    connection.ensure_connection()
    backend_s = connection.create_cursor()
    backend_s.close()
    with statement_cursor() as cursor:
        assert not isinstance(cursor, CursorWrapper)
        assert type(cursor) is type(backend_s)  # the backend's own class
    with CaptureQueriesContext(connection), statement_cursor() as cursor:
        assert isinstance(cursor, CursorWrapper)


def test_watched_statements_are_counted_and_wrapped():
    # The tests' query counts (django_assert_num_queries) and DEBUG's connection.queries.
    with CaptureQueriesContext(connection) as captured:
        with statement_cursor() as cursor:
            cursor.execute("SELECT %s", [41])
            assert cursor.fetchone() == (41,)
    assert len(captured) == 1 and "41" in captured[0]["sql"]

    seen = []

    def spy(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy), statement_cursor() as cursor:
        cursor.execute("SELECT %s", [42])
    assert seen == ["SELECT %s"]


def test_errors_are_django_s_and_mark_the_connection():
    user = _user("statements-duplicate@example.test")
    connection.errors_occurred = False
    columns = ", ".join(connection.ops.quote_name(field.column) for field in User._meta.local_concrete_fields)
    with pytest.raises(IntegrityError) as raised, statement_cursor() as cursor:  # the same id again
        cursor.execute(f"INSERT INTO {_USER} ({columns}) SELECT {columns} FROM {_USER} WHERE id = %s", [user.pk])
    assert type(raised.value).__module__ == "django.db.utils"
    assert isinstance(raised.value.__cause__, connection.Database.IntegrityError)  # the driver's, kept as the cause
    assert not connection.errors_occurred  # Django leaves the connection usable after an IntegrityError

    bad = "SELECT no_such_column FROM no_such_table"
    with pytest.raises(DatabaseError) as by_django, connection.cursor() as cursor:
        cursor.execute(bad)
    connection.errors_occurred = False
    with pytest.raises(DatabaseError) as raised, statement_cursor() as cursor:
        cursor.execute(bad)
    assert type(raised.value) is type(by_django.value)  # ProgrammingError here, OperationalError on SQLite
    assert type(raised.value).__module__ == "django.db.utils"
    assert connection.errors_occurred  # as Django's wrapper sets it: checked when the request ends
    connection.errors_occurred = False


def test_closes_its_cursor():
    with statement_cursor() as cursor:
        cursor.execute("SELECT 1")
    with pytest.raises(Exception) as raised:
        cursor.execute("SELECT 1")
    assert "closed" in str(raised.value).lower()


def test_refuses_a_broken_transaction_as_django_does():
    with transaction.atomic():
        connection.needs_rollback = True  # as after an error inside the block, without a savepoint
        with pytest.raises(TransactionManagementError), connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        with pytest.raises(TransactionManagementError), statement_cursor() as cursor:
            cursor.execute("SELECT 1")


def test_opens_the_connection_when_none_is_open():
    seen = []

    def run():  # a thread of its own: no connection yet
        db = connections["default"]
        seen.append(db.connection)
        with statement_cursor() as cursor:
            cursor.execute("SELECT 7")
            seen.append(cursor.fetchone())
        db.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [None, (7,)]
