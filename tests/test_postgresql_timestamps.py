"""`timestamptz` values read by psycopg's own loader (core/postgresql/base.py) are the very
datetimes Django's loader gives: the instant, in UTC, with Django's tzinfo.

PostgreSQL only: deselected on SQLite (conftest.py)."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader

from core.postgresql.base import UtcTimestamptzLoader

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]

TEXTS = [
    "0001-01-01 00:00:00+00",
    "1999-12-31 23:59:59.999999+00",
    "2026-06-01 12:00:00.5+02",  # another offset: the same instant in UTC
    "2030-01-07 08:00:00-05:30",
    "9999-12-31 23:59:59+00",
]


def read(texts: list[str]) -> list[datetime]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(['%s::timestamptz'] * len(texts))}", texts)
        return list(cursor.fetchone())


def test_the_service_reads_timestamps_with_psycopgs_loader_as_django_would():
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(connection.connection.adapters.types["timestamptz"].oid, 0)
    assert loader is UtcTimestamptzLoader
    ours = read(TEXTS)
    with connection.cursor() as cursor:  # Django's own loader, on this cursor only
        cursor.adapters.register_loader("timestamptz", type("DjangoUtc", (BaseTzLoader,), {"timezone": UTC}))
        assert cursor.adapters.get_loader(cursor.adapters.types["timestamptz"].oid, 0).__name__ == "DjangoUtc"
        cursor.execute(f"SELECT {', '.join(['%s::timestamptz'] * len(TEXTS))}", TEXTS)
        djangos = list(cursor.fetchone())
    assert ours == djangos
    assert [value.tzinfo for value in ours] == [UTC] * len(TEXTS) == [value.tzinfo for value in djangos]
    assert ours[2] == datetime(2026, 6, 1, 10, 0, 0, 500000, tzinfo=UTC)
