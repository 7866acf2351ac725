"""Exactly the limit succeeds when several processes, each with many threads, send requests
for one space at once: against Redis, and against the embedded store in the database."""

import os
import sqlite3
from collections import Counter
from contextlib import closing, contextmanager

import pytest
from django.db import connection

from ratelimit import selectors
from tests.hammer import hammer, shared_database

PROCESSES, THREADS, REQUESTS = 3, 8, 5  # 120 requests
LIMIT = 50


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
