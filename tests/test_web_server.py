"""The web process as the shipped commands run it (config/gunicorn.py), over real sockets:
what only a real server shows (connection handling, slow clients)."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.waiting import wait_until
from tests.webproc import accepted_connections

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def served(directory: Path, **settings: str):
    """gunicorn with config/gunicorn.py on a migrated SQLite file of its own in `directory`
    (the embedded mode's defaults: 2 processes), environment `settings` added (REDIS_URL,
    say: none otherwise); yields its port and a Pro demo space's key."""
    port = free_port()
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "CELERY_BROKER_URL", "WEB_CONCURRENCY", "WEB_CONCURRENT_REQUESTS", "WEB_CONNECTIONS")}
    env.update(HOST="127.0.0.1", PORT=str(port), LOG_LEVEL="WARNING", WEBHOOKS_DISPATCH="embedded",
               DATABASE_URL=f"sqlite:///{directory / 'db.sqlite3'}",
               RATELIMIT_PER_MINUTE="100000", RATELIMIT_PER_DAY="100000", **settings)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    demo = subprocess.run([sys.executable, "manage.py", "demo", "--json", "--base-url", f"http://127.0.0.1:{port}"],
                          cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    key = json.loads(demo.stdout)["key"]
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.py", "config.wsgi"],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def up() -> bool:
            assert process.poll() is None, process.stderr.read().decode()
            return exchange(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[0] == 200

        wait_until(up, 60, interval=0.2, ignore=(OSError,), message="gunicorn did not start")
        yield port, key
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The server of `served`, for this module's tests."""
    with served(tmp_path_factory.mktemp("web")) as port_and_key:
        yield port_and_key


def read_response(connection: socket.socket) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 response with a Content-Length, read off the connection."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65536)
        assert chunk, f"the connection closed before a response: {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    while len(body) < int(headers.get("content-length", 0)):
        chunk = connection.recv(65536)
        assert chunk, "the connection closed inside a response body"
        body += chunk
    return int(status_line.split()[1]), headers, body


def exchange(port: int, request: bytes, timeout: float = 10) -> tuple[int, dict, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request)
        return read_response(connection)


def post_polls(key: str, length: int) -> bytes:
    return (f"POST /v1/polls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode()


@pytest.mark.parametrize("size", [300_000, 2_000_000])
def test_a_body_over_the_limit_is_refused_and_the_connection_closed_as_announced(server, size):
    port, key = server
    body = b'{"title": "' + b"a" * (size - 13) + b'"}'
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(post_polls(key, len(body)))
        try:
            connection.sendall(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole body was sent
        status, headers, payload = read_response(connection)
        assert status == 400
        assert json.loads(payload) == {"error": {"code": "VALIDATION_ERROR", "message": "body: larger than 262144 bytes"}}
        assert headers["connection"] == "close"


def test_a_body_within_the_limit_keeps_the_connection_usable(server):
    port, key = server
    body = json.dumps({"title": "Kept alive", "kind": "date", "options": [{"date": "2030-05-02"}], "x": 1}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(post_polls(key, len(body)) + body)
        status, headers, payload = read_response(connection)
        assert (status, headers["connection"]) == (400, "keep-alive")
        assert json.loads(payload)["error"]["message"] == "x: unknown field"
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(connection)[0] == 200


def test_slow_clients_do_not_stall_the_api(server):
    """50 connections that never finish their headers and 8 that never finish their body
    (slowloris) hold no thread: a normal request is still answered within a second."""
    port, key = server
    slow = []
    try:
        for _ in range(50):
            connection = socket.create_connection(("127.0.0.1", port), timeout=10)
            connection.sendall(b"GET /v1/polls HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.append(connection)
        for _ in range(8):
            connection = socket.create_connection(("127.0.0.1", port), timeout=10)
            connection.sendall(post_polls(key, 1000) + b'{"title": "')
            slow.append(connection)
        wait_until(lambda: accepted_connections(port) >= 58, 10)  # every slow connection has reached the server
        for request in (b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        f"GET /v1/polls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                        f"Connection: close\r\n\r\n".encode()):
            started = time.monotonic()
            status, _, _ = exchange(port, request, timeout=5)
            assert status == 200
            assert time.monotonic() - started < 1.0
    finally:
        for connection in slow:
            connection.close()


def test_a_worker_leaves_what_it_loaded_out_of_the_garbage_collections(tmp_path):
    # config/gunicorn.py's post_worker_init, as a worker runs it once the application is
    # loaded: the views imported, and everything then alive frozen (gc.freeze), so that a
    # full collection no longer walks Django, DRF and the views.
    script = (
        "import gc, importlib.util, sys, django\n"
        "django.setup()\n"
        "spec = importlib.util.spec_from_file_location('gunicorn_settings', 'config/gunicorn.py')\n"
        "settings = importlib.util.module_from_spec(spec); spec.loader.exec_module(settings)\n"
        "before = gc.get_freeze_count()\n"
        "settings.post_worker_init(None)\n"
        "print(before, gc.get_freeze_count(), 'polls.views' in sys.modules)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "REDIS_URL": ""}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before, frozen, views_imported = done.stdout.split()
    assert int(before) == 0 and int(frozen) > 50_000 and views_imported == "True", done.stdout


def test_a_connection_with_requests_queued_up_does_not_hold_up_another(tmp_path):
    """One worker, two connections: the first sends hundreds of requests at once (each next
    one is there when the last is answered, as for a client that answers quickly), then the
    other sends one. gunicorn reads a connection's next request without a switch when it is
    there already; config/gunicorn.py lets the others run before each request, so the other
    is answered while most of the first's still wait, not after all of them."""
    burst = 500
    with served(tmp_path, WEB_CONCURRENCY="1") as (port, _key):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as first, \
                socket.create_connection(("127.0.0.1", port), timeout=30) as other:
            answered = []  # the first's responses, read as they come (none waits for a full buffer)

            def drain():
                received = b""
                while received.count(b"HTTP/1.1 200") < burst:
                    chunk = first.recv(65536)
                    if not chunk:
                        return
                    received += chunk
                    answered.append(received.count(b"HTTP/1.1 200"))

            reader = threading.Thread(target=drain)
            first.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * burst)
            reader.start()
            wait_until(lambda: answered, 30, message="the first connection's requests are not being answered")
            other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(other)[0] == 200
            served_before = answered[-1]
            reader.join(60)
            assert answered[-1] == burst  # all of the first's were answered in the end
            assert served_before < burst // 2, served_before
