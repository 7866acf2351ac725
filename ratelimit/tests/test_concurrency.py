"""Exactly the limit succeeds when several processes, each with many threads, send requests
for one space at once: against Redis, and against the embedded store in the database."""

import os
import sqlite3
from collections import Counter
from contextlib import closing, contextmanager

import pytest
from django.db import connection

from ratelimit import selectors
from tests.hammer import hammer

PROCESSES, THREADS, REQUESTS = 3, 8, 5  # 120 requests
LIMIT = 50


@contextmanager
def shared_database(tmp_path):
    """A URL other processes can open to see this test's (committed) data, and after the
    block, their writes visible here too."""
    if connection.vendor == "postgresql":
        db = connection.settings_dict
        yield f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
        return
    # SQLite: the test database lives in this process's memory; share it through a file.
    path = tmp_path / "shared.sqlite3"
    connection.ensure_connection()
    with closing(sqlite3.connect(path)) as file:
        connection.connection.backup(file)
        # In WAL mode before any process opens it: the switch (each connection's init
        # command) needs the file to itself and fails at once when others are connecting.
        file.execute("PRAGMA journal_mode=WAL")
    yield f"sqlite:///{path}"
    with closing(sqlite3.connect(path)) as file:
        file.backup(connection.connection)


@pytest.mark.django_db(transaction=True)
def test_exactly_the_limit_succeeds_across_processes_and_threads(store, make_space, tmp_path, settings):
    space, key = make_space()
    with shared_database(tmp_path) as database_url:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings_test",
            "DATABASE_URL": database_url,
            "REDIS_URL": settings.REDIS_URL,
            "RATELIMIT_PER_MINUTE": str(LIMIT),
        }
        responses = hammer(env, PROCESSES, THREADS, {"method": "GET", "path": "/v1/polls", "key": key}, REQUESTS)
        statuses = Counter(str(status) for status, _, _ in responses)
    total = PROCESSES * THREADS * REQUESTS
    assert statuses == {"200": LIMIT, "429": total - LIMIT}
    usage = selectors.usage(space_id=space.pk)
    assert usage.store == {"redis": "redis", "embedded": "database"}[store]
    assert (usage.minute.count, usage.day.count) == (LIMIT, LIMIT)
