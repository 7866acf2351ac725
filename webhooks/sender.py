"""The hardened HTTP sender: one POST to a receiver we do not trust.

- Every connection resolves the host itself, vets every address it gets
  (`webhooks.targets`) and connects to a vetted address, so a name that answers
  differently at send time than at save time (DNS rebinding) cannot reach inside.
- Proxies from the environment are ignored (`trust_env = False`); redirects are not
  followed; a fresh connection per attempt (no pooled socket outlives its checks).
- One deadline for the whole exchange: a watchdog shuts the socket down when it passes,
  so a receiver that trickles bytes cannot hold a worker beyond the lease.
- At most 64 KiB of the answer is read (undecoded), then the connection is dropped.
"""

import socket
import threading
import time
from dataclasses import dataclass

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.connection import _set_socket_options
from urllib3.util.timeout import _DEFAULT_TIMEOUT

from webhooks import targets

MAX_RESPONSE_BYTES = 64 * 1024
EXCERPT_CHARS = 512

_local = threading.local()


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to. `ok` is a 2xx status received before the deadline."""

    status_code: int | None
    error: str
    duration_ms: int
    excerpt: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and self.status_code is not None and 200 <= self.status_code < 300


class _Deadline:
    """Shuts down every socket of the attempt when the time is up (from a timer thread:
    `shutdown` wakes a blocked `recv`, unlike `close`, and is safe across threads)."""

    def __init__(self, seconds: float):
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self):
        _local.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()
        _local.deadline = None

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shutdown(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _VettedConnectionMixin:
    """Replaces urllib3's connect: resolve, vet every address, connect to a vetted one,
    and check the peer we actually reached before a single byte is sent."""

    def _new_conn(self) -> socket.socket:
        host = self._dns_host.strip("[]")
        answers = targets.resolve(host, self.port)  # raises ForbiddenTarget
        last_error: OSError | None = None
        for family, kind, proto, _name, address in answers:
            sock = socket.socket(family, kind, proto)
            try:
                _set_socket_options(sock, self.socket_options)
                if self.timeout is not _DEFAULT_TIMEOUT:
                    sock.settimeout(self.timeout)
                deadline = getattr(_local, "deadline", None)
                if deadline is not None:
                    deadline.watch(sock)
                sock.connect(address)
                targets.check_address(sock.getpeername()[0])
                return sock
            except TimeoutError as exc:
                sock.close()
                raise ConnectTimeoutError(self, f"Connection to {host} timed out") from exc
            except OSError as exc:
                sock.close()
                last_error = exc
            except BaseException:
                sock.close()
                raise
        raise NewConnectionError(self, f"Failed to establish a new connection: {last_error}")


class _VettedHTTPConnection(_VettedConnectionMixin, HTTPConnection):
    pass


class _VettedHTTPSConnection(_VettedConnectionMixin, HTTPSConnection):
    pass


class _VettedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _VettedHTTPConnection


class _VettedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _VettedHTTPSConnection


class VettedAdapter(HTTPAdapter):
    """A requests adapter whose connections go only to vetted addresses, never through
    a proxy."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _VettedHTTPPool, "https": _VettedHTTPSPool}

    def proxy_manager_for(self, proxy, **kwargs):
        raise targets.ForbiddenTarget("webhooks are never sent through a proxy")


# Where TLS certificates are checked against: True is the bundle requests ships (certifi).
VERIFY: bool | str = True


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> Outcome:
    """POST `body` to `url` and report what happened; never raises for the receiver's
    behaviour. `timeout` bounds the whole exchange, from resolving to the status line."""
    started = time.perf_counter()
    status_code: int | None = None
    excerpt = ""
    error = ""
    session = requests.Session()
    session.trust_env = False  # no proxies, no .netrc credentials from the environment
    adapter = VettedAdapter(max_retries=0)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    with _Deadline(timeout) as deadline:
        try:
            targets.check_url(url, resolve_host=False)
            response = session.post(
                url, data=body, headers=headers, timeout=(timeout, timeout),
                allow_redirects=False, stream=True, verify=VERIFY,
            )
            try:
                status_code = response.status_code
                excerpt = _read_capped(response)
            finally:
                response.close()
        except targets.ForbiddenTarget as exc:
            error = f"refused: {exc}"
            if not settings.WEBHOOKS_ALLOW_PRIVATE_URLS:
                error += " (WEBHOOKS_ALLOW_PRIVATE_URLS is off in the sending process)"
        except requests.exceptions.SSLError as exc:
            error = f"TLS error: {_reason(exc)}"
        except (requests.exceptions.Timeout, requests.exceptions.ConnectionError) as exc:
            error = "timed out" if deadline.expired or isinstance(exc, requests.exceptions.Timeout) else (
                f"connection failed: {_reason(exc)}"
            )
        except requests.exceptions.RequestException as exc:
            error = f"request failed: {_reason(exc)}"
        finally:
            session.close()
    if status_code is None and not error:
        error = "no answer"
    elif status_code is not None and not error:
        if 300 <= status_code < 400:
            error = f"HTTP {status_code}: redirects are not followed"
        elif not 200 <= status_code < 300:
            error = f"HTTP {status_code}"
    if error == "timed out":
        error = f"timed out after {timeout:g} s"
    duration_ms = round((time.perf_counter() - started) * 1000)
    return Outcome(status_code=status_code, error=error[:500], duration_ms=duration_ms, excerpt=excerpt)


def _read_capped(response: requests.Response) -> str:
    """Read at most MAX_RESPONSE_BYTES of the answer, undecoded (no decompression bomb),
    and return its start as text. A body cut short after the status is not an error:
    the receiver already answered."""
    received = bytearray()
    try:
        while len(received) < MAX_RESPONSE_BYTES:
            chunk = response.raw.read(min(16384, MAX_RESPONSE_BYTES - len(received)), decode_content=False)
            if not chunk:
                break
            received += chunk
    except Exception:  # noqa: BLE001 - the status line is what counts; the body is ignored
        pass
    return received[: EXCERPT_CHARS * 2].decode("utf-8", "replace").replace("\x00", "")[:EXCERPT_CHARS]


def _reason(exc: Exception) -> str:
    """The innermost useful message of a requests/urllib3 exception chain."""
    inner = exc
    while inner.__context__ is not None and isinstance(inner.__context__, Exception):
        inner = inner.__context__
    text = str(inner) or inner.__class__.__name__
    return text[:300]
