import os
import threading
from io import BytesIO

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from core.dbguard import NO_SLOT, RequestDeadline

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

# Requests run through Django at once in this process; each may hold a database connection.
# Under gevent (config/gunicorn.py) the semaphore is gevent's: the others wait their turn
# cooperatively, with their bodies already read.
_slots = threading.BoundedSemaphore(settings.WEB_CONCURRENT_REQUESTS)


def application(environ, start_response):
    """Django's application, behind a body reader and a bound on concurrent requests.

    The body is read here, before the request takes one of the WEB_CONCURRENT_REQUESTS
    slots: a client that sends it slowly (or never) holds no slot and no database
    connection. At most one byte more than MAX_REQUEST_BODY_BYTES is read, so that the
    parser can still refuse it as too large. This also serves `Transfer-Encoding: chunked`:
    gunicorn decodes such a body (`wsgi.input_terminated`) but gives no CONTENT_LENGTH, and
    Django reads only CONTENT_LENGTH bytes; here it gets the length of what was read.

    A body over the limit is never read to its end. Gunicorn would announce
    `Connection: keep-alive`, try to skip the rest (at most 64 KiB) and then drop the
    connection anyway; the answer says `Connection: close` instead."""
    limit = settings.MAX_REQUEST_BODY_BYTES
    chunked = (
        environ.get("wsgi.input_terminated")
        and not environ.get("CONTENT_LENGTH")
        and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    )
    declared = _declared_length(environ)
    if chunked or 0 < declared <= limit:
        body = environ["wsgi.input"].read(limit + 1 if chunked else declared)
        environ["wsgi.input"] = BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        if len(body) > limit:
            _close_after(start_response)
    elif declared > limit:
        _close_after(start_response)
    if environ.get("PATH_INFO") == "/healthz":
        return django_application(environ, start_response)  # liveness: no slot, no database
    # DB_REQUEST_TIMEOUT counts from here: the wait for a slot is part of it. While the
    # database is down or frozen every slot is held for seconds, and requests queued behind
    # them would otherwise wait one such turn after another, far past any bound.
    with RequestDeadline(settings.DB_REQUEST_TIMEOUT) as deadline:
        if not _slots.acquire(timeout=deadline.remaining()):
            environ[NO_SLOT] = True
            return django_application(environ, start_response)
        try:
            # Django's responses are built in full (no streaming): their content is ready here.
            return django_application(environ, start_response)
        finally:
            _slots.release()


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
