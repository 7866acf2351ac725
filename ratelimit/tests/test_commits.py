"""What the embedded store's write costs: no durable-commit wait per request (the choice is
documented in docs/rate-limits.md, "Durability of the counters")."""

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
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


COUNT_IN_A_FILE = textwrap.dedent("""
    import json, sqlite3, sys, time
    import django
    django.setup()
    from django.core.management import call_command
    from ratelimit.models import Counter, LimitOverride
    from ratelimit.stores import DatabaseStore
    from spaces.models import Space
    from spaces import services

    if sys.argv[2] == "setup":
        call_command("migrate", verbosity=0)
        space = services.create_space(name="Counted", owner_email="counted@example.com", pro=True)
        LimitOverride.objects.create(space=space, per_minute=7)
        print(space.pk)
        sys.exit()
    space_id = sys.argv[3]
    # Another process is writing to the service's database and holds its write lock.
    writer = sqlite3.connect(sys.argv[1], isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    outcome = DatabaseStore().hit(space_id, 1_000_000)
    print(json.dumps({"seconds": time.monotonic() - started, "limit": outcome.minute.limit,
                      "count": outcome.minute.count, "service_rows": Counter.objects.count()}))
""")


def test_on_sqlite_a_count_never_waits_for_the_services_write_lock(tmp_path):
    """The counters live in a file of their own (ratelimit.sqlite_counters): a count goes on
    while another process holds the service database's write lock, still reads the space's
    override from there, and the file's tables are made anew when their definition is not
    the one the code expects."""
    database = tmp_path / "db.sqlite3"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": f"sqlite:///{database}",
           "REDIS_URL": "", "PYTHONPATH": str(BASE_DIR)}

    def run(*args) -> str:
        out = subprocess.run([sys.executable, "-c", COUNT_IN_A_FILE, str(database), *args], env=env, cwd=BASE_DIR,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.strip()

    space_id = run("setup")
    counted = json.loads(run("count", space_id))
    assert counted["seconds"] < 1  # the service's lock wait would have lasted its 20 s timeout, then failed
    assert (counted["limit"], counted["count"], counted["service_rows"]) == (7, 1, 0)
    assert json.loads(run("count", space_id))["count"] == 2
    counters = tmp_path / "db-counters.sqlite3"
    with closing(sqlite3.connect(counters)) as file:
        assert file.execute("SELECT space_id, minute_count FROM ratelimit_counter").fetchall() == [(space_id, 2)]
        file.execute("PRAGMA user_version = 1")  # as if an older version of the code had made it
    assert json.loads(run("count", space_id))["count"] == 1  # made anew: counting starts over


OPEN_WHILE_RECOVERED = textwrap.dedent("""
    import django, json, sqlite3
    django.setup()
    from core.sqlite.base import Connection
    from ratelimit import sqlite_counters
    from ratelimit.models import Counter

    busy_once = {"PRAGMA main.user_version", "ATTACH DATABASE ? AS service"}
    found_busy = []

    def execute(self, sql, *args):
        if sql in busy_once:  # as when another process is recovering the file's WAL
            busy_once.remove(sql)
            found_busy.append(sql)
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = 261  # SQLITE_BUSY_RECOVERY
            raise error
        return sqlite3.Connection.execute(self, sql, *args)

    Connection.execute = execute
    rows = sqlite_counters.execute(f"SELECT count(*) FROM {sqlite_counters.table(Counter)}")
    print(json.dumps({"rows": rows, "busy": sorted(found_busy)}))
""")


def test_opening_the_counters_file_waits_while_another_process_recovers_it(tmp_path):
    """A counters' file opened by several processes at once is locked for a moment while one
    of them recovers its WAL (SQLITE_BUSY_RECOVERY). Every statement of a new connection's
    set-up waits for that, as a count does, instead of failing the request with a 503 (CI
    once saw one among eight concurrent first requests; sixteen processes opening a new
    file together failed in 1 of 100 tries before, in none of 400 after)."""
    database = tmp_path / "db.sqlite3"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DATABASE_URL": f"sqlite:///{database}",
           "REDIS_URL": "", "PYTHONPATH": str(BASE_DIR)}
    out = subprocess.run([sys.executable, "-c", OPEN_WHILE_RECOVERED], env=env, cwd=BASE_DIR,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == {"rows": [[0]], "busy": ["ATTACH DATABASE ? AS service", "PRAGMA main.user_version"]}
