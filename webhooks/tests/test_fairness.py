"""No space holds back another's webhooks: a space whose endpoints accept and never answer
holds at most its share of the senders (WEBHOOKS_SPACE_SENDERS), and another space's
deliveries go out meanwhile, never behind an attempt to such a receiver. Real processes
(`runjobs`, a Celery worker) and a real silent receiver (a local socket that accepts and
never answers)."""

import socket
import statistics
import threading
import time

import pytest
from werkzeug import Response

from tests.waiting import wait_until
from webhooks import jobs
from webhooks.tests.fixtures import RawReceiver, use_broker

ATTACK_ENDPOINTS = 5
PINGS_PER_ENDPOINT = 6
# Each attempt to the silent receiver takes this long (the delivery timeout): another
# space's delivery that waited behind one would take at least as long.
TIMEOUT_SECONDS = 3
OTHER_EVENTS = 8
def peer_is_open(conn: socket.socket) -> bool:
    """The sender has not hung up: no end of stream is waiting to be read (nor an error)."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


class SilentReceiver(RawReceiver):
    """Accepts every connection, reads what comes and never answers, until the sender hangs
    up (its deadline); counts the connections open at once."""

    def __init__(self):
        super().__init__()
        self.held: set[socket.socket] = set()
        self.peak = 0
        self.lock = threading.Lock()
        self.behave = self.hold

    @property
    def open(self) -> int:
        with self.lock:
            return len(self.held)

    def hold(self, conn: socket.socket) -> None:
        with self.lock:
            self.held.add(conn)
            # A sender's next attempt connects as soon as its deadline shut the last one,
            # before that one's thread may have seen the close: a connection whose sender
            # hung up is not counted, whether its thread has noticed yet or not.
            self.peak = max(self.peak, sum(peer_is_open(held) for held in self.held))
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        finally:
            with self.lock:
                self.held.discard(conn)


@pytest.fixture
def silent():
    server = SilentReceiver()
    yield server
    server.close()


def other_space_delays(procs, silent, receiver, *, while_waiting=lambda: None, endpoints=ATTACK_ENDPOINTS,
                       whose="other") -> list[float]:
    """Space A's pings to the silent receiver are queued, the dispatcher (started by the
    caller) is at them; then space B (`own`: A itself) records events one after another:
    the seconds from each commit to its arrival at B's receiver."""
    arrivals: dict[str, float] = {}

    def arrived(request):
        arrivals[request.get_json()["id"]] = time.time()
        return Response("ok")

    receiver.expect_request("/hook").respond_with_handler(arrived)
    other = procs.call("attack", silent.url("/silent/"), receiver.url_for("/hook"), str(endpoints),
                       str(PINGS_PER_ENDPOINT), whose)["space"]

    def attacked() -> bool:
        while_waiting()
        return silent.open >= min(2, endpoints)

    wait_until(attacked, 60, message="the attacker's pings never reached the silent receiver")
    recorded = procs.call("record", other, str(OTHER_EVENTS), "0.3")
    wait_until(lambda: (while_waiting(), len(arrivals) >= OTHER_EVENTS)[1], 60, message="the other space's events did not arrive")
    return [arrivals[event_id] - committed for event_id, committed in recorded]


def assert_fair(delays: list[float], silent) -> None:
    print(f"other space's delays: median {statistics.median(delays):.3f} s, max {max(delays):.3f} s; "
          f"silent connections at once: {silent.peak}")
    assert max(delays) < TIMEOUT_SECONDS * 0.8, delays  # none waited behind a silent attempt
    assert statistics.median(delays) < 1, delays
    assert silent.peak == 2, silent.peak  # the attacker's share: WEBHOOKS_SPACE_SENDERS


def test_the_embedded_dispatcher_keeps_a_silent_receiver_to_its_space_s_share(procs, silent, receiver):
    procs.env.update(WEBHOOKS_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS), WEBHOOKS_LEASE_SECONDS="60")
    procs.runjobs()
    assert_fair(other_space_delays(procs, silent, receiver), silent)


def test_an_endpoint_that_never_answers_holds_one_sender_and_its_space_s_other_endpoint_delivers(
        procs, silent, receiver):
    """The space's own events go to both its endpoints: the silent one holds at most
    WEBHOOKS_ENDPOINT_SENDERS (one) sender, and the other endpoint's deliveries go out
    meanwhile, never behind an attempt to the silent one."""
    procs.env.update(WEBHOOKS_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS), WEBHOOKS_LEASE_SECONDS="60")
    procs.runjobs()
    delays = other_space_delays(procs, silent, receiver, endpoints=1, whose="own")
    print(f"the working endpoint's delays: median {statistics.median(delays):.3f} s, max {max(delays):.3f} s")
    assert max(delays) < TIMEOUT_SECONDS * 0.8, delays
    assert statistics.median(delays) < 1, delays
    assert silent.peak == 1, silent.peak  # the endpoint's share: WEBHOOKS_ENDPOINT_SENDERS


@pytest.mark.postgresql  # Celery's worker processes share the database with the test's
def test_celery_workers_keep_a_silent_receiver_to_its_space_s_share(procs, silent, receiver, broker, settings):
    """Four worker processes; the sweeper runs every half second (Celery beat's job), so
    the attacker's pings passed over at their share are sent later, by any worker."""
    procs.env.update(WEBHOOKS_DISPATCH="celery", CELERY_BROKER_URL=broker.url,
                     WEBHOOKS_TIMEOUT_SECONDS=str(TIMEOUT_SECONDS), WEBHOOKS_LEASE_SECONDS="60")
    settings.WEBHOOKS_DISPATCH = "celery"
    previous = use_broker(broker.url)
    last_sweep = [0.0]

    def sweep():
        if time.monotonic() - last_sweep[0] >= 0.5:
            last_sweep[0] = time.monotonic()
            jobs.sweep()

    try:
        worker = procs.start("-m", "celery", "-A", "config", "worker", "--loglevel", "WARNING", "--concurrency", "4",
                             "--without-gossip", "--without-mingle", "--without-heartbeat", group=True)
        delays = other_space_delays(procs, silent, receiver, while_waiting=sweep)
        procs.kill_group(worker)
    finally:
        use_broker(previous)
    assert_fair(delays, silent)
