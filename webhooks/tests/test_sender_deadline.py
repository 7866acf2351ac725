"""The sender's one deadline holds even for a name with many unanswering addresses."""

import socket
import time

import pytest

from tests.waiting import wait_until
from tests.webproc import accepted_connections
from webhooks import services
from webhooks.models import Attempt
from webhooks.tests.fixtures import run_worker
from webhooks.tests.test_ssrf import dns  # noqa: F401 - the fake DNS fixture


@pytest.fixture
def black_hole():
    """A local port whose connections hang: its listen queue is full, so every new SYN is
    dropped and `connect` waits (like a firewalled address)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    wait_until(lambda: accepted_connections(port, queued=True), 5)  # the queue is full: later SYNs are dropped
    yield port
    for sock in [*fillers, listener]:
        sock.close()


def test_a_name_with_many_unanswering_addresses_cannot_hold_a_worker_past_the_deadline(
    dns, black_hole, make_endpoint, space, monkeypatch  # noqa: F811
):
    """Each address of the name gets only what is left of the one deadline: four
    addresses that never answer take the timeout (1 s here) once, not four times, so a
    receiver's DNS cannot keep a worker beyond its lease and send the delivery twice."""
    dns["many.test"] = ["127.0.0.1"] * 4
    make_endpoint(f"http://many.test:{black_hole}/hook")
    resolve = socket.getaddrinfo

    def slow_resolve(*args, **kwargs):  # a slow name server takes most of the time
        time.sleep(0.7)
        return resolve(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", slow_resolve)
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    started = time.monotonic()
    run_worker()
    elapsed = time.monotonic() - started
    attempt = Attempt.objects.get()
    assert attempt.error == "timed out after 1 s"
    assert elapsed < 1.8, elapsed
