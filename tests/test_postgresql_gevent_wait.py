"""In a gevent worker psycopg waits for PostgreSQL on gevent's hub
(core.postgresql.base.wait_on_hub): statements of different greenlets overlap, one that runs
past psycopg's wake-up interval (0.1 s) still gets its result, a request's deadline still
cuts a statement off (the wait sets no timer: the deadline shuts the socket), and outside
gevent psycopg's own wait is left alone.

PostgreSQL only: deselected on SQLite (conftest.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.postgresql

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
from gevent import monkey; monkey.patch_all()
import os, time, django, gevent, psycopg
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from core.postgresql.base import wait_on_hub
from django.conf import settings
from django.db import connections
assert psycopg.waiting.wait is wait_on_hub, psycopg.waiting.wait

def sleep_in_database(seconds):
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_sleep(%s), 7", [seconds])
        return cursor.fetchone()[1]

started = time.monotonic()
jobs = [gevent.spawn(sleep_in_database, 0.4) for _ in range(3)]
gevent.joinall(jobs, raise_error=True)
print([job.value for job in jobs], round(time.monotonic() - started, 2))
"""


def test_statements_of_greenlets_overlap_and_finish_past_the_wake_up_interval():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env={**os.environ}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    values, seconds = done.stdout.rsplit(" ", 1)
    assert values == "[7, 7, 7]"
    assert 0.4 <= float(seconds) < 1.1, seconds  # one after another: 1.2 s at least


DEADLINE_SCRIPT = """
from gevent import monkey; monkey.patch_all()
import os, time, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.db import connections
from core.dbguard import RequestDeadline

started = time.monotonic()
try:
    with RequestDeadline(0.3):
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_sleep(5)")
except Exception as error:
    print(type(error).__name__, round(time.monotonic() - started, 2))
"""


def test_a_requests_deadline_cuts_a_statement_off():
    done = subprocess.run([sys.executable, "-c", DEADLINE_SCRIPT], cwd=ROOT, env={**os.environ}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    error, seconds = done.stdout.split()
    assert error == "OperationalError" and 0.3 <= float(seconds) < 2, done.stdout


def test_outside_gevent_psycopg_keeps_its_own_wait():
    import psycopg

    from core.postgresql.base import wait_on_hub

    assert psycopg.waiting.wait is not wait_on_hub
