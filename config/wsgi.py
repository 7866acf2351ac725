import os
import time
from io import BytesIO

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application
from django.db import connections
from gevent import Timeout
from gevent.monkey import is_module_patched

from core.bulkhead import ANSWER_DELAY, Bulkhead, FifoSemaphore, holding
from core.dbguard import NO_SLOT, REFUSED, RequestDeadline
from core.mailconfig import CONSOLE_UNASKED, console_unasked

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()
if console_unasked():
    raise ImproperlyConfigured(CONSOLE_UNASKED)


class ApiHandler(WSGIHandler):
    """Django's handler for the API's `/v1/` paths: the same URLs and views behind
    settings.API_MIDDLEWARE, the middleware an API request uses."""

    def load_middleware(self, is_async=False):
        everything = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.API_MIDDLEWARE  # read by Django's load_middleware only
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = everything


api_application = ApiHandler()


def _handler(environ):
    return api_application if environ.get("PATH_INFO", "").startswith("/v1/") else django_application


# Requests run through Django at once in this process; each may hold a database connection.
# Under gevent (config/gunicorn.py) the others wait their turn
# cooperatively and in arrival order, with their bodies already read (core.bulkhead).
_slots = FifoSemaphore(settings.WEB_CONCURRENT_REQUESTS)
# A space's requests take at most WEB_SPACE_CONCURRENT_REQUESTS of those slots at once, the
# app's pages as many, one poll's pages half of those (core.bulkhead).
_bulkhead = Bulkhead(settings.WEB_SPACE_CONCURRENT_REQUESTS)


def application(environ, start_response):
    """`admitted`, its answer held back for the seconds the request's handler asked
    (core.bulkhead.ANSWER_DELAY: a page read past its limit), with no slot and no database
    connection held meanwhile: a client that loops on a refusal asks again a second later,
    not at once. Under gevent the wait is a greenlet's sleep."""
    response = admitted(environ, start_response)
    delay = environ.get(ANSWER_DELAY)
    if delay:
        for db in connections.all(initialized_only=True):
            if not db.in_atomic_block:
                db.close()  # back to the pool (PostgreSQL): no connection held while it waits either
        time.sleep(delay)
    return response


def admitted(environ, start_response):
    """Django's application, behind a body reader, a per-space bulkhead and a bound on
    concurrent requests.

    The body is read here, before the request takes one of the WEB_CONCURRENT_REQUESTS
    slots, within REQUEST_BODY_TIMEOUT seconds: a client that sends it slowly (or never)
    holds no slot and no database connection, and is answered 400 at the deadline. A body
    over MAX_REQUEST_BODY_BYTES is refused as soon as it is known to be one: a declared
    Content-Length at once, without reading anything; a chunked body after one byte more
    than the limit. This also serves `Transfer-Encoding: chunked`: gunicorn decodes such a
    body (`wsgi.input_terminated`) but gives no CONTENT_LENGTH, and Django reads only
    CONTENT_LENGTH bytes; here it gets the length of what was read.

    A refused body is never read to its end. Gunicorn would announce
    `Connection: keep-alive`, try to skip the rest (at most 64 KiB) and then drop the
    connection anyway; the answer says `Connection: close` instead. Refusals go through
    Django without a slot (the request middleware answers them; no database is touched)."""
    limit = settings.MAX_REQUEST_BODY_BYTES
    chunked = (
        environ.get("wsgi.input_terminated")
        and not environ.get("CONTENT_LENGTH")
        and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    )
    declared = _declared_length(environ)
    refusal = None
    if declared > limit:
        refusal = f"body: larger than {limit} bytes"
    elif chunked or declared > 0:
        body = _read_body(environ, limit + 1 if chunked else declared)
        if body is None:
            refusal = f"body: not received within {settings.REQUEST_BODY_TIMEOUT:g} seconds"
        elif len(body) > limit:
            refusal = f"body: larger than {limit} bytes"
        else:
            environ["wsgi.input"] = BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
    handler = _handler(environ)
    if refusal is not None:
        _close_after(start_response)
        environ.update({REFUSED: refusal, "CONTENT_LENGTH": "0", "wsgi.input": BytesIO()})
        return handler(environ, start_response)
    if environ.get("PATH_INFO") == "/healthz":
        return handler(environ, start_response)  # liveness: no slot, no database
    # DB_REQUEST_TIMEOUT counts from here: the wait for a slot is part of it. While the
    # database is down or frozen every slot is held for seconds, and requests queued behind
    # them would otherwise wait one such turn after another, far past any bound.
    compartments = _bulkhead.compartments(environ)
    held = []
    with RequestDeadline(settings.DB_REQUEST_TIMEOUT) as deadline:
        try:
            for compartment in compartments:
                if not _bulkhead.acquire(compartment, timeout=deadline.remaining()):
                    environ[NO_SLOT] = True
                    return handler(environ, start_response)
                held.append(compartment)
            if not _slots.acquire(timeout=deadline.remaining()):
                environ[NO_SLOT] = True
                return handler(environ, start_response)
            try:
                # Responses are built in full, except the participant list of a big poll, which
                # streams: its rows are read and its connection closed by then, only encoding remains.
                with holding(_slots):
                    return handler(environ, start_response)
            finally:
                _slots.release()
        finally:
            for compartment in reversed(held):
                _bulkhead.release(compartment)
            _bulkhead.learn(environ)


def _read_body(environ, size: int) -> bytes | None:
    """Up to `size` bytes of the body, or None if they did not all come within
    REQUEST_BODY_TIMEOUT seconds (a deadline for the whole body, not for each read)."""
    seconds = settings.REQUEST_BODY_TIMEOUT
    if is_module_patched("socket"):  # gevent's workers (config/gunicorn.py)
        with Timeout(seconds, False):
            return environ["wsgi.input"].read(size)
        return None
    # Another worker class (a thread per connection): a timeout for each read at least.
    sock = environ.get("gunicorn.socket")
    if sock is not None:
        sock.settimeout(seconds)
    try:
        return environ["wsgi.input"].read(size)
    except TimeoutError:
        return None


def _declared_length(environ) -> int:
    try:
        return int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _close_after(start_response) -> None:
    """Gunicorn ignores a `Connection` header set by the application; its response object
    (whose method start_response is) can be told to close."""
    force_close = getattr(getattr(start_response, "__self__", None), "force_close", None)
    if force_close is not None:
        force_close()
