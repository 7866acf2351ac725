"""Real processes against a real database (the PostgreSQL test database, or a SQLite
file like the embedded mode's): workers contending for the same deliveries, a
`runjobs` killed mid-delivery, and a graceful stop."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection
from werkzeug import Response

from tests.hammer import release_together

ROOT = Path(settings.BASE_DIR)
# Seconds a runjobs may take to exit after SIGTERM before the test calls it hung.
STOP_BOUND = 90


def process_env(database_url: str) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "CELERY_BROKER_URL")}
    env.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE="config.settings_test",
        WEBHOOKS_DISPATCH="embedded",
        WEBHOOKS_ALLOW_PRIVATE_URLS="true",
        WEBHOOKS_LEASE_SECONDS="3",
        WEBHOOKS_TIMEOUT_SECONDS="2",
        WEBHOOKS_POLL_SECONDS="0.1",
        LOG_LEVEL="WARNING",
    )
    return env


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    path = tmp_path_factory.mktemp("webhooks-db") / "template.sqlite3"
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, check=True,
                   env=process_env(f"sqlite:///{path}"))
    return path


class Processes:
    def __init__(self, database_url: str):
        self.env = process_env(database_url)
        self.running: list[subprocess.Popen] = []

    def call(self, *args) -> dict | list:
        done = subprocess.run([sys.executable, "-m", "webhooks.tests.procs", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def start(self, *args, stdin=None, **env) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, *args], cwd=ROOT, env={**self.env, **env}, stdin=stdin,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.running.append(process)
        return process

    def runjobs(self) -> subprocess.Popen:
        """`runjobs`, returned once it has installed its signal handlers and started (a
        SIGTERM sent earlier would kill the interpreter before any handler exists). Its log
        goes to a file, read here for the line that says so (config.settings: the test
        settings keep INFO lines out)."""
        log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        process = subprocess.Popen([sys.executable, "manage.py", "runjobs", "--only", "webhooks.sweep"], cwd=ROOT,
                                   env={**self.env, "LOG_LEVEL": "INFO", "DJANGO_SETTINGS_MODULE": "config.settings"},
                                   stdout=subprocess.DEVNULL, stderr=log,
                                   text=True)
        self.running.append(process)
        process.log_path = log.name
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if '"message": "runjobs started"' in Path(log.name).read_text():
                return process
            assert process.poll() is None, Path(log.name).read_text()
            time.sleep(0.05)
        raise AssertionError("runjobs did not start within 60 s")

    def stop_all(self):
        for process in self.running:
            if process.poll() is None:
                process.kill()
            process.communicate()


@pytest.fixture
def procs(request, transactional_db, tmp_path):
    """Processes sharing one database: the PostgreSQL test database itself, or a copy of
    a migrated SQLite file (the in-memory SQLite test database is private to us)."""
    if connection.vendor == "postgresql":
        db = connection.settings_dict
        login = quote(db["USER"], safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else "")
        url = f"postgres://{login}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    else:
        path = tmp_path / "db.sqlite3"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        url = f"sqlite:///{path}"
    processes = Processes(url)
    yield processes
    processes.stop_all()


def test_workers_in_separate_processes_never_take_the_same_delivery(procs):
    procs.call("seed", "http://127.0.0.1:9/", "40", "3")
    # Claims are held (nothing is sent): a lease longer than the test keeps them held.
    workers = [procs.start("-m", "webhooks.tests.procs", "work", WEBHOOKS_LEASE_SECONDS="600", stdin=subprocess.PIPE)
               for _ in range(4)]
    results = [json.loads(out) for out in release_together(workers, timeout=60)]
    fanned = Counter(pk for result in results for pk in result["fanned"])
    claimed = Counter(pk for result in results for pk in result["claimed"])
    assert len(fanned) == 120 and set(fanned.values()) == {1}
    assert set(claimed) == set(fanned) and set(claimed.values()) == {1}
    assert sum(1 for result in results if result["claimed"]) >= 2, "the workers did contend"


class Gate:
    """A receiver handler: the first request waits until released (its answer then goes
    nowhere if the sender is gone); later ones get 200 at once. Records event ids and
    delivery ids in arrival order."""

    def __init__(self, first_wait: float):
        self.first_wait = first_wait
        self.seen: list[tuple[str, str]] = []
        self.arrived = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, request):
        # The server is threaded and senders post at once: counting under a lock makes
        # exactly one request the first (two appends before either check made none).
        with self._lock:
            self.seen.append((json.loads(request.get_data())["id"], request.headers["X-Service-Delivery"]))
            first = len(self.seen) == 1
        if first:
            self.arrived.set()
            self.release.wait(self.first_wait)
        return Response("ok")

    def wait_for(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.seen) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.seen) >= count, f"only {len(self.seen)} request(s) arrived"


def test_runjobs_killed_mid_delivery_is_redelivered_after_the_lease(procs, receiver):
    gate = Gate(first_wait=10)
    receiver.expect_request("/hook0").respond_with_handler(gate)
    seeded = procs.call("seed", receiver.url_for("/hook"), "1", "1")

    first = procs.runjobs()
    assert gate.arrived.wait(30), Path(first.log_path).read_text()
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    gate.release.set()

    second = procs.runjobs()
    gate.wait_for(2, timeout=30)
    second.send_signal(signal.SIGTERM)
    assert second.wait(STOP_BOUND) == 0

    assert [event_id for event_id, _ in gate.seen] == seeded["events"] * 2
    assert gate.seen[0][1] != gate.seen[1][1]
    state = procs.call("state")
    [delivery] = state["deliveries"]
    assert (delivery["status"], delivery["attempts"]) == ("succeeded", 2)
    interrupted, succeeded = state["attempts"]
    assert interrupted["error"].startswith("interrupted") and not interrupted["succeeded"]
    assert succeeded["succeeded"] and succeeded["id"] == gate.seen[1][1]


def test_runjobs_stops_gracefully_and_every_event_arrives_exactly_once(procs, receiver):
    """SIGTERM while an attempt is in flight: it finishes, nothing new starts, the process
    exits 0; the next runjobs sends the rest. No event arrives twice."""
    gate = Gate(first_wait=1.0)
    receiver.expect_request("/hook0").respond_with_handler(gate)
    seeded = procs.call("seed", receiver.url_for("/hook"), "12", "1")

    process = procs.runjobs()
    assert gate.arrived.wait(30)
    process.send_signal(signal.SIGTERM)
    # The attempt in flight ends within about a second (the gate), but a loaded machine can
    # take many more to run the rest of the shutdown: the bound is for hangs, not for speed.
    assert process.wait(STOP_BOUND) == 0
    state = procs.call("state")
    assert all(attempt["succeeded"] for attempt in state["attempts"])  # none interrupted
    sent = {delivery["event_id"] for delivery in state["deliveries"] if delivery["status"] == "succeeded"}
    assert sent == {event_id for event_id, _ in gate.seen}

    again = procs.runjobs()
    gate.wait_for(12, timeout=30)
    again.send_signal(signal.SIGTERM)
    assert again.wait(STOP_BOUND) == 0
    assert sorted(event_id for event_id, _ in gate.seen) == sorted(seeded["events"])
    state = procs.call("state")
    assert {(d["status"], d["attempts"]) for d in state["deliveries"]} == {("succeeded", 1)}
