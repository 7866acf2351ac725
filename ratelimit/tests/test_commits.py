"""What the embedded store's write costs: no durable-commit wait per request (the choice is
documented in docs/rate-limits.md, "Durability of the counters")."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.db import connection, transaction

from ratelimit.models import Counter
from ratelimit.stores import DatabaseStore

BASE_DIR = Path(__file__).resolve().parents[2]


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_postgresql_counts_without_waiting_for_the_wal_and_only_for_the_counter(make_space, settings):
    settings.REDIS_URL = ""
    space, _ = make_space()
    store = DatabaseStore()
    for n in range(3):
        assert store.hit(space.pk, 1_000_000 + n).minute.count == n + 1
    assert synchronous_commit() == "on"  # the statement's own setting ended with it
    with transaction.atomic():  # inside a caller's transaction: the plain statement
        assert store.hit(space.pk, 1_000_010).minute.count == 4
        assert synchronous_commit() == "on"
    assert Counter.objects.get(space=space).minute_count == 4


def test_a_process_keeps_its_sqlite_database_open(tmp_path):
    """Closing a request's connection is never the last close of the file: SQLite does not
    checkpoint and delete the WAL (waiting on the disk) after every request."""
    script = textwrap.dedent("""
        import django, os, sys
        django.setup()
        from django.db import connection
        with connection.cursor() as cursor:
            cursor.execute("CREATE TABLE t (n integer)")
            cursor.execute("INSERT INTO t VALUES (1)")
        connection.close()
        print(os.path.exists(sys.argv[1] + "-wal"))
    """)
    database = tmp_path / "db.sqlite3"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": f"sqlite:///{database}",
           "REDIS_URL": "", "PYTHONPATH": str(BASE_DIR)}
    out = subprocess.run([sys.executable, "-c", script, str(database)], env=env, cwd=BASE_DIR,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "True", out.stderr[-2000:]
