import os
from io import BytesIO

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from django.conf import settings  # noqa: E402  (configured by the line above)


def application(environ, start_response):
    """Django's application, able to read a `Transfer-Encoding: chunked` request body.

    Gunicorn decodes such a body and says so with `wsgi.input_terminated`, but it has no
    CONTENT_LENGTH, and Django reads only CONTENT_LENGTH bytes: it would see an empty body.
    Read it here, at most one byte more than MAX_REQUEST_BODY_BYTES so that the parser can
    still refuse it as too large, and give Django its length."""
    if (
        environ.get("wsgi.input_terminated")
        and not environ.get("CONTENT_LENGTH")
        and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    ):
        body = environ["wsgi.input"].read(settings.MAX_REQUEST_BODY_BYTES + 1)
        environ["wsgi.input"] = BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
    return django_application(environ, start_response)
