"""Real processes against a real database (the PostgreSQL test database, or a SQLite
file like the embedded mode's): workers contending for the same deliveries, a
`runjobs` killed mid-delivery, and a graceful stop."""

import json
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from werkzeug import Response

from tests.hammer import release_together
from tests.waiting import wait_until
from webhooks.tests.fixtures import STOP_BOUND


def test_workers_in_separate_processes_never_take_the_same_delivery(procs):
    procs.call("seed", "http://127.0.0.1:9/", "40", "3")
    # Claims are held (nothing is sent): a lease longer than the test keeps them held, and
    # shares of the senders wider than the test lets every claim be made.
    workers = [procs.start("-m", "webhooks.tests.procs", "work", WEBHOOKS_LEASE_SECONDS="600",
                           WEBHOOKS_SPACE_SENDERS="1000", WEBHOOKS_ENDPOINT_SENDERS="1000", stdin=subprocess.PIPE)
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
        wait_until(lambda: len(self.seen) >= count, timeout, message=f"only {len(self.seen)} request(s) arrived")


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
