"""Which processes wait for each commit's WAL flush on PostgreSQL (DB_SYNCHRONOUS_COMMIT): the
web processes do; the Procfile's Celery worker, whose writes are all redone after a crash of
the database server, does not."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
SHOW = "from django.db import connection; c = connection.cursor(); c.execute('SHOW synchronous_commit'); print(c.fetchone()[0])"


def synchronous_commit(**env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "shell", "-v0", "-c", SHOW], cwd=ROOT,
                          env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
                          capture_output=True, text=True, timeout=60)


@pytest.mark.postgresql
def test_web_processes_wait_for_the_flush_and_the_procfile_worker_does_not(db):
    assert connection.vendor == "postgresql"
    assert synchronous_commit().stdout.strip() == "on"
    worker = re.search(r"^worker: (.*)$", (ROOT / "Procfile").read_text(), re.M).group(1)
    assignments = dict(word.split("=", 1) for word in shlex.split(worker) if re.fullmatch(r"[A-Z_]+=\S*", word))
    assert assignments == {"DB_SYNCHRONOUS_COMMIT": "off"}
    assert synchronous_commit(**assignments).stdout.strip() == "off"


@pytest.mark.postgresql
def test_a_value_postgresql_does_not_know_stops_the_process(db):
    done = synchronous_commit(DB_SYNCHRONOUS_COMMIT="off -c statement_timeout=0")
    assert done.returncode != 0 and "DB_SYNCHRONOUS_COMMIT must be on or off" in done.stderr
