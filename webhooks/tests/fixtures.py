"""Fixtures for webhook tests: real local receivers (an HTTP server that records what it
gets, and a raw TCP server for misbehaving peers), endpoints pointing at them, and
helpers that run the dispatcher the way a worker does."""

import json
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
import stripe
from django.conf import settings
from django.db import connection
from pytest_httpserver import HTTPServer

from tests.redisproc import start_redis
from tests.waiting import wait_until
from webhooks import services


@pytest.fixture(scope="session")
def _receiver_server():
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    yield server
    server.clear()
    server.stop()


@pytest.fixture
def receiver(_receiver_server):
    """A real local HTTP server (threaded). Tests add expectations; `receiver.log` holds
    (request, response) pairs."""
    _receiver_server.clear()
    yield _receiver_server
    _receiver_server.clear()


@pytest.fixture
def local_urls(settings):
    """Local receivers are plain http on 127.0.0.1: allowed only by the development
    switch. The short timeout keeps failure tests fast."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    settings.WEBHOOKS_TIMEOUT_SECONDS = 1.0
    settings.WEBHOOKS_DISPATCH = "embedded"
    return settings


@pytest.fixture
def make_endpoint(local_urls, space):
    def make(url: str, *, event_types=None, target_space=None):
        endpoint, secret = services.create_endpoint(space=target_space or space, url=url, event_types=event_types)
        return endpoint, secret

    return make


@pytest.fixture
def hook(receiver, make_endpoint):
    """An endpoint of the `space` fixture at the receiver's /hook, and its secret."""
    return make_endpoint(receiver.url_for("/hook"))


@pytest.fixture
def clock(time_machine):
    """A controlled clock that keeps ticking: `clock.shift(seconds)` jumps ahead."""
    time_machine.move_to(datetime.now(UTC), tick=True)
    return time_machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Broker:
    """A Redis server of our own (no persistence): killing it loses the queued tasks."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None
        self.start()

    def start(self):
        self.process = start_redis("--port", str(self.port), "--bind", "127.0.0.1", client=redis.Redis.from_url(self.url))

    def kill(self):
        self.process.kill()
        self.process.wait(10)


@pytest.fixture
def broker():
    """A Redis broker of this test's own: a shared Redis database would let another test
    run's worker take our tasks."""
    if shutil.which("redis-server") is None:  # part of the PostgreSQL + Redis run (docs/deploy.md)
        pytest.fail("redis-server is not installed: the broker-crash tests start one of their own")
    server = Broker()
    yield server
    server.kill()


def use_broker(url: str) -> str:
    """Point the Celery app at another broker; returns the previous one."""
    from config.celery import app

    previous = app.conf.broker_url
    app.conf.broker_url = url
    app._after_fork()  # forget pooled connections (app.close() would unregister the app)
    return previous


def run_worker() -> int:
    """What a worker does: fan out new events, then send everything due. Returns how
    many attempts were made."""
    services.fan_out()
    return services.deliver_due(budget_seconds=30)


def received(receiver) -> list[dict]:
    """Every request the receiver got: parsed body, raw body and headers."""
    return [
        {"body": json.loads(request.get_data()), "raw": request.get_data(as_text=True), "headers": request.headers}
        for request, _response in receiver.log
    ]


def verify(raw: str, headers, secret: str, tolerance: int | None = 300) -> bool:
    """The signature checked by an independent implementation (Stripe's); `tolerance`
    also checks that `t` is recent."""
    return stripe.WebhookSignature.verify_header(raw, headers["X-Service-Signature"], secret, tolerance=tolerance)


class RawReceiver:
    """A TCP server whose every connection is handed to `behave(conn)`: for peers that
    close early, trickle bytes, or send a body without end."""

    def __init__(self):
        self.behave = lambda conn: None
        self.connections = 0
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                outer.connections += 1
                outer.behave(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def raw_receiver():
    server = RawReceiver()
    yield server
    server.close()


def trickle_answer(conn: socket.socket) -> None:
    """Answer one byte every 0.1 s for 10 s: each byte within any read timeout, the whole
    answer far beyond a delivery's deadline. Stops when the sender hangs up."""
    try:
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100:
            conn.sendall(bytes([byte]))
            time.sleep(0.1)
    except OSError:
        pass


def read_request(conn: socket.socket) -> bytes:
    """Read one HTTP request (headers and a Content-Length body) from the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return data


# Service processes for the multi-process tests (test_processes, test_crashes).

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

    def start(self, *args, stdin=None, group: bool = False, **env) -> subprocess.Popen:
        """A process with this database; `group`: in a process group of its own, for a
        service that forks (a Celery worker), which `kill_group` kills whole. Its
        output is only kept when stdin is a pipe (a helper that answers)."""
        output = subprocess.PIPE if stdin is not None else subprocess.DEVNULL
        process = subprocess.Popen([sys.executable, *args], cwd=ROOT, env={**self.env, **env}, stdin=stdin,
                                   stdout=output, stderr=output, text=True, start_new_session=group)
        process.group = group
        self.running.append(process)
        return process

    @staticmethod
    def kill_group(process: subprocess.Popen) -> None:
        """SIGKILL to the process and every process it forked: a crash of the machine."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(10)

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
        def started() -> bool:
            assert process.poll() is None, Path(log.name).read_text()
            return '"message": "runjobs started"' in Path(log.name).read_text()

        wait_until(started, 60, message="runjobs did not start within 60 s")
        return process

    def stop_all(self):
        for process in self.running:
            if getattr(process, "group", False):
                self.kill_group(process)
            elif process.poll() is None:
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
