"""The hardened HTTP sender: one POST to a receiver we do not trust.

- Every connection resolves the host itself, vets every address it gets
  (`webhooks.targets`) and connects to a vetted address, so a name that answers
  differently at send time than at save time (DNS rebinding) cannot reach inside.
- Proxies from the environment are ignored (`trust_env = False`); redirects are not
  followed.
- Keep-alive: each thread keeps one session per receiver (scheme and host), so a burst of
  deliveries to one endpoint reuses its connection. A kept connection was vetted when it
  was made (its peer cannot change); one idle longer than KEEPALIVE_IDLE_SECONDS is
  dropped rather than reused (a receiver may have closed it meanwhile), and a session
  whose attempt went wrong is thrown away with its connections.
- One deadline for the whole exchange: a watchdog shuts the socket down when it passes,
  reused or new, so a receiver that trickles bytes cannot hold a worker beyond the lease.
  One watchdog thread per process serves every attempt (core.watchdog).
- At most 64 KiB of the answer is read (undecoded); a connection whose answer was not read
  to its end is dropped, never reused.
"""

import errno
import http.client
import socket
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError
from urllib3.util.connection import _set_socket_options
from urllib3.util.timeout import _DEFAULT_TIMEOUT

from core.watchdog import Watchdog
from webhooks import targets

MAX_RESPONSE_BYTES = 64 * 1024
EXCERPT_CHARS = 512
# A kept-alive connection idle longer than this is not reused: receivers close idle
# connections (often after 5 s), and a request racing that close would fail the attempt.
KEEPALIVE_IDLE_SECONDS = 2.0
# Receivers one thread keeps a session for; the least recently used one is closed beyond.
MAX_SESSIONS_PER_THREAD = 32

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
    """Shuts down every socket of the attempt when the time is up (from the watchdog
    thread: `shutdown` wakes a blocked `recv`, unlike `close`, and is safe across
    threads)."""

    def __init__(self, seconds: float):
        self.expired = False
        self.done = False
        self.at = time.monotonic() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def __enter__(self):
        _local.deadline = self
        _watchdog.watch(self)
        return self

    def __exit__(self, *exc):
        _watchdog.forget(self)
        _local.deadline = None

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shutdown(sock)

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)


_watchdog = Watchdog("webhook-deadlines")


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
        raise NewConnectionError(self, f"Failed to establish a new connection: {last_error}") from last_error

    def request(self, *args, **kwargs):
        # A kept-alive (or already TLS-wrapped) socket falls under this attempt's deadline too.
        deadline = getattr(_local, "deadline", None)
        if deadline is not None and self.sock is not None:
            deadline.watch(self.sock)
        return super().request(*args, **kwargs)


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


class _Session:
    """A thread's keep-alive session to one receiver."""

    def __init__(self):
        self.session = requests.Session()
        self.session.trust_env = False  # no proxies, no .netrc credentials from the environment
        adapter = VettedAdapter(max_retries=0)
        self.session.mount("https://", adapter)
        self.session.mount("http://", adapter)
        self.last_used = time.monotonic()

    def close(self) -> None:
        self.session.close()


def _session_for(url: str) -> _Session:
    """This thread's session for the URL's receiver (new if none is kept, or the kept one
    went idle too long); idle sessions of other receivers are closed on the way."""
    sessions: OrderedDict[tuple[str, str], _Session] = _local.__dict__.setdefault("sessions", OrderedDict())
    now = time.monotonic()
    for origin, kept in list(sessions.items()):
        if now - kept.last_used > KEEPALIVE_IDLE_SECONDS:
            del sessions[origin]
            kept.close()
    parts = urlsplit(url)
    origin = (parts.scheme.lower(), parts.netloc.lower())
    kept = sessions.pop(origin, None) or _Session()
    sessions[origin] = kept  # the most recently used last
    while len(sessions) > MAX_SESSIONS_PER_THREAD:
        sessions.popitem(last=False)[1].close()
    return kept


def _discard_session(url: str) -> None:
    parts = urlsplit(url)
    kept = getattr(_local, "sessions", {}).pop((parts.scheme.lower(), parts.netloc.lower()), None)
    if kept is not None:
        kept.close()


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> Outcome:
    """POST `body` to `url` and report what happened; never raises for the receiver's
    behaviour. `timeout` bounds the whole exchange, from resolving to the status line."""
    started = time.perf_counter()
    status_code: int | None = None
    excerpt = ""
    error = ""
    clean = False
    with _Deadline(timeout) as deadline:
        try:
            targets.check_url(url, resolve_host=False)
            kept = _session_for(url)
            response = kept.session.post(
                url, data=body, headers=headers, timeout=(timeout, timeout),
                allow_redirects=False, stream=True, verify=VERIFY,
            )
            try:
                status_code = response.status_code
                excerpt, clean = _read_capped(response)
            finally:
                response.close()  # a connection whose answer was read to the end stays in the pool
            kept.last_used = time.monotonic()
        except targets.Unresolvable as exc:
            error = f"DNS failure: {exc}"
        except targets.ForbiddenTarget as exc:
            error = f"refused: {exc}"
            if not settings.WEBHOOKS_ALLOW_PRIVATE_URLS:
                error += " (WEBHOOKS_ALLOW_PRIVATE_URLS is off in the sending process)"
        except requests.exceptions.RequestException as exc:
            error = TIMED_OUT if deadline.expired else describe(exc)
        finally:
            if error or not clean or deadline.expired:
                _discard_session(url)
    if status_code is None and not error:
        error = "no answer"
    elif status_code is not None and not error:
        if 300 <= status_code < 400:
            error = f"HTTP {status_code}: redirects are not followed"
        elif not 200 <= status_code < 300:
            error = f"HTTP {status_code}"
    if error == TIMED_OUT:
        error = f"timed out after {timeout:g} s"
    duration_ms = round((time.perf_counter() - started) * 1000)
    return Outcome(status_code=status_code, error=error[:500], duration_ms=duration_ms, excerpt=excerpt)


def _read_capped(response: requests.Response) -> tuple[str, bool]:
    """Read at most MAX_RESPONSE_BYTES of the answer, undecoded (no decompression bomb).
    Returns its start as text, and whether the answer was read to its end (only then may
    the connection be reused). A body cut short after the status is not an error: the
    receiver already answered."""
    received = bytearray()
    complete = False
    try:
        while len(received) < MAX_RESPONSE_BYTES:
            chunk = response.raw.read(min(16384, MAX_RESPONSE_BYTES - len(received)), decode_content=False)
            if not chunk:
                complete = True
                break
            received += chunk
    except Exception:  # noqa: BLE001 - the status line is what counts; the body is ignored
        pass
    text = received[: EXCERPT_CHARS * 2].decode("utf-8", "replace").replace("\x00", "")[:EXCERPT_CHARS]
    return text, complete


TIMED_OUT = "timed out"


def describe(exc: BaseException) -> str:
    """What went wrong, in the words of someone running a receiver (the attempt's
    `error`, shown in the API, the back office and the logs): never the names of our
    own classes or of the HTTP library's."""
    causes = _causes(exc)

    def found(*kinds):
        return next((cause for cause in causes if isinstance(cause, kinds)), None)

    if verification := found(ssl.SSLCertVerificationError):
        return f"TLS error: certificate not accepted ({verification.verify_message or 'verification failed'})"
    if tls := found(ssl.SSLError, requests.exceptions.SSLError):
        reason = getattr(tls, "reason", None)
        return f"TLS error: {reason.lower().replace('_', ' ')}" if isinstance(reason, str) else "TLS error: handshake failed"
    for kind, words in _FAILURES:
        if found(kind):
            return words
    # After the failures: urllib3's NewConnectionError (a refusal) is a ConnectTimeoutError.
    if found(requests.exceptions.Timeout, TimeoutError, ConnectTimeoutError, ReadTimeoutError):
        return TIMED_OUT
    if unreachable := found(OSError):
        if unreachable.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return "connection failed: the receiver's network is unreachable"
    return "connection failed" if found(requests.exceptions.ConnectionError) else "the request failed"


# The first kind found among the causes gives the words.
_FAILURES = (
    (ConnectionRefusedError, "connection refused"),
    (ConnectionResetError, "connection reset by the receiver"),
    (http.client.RemoteDisconnected, "the receiver closed the connection without answering"),
    (http.client.LineTooLong, "response too large: a header line over 64 KiB"),
    (http.client.HTTPException, "the answer is not valid HTTP"),
    (BrokenPipeError, "the receiver closed the connection while the request was sent"),
)


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and everything behind it: causes, contexts, urllib3's `reason`,
    and exceptions carried as arguments (urllib3's ProtocolError)."""
    found: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if any(current is seen for seen in found):
            continue
        found.append(current)
        todo += [item for item in (getattr(current, "reason", None), current.__cause__, current.__context__,
                                   *current.args) if isinstance(item, BaseException)]
    return found
