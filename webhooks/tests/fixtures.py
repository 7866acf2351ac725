"""Fixtures for webhook tests: real local receivers (an HTTP server that records what it
gets, and a raw TCP server for misbehaving peers), endpoints pointing at them, and
helpers that run the dispatcher the way a worker does."""

import json
import socket
import socketserver
import threading
import time
from datetime import UTC, datetime

import pytest
import stripe
from pytest_httpserver import HTTPServer

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
