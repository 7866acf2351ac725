"""A row packed by PostgreSQL into its text (`ROW(...)::text`) unpacks into the very values
psycopg gives for its columns (core/postgresql/records.py, used by polls.queries).

PostgreSQL only: deselected on SQLite (conftest.py)."""

import random
from datetime import UTC, datetime

import pytest
from django.db import connection

from core.postgresql import records

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]

TYPES = ["varchar(40)", "text", "jsonb", "timestamp with time zone", "boolean", "integer"]
# Every character record_out quotes, doubles or ends a field on, and more.
ALPHABET = ' ,()"\\\t\nabcNUL日😀\'{}[]:'


def both(values: list) -> tuple[tuple, tuple]:
    """The values read as columns, and unpacked from the row's text, on the same connection."""
    casts = ", ".join(f"%s::{db_type}" for db_type in TYPES)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {casts}, ROW({casts})::text", values + values)
        row = cursor.fetchone()
        return tuple(row[:-1]), records.unpacker(connection.connection, TYPES)(row[-1])


def test_texts_nulls_and_every_type_come_back_as_the_columns_give_them():
    rng = random.Random(20261127)
    for _ in range(300):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 12)))
        values = [
            text or None if rng.random() < 0.2 else text,
            rng.choice([text, "", None]),
            rng.choice(['{"a": "x"}', '"(,)"', "null", "[1, \"\\\\\"]", None]),
            rng.choice([datetime(2026, 11, 27, 1, 2, 3, rng.randrange(10**6), tzinfo=UTC), None]),
            rng.choice([True, False, None]),
            rng.choice([0, -(2**31), 2**31 - 1, None]),
        ]
        columns, unpacked = both(values)
        assert unpacked == columns, values
        assert [type(value) for value in unpacked] == [type(value) for value in columns]


@pytest.mark.parametrize("text, fields", [
    ("(,)", [None, None]),
    ('(a,"",)', [b"a", b"", None]),
    ('(,"b ""c"" \\\\d")', [None, b'b "c" \\d']),
    ('("(,)")', [b"(,)"]),
])
def test_a_records_text_splits_into_its_fields(text, fields):
    assert records.fields(text) == fields
