"""A PostgreSQL that is stopped, frozen or holding a lock: the API answers 503
SERVICE_UNAVAILABLE with Retry-After within seconds, never a 500 or a hang, and recovers
when the database does. A real web process (config/gunicorn.py) talks to the test database
through a TCP proxy that the test can stop or freeze; the embedded rate-limit store keeps
the database on every request's path (maintenance check, key lookup, counter).

PostgreSQL only: deselected on SQLite (conftest.py)."""

import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from ratelimit.models import Counter
from tests.waiting import wait_until
from tests.webproc import accepted_connections

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[1]
REQUEST_DEADLINE, CONNECT_TIMEOUT, LOCK_TIMEOUT_MS, CHECK_IDLE = 3, 2, 2000, 1.0


class Proxy:
    """Forwards TCP connections to the database. `stop()`: existing connections are cut and
    new ones refused, like a server that went down. `freeze()`: connections are accepted
    and bytes taken but nothing is forwarded, like a server process that hangs."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.flowing = threading.Event()
        self.flowing.set()
        self.stopped = False
        self.sockets: list[socket.socket] = []
        self.silent: set[socket.socket] = set()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.stopped:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source, sink):
        try:
            while data := source.recv(65536):
                while not self.flowing.wait(0.2):
                    if self.stopped:
                        return
                if source not in self.silent:
                    sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def freeze(self):
        self.flowing.clear()

    def drop_silently(self):
        """The connections open now lose every byte from either side, without a FIN or a
        RST (a failover, a firewall that forgot them); new connections work."""
        with self.lock:
            self.silent.update(self.sockets)

    def stop(self):
        self.stopped = True
        self._cut()

    def restore(self):
        self._cut()  # a frozen connection's state is unknown: start afresh
        self.stopped = False
        self.flowing.set()

    def _cut(self):
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self):
        self.stop()
        self.listener.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def service(make_space):
    """(proxy, port, key, space): a web process whose database is behind the proxy."""
    space, key = make_space()
    db = connection.settings_dict
    proxy = Proxy((db["HOST"] or "127.0.0.1", int(db["PORT"] or 5432)))
    port = free_port()
    env = {name: value for name, value in os.environ.items() if name not in ("REDIS_URL", "CELERY_BROKER_URL")}
    env.update(
        DATABASE_URL=f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@127.0.0.1:{proxy.port}/{db['NAME']}",
        HOST="127.0.0.1", PORT=str(port), WEB_CONCURRENCY="1", LOG_LEVEL="ERROR",
        DB_REQUEST_TIMEOUT=str(REQUEST_DEADLINE), DB_CONNECT_TIMEOUT=str(CONNECT_TIMEOUT),
        DB_LOCK_TIMEOUT_MS=str(LOCK_TIMEOUT_MS), RATELIMIT_PER_MINUTE="100000", RATELIMIT_PER_DAY="100000",
        DB_POOL_CHECK_IDLE_SECONDS=str(CHECK_IDLE),
    )
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.py", "config.wsgi"],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def up() -> bool:
            assert process.poll() is None, process.stderr.read().decode()
            return get(port, "/healthz")[0] == 200

        wait_until(up, 60, interval=0.2, message="the web process did not start")
        yield proxy, port, key, space
    finally:
        process.terminate()
        process.wait(timeout=60)
        proxy.close()


def get(port: int, path: str, key: str | None = None, timeout: float = 30) -> tuple[int | None, dict, float]:
    """(status, headers, seconds) of one request on a new connection; status None if the
    server could not be reached."""
    started = time.monotonic()
    head = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if key:
        head += f"Authorization: Bearer {key}\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall((head + "\r\n").encode())
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
    except OSError:
        return None, {}, time.monotonic() - started
    status_line, *lines = received.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, time.monotonic() - started


def assert_unavailable(answer, within: float, retry_after: str = "30"):
    status, headers, seconds = answer
    assert status == 503, answer
    assert headers["retry-after"] == retry_after and headers["content-type"] == "application/json"
    assert seconds < within, f"answered after {seconds:.1f} s"


def assert_not_ready(port: int, within: float):
    status, headers, seconds = get(port, "/readyz")
    assert (status, headers["content-type"]) == (503, "application/json"), (status, headers)
    assert seconds < within, f"/readyz answered after {seconds:.1f} s"


def recovers(port: int, key: str, within: float = 20) -> bool:
    try:
        return wait_until(lambda: get(port, "/v1/polls", key)[0] == 200, within, interval=0.3)
    except AssertionError:
        return False


def test_a_stopped_database_gives_503_quickly_and_the_service_recovers(service):
    proxy, port, key, _ = service
    assert get(port, "/v1/polls", key)[0] == 200
    proxy.stop()
    for _ in range(3):  # the pooled connection is cut; new ones are refused
        assert_unavailable(get(port, "/v1/polls", key), within=CONNECT_TIMEOUT + 2 + 4)
    assert_not_ready(port, within=CONNECT_TIMEOUT + 2 + 4)
    proxy.restore()
    assert recovers(port, key)


def test_a_frozen_database_gives_503_at_the_request_deadline_and_the_service_recovers(service):
    proxy, port, key, _ = service
    assert get(port, "/v1/polls", key)[0] == 200
    proxy.freeze()
    assert_unavailable(get(port, "/v1/polls", key), within=REQUEST_DEADLINE + 4)
    # A new connection to the frozen server never completes: its own timeout applies.
    assert_unavailable(get(port, "/v1/polls", key), within=CONNECT_TIMEOUT + 2 + 4)
    assert get(port, "/healthz")[0] == 200  # the process itself is fine
    assert_not_ready(port, within=REQUEST_DEADLINE + 4)
    proxy.restore()
    assert recovers(port, key)


@pytest.mark.parametrize("fault", ["stop", "freeze"])
def test_many_requests_at_once_each_answer_within_the_deadline(service, fault):
    """More requests than the process runs at once (WEB_CONCURRENT_REQUESTS, 4): while the
    database fails, each holds its slot for seconds, and the others must not queue behind
    them turn after turn. The wait for a slot counts toward the request's deadline; /healthz
    takes no slot and answers at once."""
    proxy, port, key, _ = service
    assert get(port, "/v1/polls", key)[0] == 200
    getattr(proxy, fault)()
    with ThreadPoolExecutor(16) as pool:
        answers = [pool.submit(get, port, "/v1/polls", key) for _ in range(16)]
        wait_until(lambda: accepted_connections(port) >= 16, 10)  # the requests are queued now
        status, _, seconds = get(port, "/healthz")
        assert (status, seconds < 1) == (200, True), seconds
        for answer in answers:
            assert_unavailable(answer.result(), within=max(REQUEST_DEADLINE, CONNECT_TIMEOUT + 2) + 4)
    proxy.restore()
    assert recovers(port, key)


@contextmanager
def counter_row_locked(space_id: str):
    """Another session holds the space's rate-limit counter row (SELECT ... FOR UPDATE)."""
    db = connection.settings_dict
    with psycopg.connect(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"],
                         password=db["PASSWORD"] or None, dbname=db["NAME"]) as other:
        other.execute(f"SELECT 1 FROM {Counter._meta.db_table} WHERE space_id = %s FOR UPDATE", [space_id])
        yield
        other.rollback()


def test_a_locked_counter_row_gives_503_within_the_lock_timeout(service):
    _, port, key, space = service
    assert get(port, "/v1/polls", key)[0] == 200  # the counter row exists now
    assert Counter.objects.filter(space_id=space.pk).exists()
    with counter_row_locked(space.pk):
        # The counter's store (the database here) failed: the rate limiter's own 503.
        assert_unavailable(get(port, "/v1/polls", key), within=LOCK_TIMEOUT_MS / 1000 + 4, retry_after="60")
    assert get(port, "/v1/polls", key)[0] == 200


def test_the_service_is_back_within_a_second_of_the_database(service):
    """After an outage long enough for a doubling back-off to reach 8 s (1+2+4 s of failed
    attempts), the first request after the database is ready succeeds within about a
    second (the pool retries every 0.25 s; the margin is for a loaded machine)."""
    proxy, port, key, _ = service
    assert get(port, "/v1/polls", key)[0] == 200
    proxy.stop()
    outage_ends = time.monotonic() + 8
    while time.monotonic() < outage_ends:  # requests keep the pool trying to reconnect
        assert get(port, "/v1/polls", key)[0] == 503
        time.sleep(0.2)  # paced: the outage is time passing, not something to wait for
    proxy.restore()
    ready = time.monotonic()
    wait_until(lambda: get(port, "/v1/polls", key)[0] == 200, 2.5,
               message="still failing 2.5 s after the database was back")
    recovered = time.monotonic() - ready
    assert recovered < 2.5, recovered
    # ... and stays back: no dead connection is lent afterwards.
    assert [get(port, "/v1/polls", key)[0] for _ in range(20)] == [200] * 20


def test_connections_cut_at_a_deadline_never_fail_a_later_request(service):
    """A frozen server: the requests' connections are cut at their deadline. Once it
    answers again every request succeeds: no cut connection went back to the pool."""
    proxy, port, key, _ = service
    with ThreadPoolExecutor(4) as pool:  # several pooled connections
        assert {answer[0] for answer in pool.map(lambda _: get(port, "/v1/polls", key), range(8))} == {200}
    proxy.freeze()
    with ThreadPoolExecutor(4) as pool:
        for answer in pool.map(lambda _: get(port, "/v1/polls", key), range(4)):
            assert_unavailable(answer, within=max(REQUEST_DEADLINE, CONNECT_TIMEOUT + 2) + 4)
    proxy.flowing.set()  # the server answers again; the cut connections stay cut
    assert recovers(port, key, within=5)
    assert [get(port, "/v1/polls", key)[0] for _ in range(30)] == [200] * 30


def test_a_lock_held_past_the_deadline_gives_503_at_the_deadline_counted_from_arrival(service):
    """The rate-limit counter row is locked by another session for longer than the request
    deadline and the lock timeout together allow: 16 requests at once (4 slots, a space's 2)
    are each answered within the deadline counted from when it was sent, not one slot's
    turn after another."""
    proxy, port, key, space = service
    assert get(port, "/v1/polls", key)[0] == 200
    with counter_row_locked(space.pk), ThreadPoolExecutor(16) as pool:
        for status, headers, seconds in pool.map(lambda _: get(port, "/v1/polls", key), range(16)):
            assert status == 503 and headers["retry-after"] in ("30", "60"), (status, headers)
            assert seconds < REQUEST_DEADLINE + 4, f"answered after {seconds:.1f} s"
    assert get(port, "/v1/polls", key)[0] == 200


def test_a_pooled_connection_whose_peer_vanished_is_checked_and_replaced(service):
    """The pooled connections' peer vanishes without a word while they sit idle; the
    database itself is fine. A connection idle for DB_POOL_CHECK_IDLE_SECONDS must answer a
    check within a second before it is lent: the next request is served on a new one,
    instead of waiting for the dead one until its deadline and answering 503."""
    proxy, port, key, _ = service
    assert get(port, "/v1/polls", key)[0] == 200
    proxy.drop_silently()
    time.sleep(CHECK_IDLE + 0.5)  # on purpose: the connections sit idle past the check's threshold
    status, _, seconds = get(port, "/v1/polls", key)
    assert status == 200 and seconds < REQUEST_DEADLINE, (status, seconds)
