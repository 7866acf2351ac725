"""No client and no space can take the service down: over the web process as `bin/serve`
runs it (gunicorn, config/gunicorn.py; two processes), on the run's database (a SQLite
file of its own, or the PostgreSQL test database), over real sockets.

- A body declared over the limit is refused at once, before any request slot; a body that
  trickles in is cut at REQUEST_BODY_TIMEOUT, without a slot meanwhile.
- One space flooding (pings to a receiver that never answers, big polls) leaves another
  space its normal latency: the ping never waits for the receiver, and the per-space
  bulkhead keeps the flood in the space's own queue.
- A ping to a receiver that never answers is answered at once (202) and ends `failed` in
  the delivery log, its one attempt finished: nothing is left pending.

Bounds are generous (a loaded 2-core CI shared with other runs) and latencies are compared
within one run."""

import json
import os
import socket
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from tests.waiting import wait_until
from tests.webproc import accepted_connections, base_env, free_port, manage, read_until_closed, request, serving

pytestmark = pytest.mark.django_db(transaction=True)  # the web processes see what the test commits

ON_POSTGRESQL = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://", "pgsql://"))
BODY_TIMEOUT = 2
WEBHOOK_TIMEOUT = 2
POLL = json.dumps({"title": "Flood", "kind": "time", "timeZone": "Europe/Berlin", "duration": 15, "generators": [
    {"startDate": "2030-06-03", "endDate": "2030-06-09", "days": ["mon", "tue", "wed"], "from": "08:00", "to": "16:15"}
]}).encode()


@pytest.fixture
def silent_receiver():
    """A receiver that takes connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture
def site(tmp_path, silent_receiver):
    """(env, keys): the service's environment on the run's database, and the keys of
    spaces A and B (A has an endpoint at the silent receiver)."""
    if ON_POSTGRESQL:
        db = connection.settings_dict
        url = f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    else:
        url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    env = base_env(url, free_port(), REQUEST_BODY_TIMEOUT=BODY_TIMEOUT, WEBHOOKS_TIMEOUT_SECONDS=WEBHOOK_TIMEOUT,
                   WEBHOOKS_LEASE_SECONDS=10)
    if not ON_POSTGRESQL:
        manage(env, "manage.py", "migrate", "-v0")
    keys = json.loads(manage(env, "-m", "tests.webproc", "seed", silent_receiver))
    return env, keys


def head(key: str, length: int) -> bytes:
    return (f"POST /v1/polls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode()


def test_bodies_declared_over_the_limit_are_refused_at_once_without_a_slot(site):
    env, keys = site
    with serving(env) as port:
        stalled = []
        try:
            for _ in range(20):  # far more than the processes' 2 request slots
                sock = socket.create_connection(("127.0.0.1", port), timeout=15)
                started = time.monotonic()
                sock.sendall(head(keys["a"], 1_000_000) + b'{"title":')  # ... and nothing more
                status, headers, body = read_until_closed(sock)  # the server closes: the answer is whole
                assert (status, headers["connection"]) == (400, "close")
                assert json.loads(body) == {"error": {"code": "VALIDATION_ERROR", "message": "body: larger than 262144 bytes"}}
                assert time.monotonic() - started < 3
                stalled.append(sock)  # never closed by the client
            status, _, _, seconds = request(port, "GET", "/v1/polls", keys["b"], timeout=10)
            assert (status, seconds < 3) == (200, True), seconds
        finally:
            for sock in stalled:
                sock.close()


def test_a_trickling_body_is_cut_at_its_read_deadline_and_holds_no_slot_meanwhile(site):
    env, keys = site
    with serving(env) as port:
        stalled = []
        try:
            for _ in range(12):
                sock = socket.create_connection(("127.0.0.1", port), timeout=BODY_TIMEOUT + 15)
                sock.sendall(head(keys["a"], 1000) + b'{"title": "')
                stalled.append((sock, time.monotonic()))
            wait_until(lambda: accepted_connections(port) >= 12, 10)  # every stalled body is being read
            for _ in range(3):  # while they stall, others are served at once
                status, _, _, seconds = request(port, "GET", "/v1/polls", keys["b"], timeout=10)
                assert (status, seconds < 3) == (200, True), seconds
            for sock, started in stalled:
                status, headers, body = read_until_closed(sock)
                assert (status, headers["connection"]) == (400, "close")
                assert json.loads(body)["error"] == {"code": "VALIDATION_ERROR",
                                                     "message": f"body: not received within {BODY_TIMEOUT} seconds"}
                assert BODY_TIMEOUT - 0.5 < time.monotonic() - started < BODY_TIMEOUT + 6
        finally:
            for sock, _ in stalled:
                sock.close()


def latencies(port: int, key: str, count: int) -> list[float]:
    answers = []
    for _ in range(count):
        status, _, _, seconds = request(port, "GET", "/v1/polls?limit=5", key, timeout=30)
        assert status == 200, status
        answers.append(seconds)
        time.sleep(0.05)  # paced, as a client reading now and then
    return answers


def test_a_flooding_space_leaves_another_its_normal_latency(site):
    """Space A keeps 8 requests in flight (pings to a receiver that never answers, and
    polls of 96 time slots); space B's reads keep their latency and never fail."""
    env, keys = site
    with serving(env) as port:
        for _ in range(3):  # warm both processes up
            request(port, "GET", "/v1/polls", keys["b"])
            request(port, "POST", "/v1/polls", keys["a"], POLL)
        quiet = latencies(port, keys["b"], 15)
        stop, pings = threading.Event(), []

        def flood(n: int) -> int:
            sent = 0
            while not stop.is_set():
                if n % 2:
                    status, _, _, seconds = request(port, "POST", f"/v1/webhooks/{keys['endpoint']}/ping", keys["a"])
                    pings.append((status, seconds))
                else:
                    status, *_ = request(port, "POST", "/v1/polls", keys["a"], POLL)
                    assert status in (201, 503), status
                sent += 1
            return sent

        with ThreadPoolExecutor(8) as pool:
            flooders = [pool.submit(flood, n) for n in range(8)]
            wait_until(lambda: len(pings) >= 4, 30)  # the flood is in full swing
            try:
                busy = latencies(port, keys["b"], 15)
            finally:
                stop.set()
            flooded = sum(f.result() for f in flooders)
    assert flooded > 16 and pings
    # The pings were queued, never refused (they wait only in A's own queue, never for the receiver).
    assert {status for status, _ in pings} == {202}, pings
    # B's reads: about as fast as without the flood (a request of A ahead in each process at most).
    quiet_median, busy_median = statistics.median(quiet), statistics.median(busy)
    assert busy_median < 4 * quiet_median + 0.3, (quiet, busy)
    assert max(busy) < 3, busy


def test_a_ping_to_a_receiver_that_never_answers_is_answered_at_once_and_ends_failed(site):
    env, keys = site
    with serving(env, jobs=True) as port:
        status, _, body, seconds = request(port, "POST", f"/v1/webhooks/{keys['endpoint']}/ping", keys["a"])
        assert (status, seconds < 3) == (202, True), (status, seconds)
        delivery = json.loads(body)["data"]
        assert (delivery["status"], delivery["attempts"]) == ("pending", [])
        def finished() -> dict | None:
            status, _, body, _ = request(port, "GET", f"/v1/webhooks/{keys['endpoint']}/deliveries", keys["a"])
            [logged] = json.loads(body)["data"]
            return logged if logged["status"] != "pending" else None

        logged = wait_until(finished, WEBHOOK_TIMEOUT + 30, interval=0.3)
    assert logged["id"] == delivery["id"] and logged["status"] == "failed"
    [attempt] = logged["attempts"]
    assert attempt["finishedAt"] and not attempt["succeeded"] and attempt["statusCode"] is None
    assert "timed out" in attempt["error"] or "timeout" in attempt["error"], attempt["error"]
