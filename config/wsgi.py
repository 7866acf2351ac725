import os
from io import BytesIO

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from django.conf import settings  # noqa: E402  (configured by the line above)


def application(environ, start_response):
    """Django's application, able to read a `Transfer-Encoding: chunked` request body, and
    closing the connection after a body too large to read.

    Gunicorn decodes a chunked body and says so with `wsgi.input_terminated`, but it has no
    CONTENT_LENGTH, and Django reads only CONTENT_LENGTH bytes: it would see an empty body.
    Read it here, at most one byte more than MAX_REQUEST_BODY_BYTES so that the parser can
    still refuse it as too large, and give Django its length.

    A body over the limit is never read to its end. Gunicorn would announce
    `Connection: keep-alive`, try to skip the rest (at most 64 KiB) and then drop the
    connection anyway; the answer says `Connection: close` instead."""
    limit = settings.MAX_REQUEST_BODY_BYTES
    if (
        environ.get("wsgi.input_terminated")
        and not environ.get("CONTENT_LENGTH")
        and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    ):
        body = environ["wsgi.input"].read(limit + 1)
        environ["wsgi.input"] = BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        if len(body) > limit:
            _close_after(start_response)
    elif _declared_length(environ) > limit:
        _close_after(start_response)
    return django_application(environ, start_response)


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
