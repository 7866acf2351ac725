"""What bench/endpoints.py serves with gunicorn: the service's own WSGI application
(config.wsgi, with its body reader and request slots), plus three baselines that answer fixed
bytes (BENCH_BODY_FILE, the bytes of `GET /v1/polls/{id}`):

- `GET /bench/wsgi`: a bare WSGI callable, before Django;
- `GET /bench/view`: a bare Django view behind the service's middleware, URL routing and
  request slots, the floor of what any endpoint of this Django project can do;
- `GET /bench/round-trips`: that view plus the round trips every API request makes, with
  nothing in them: `SELECT 1` where the key lookup runs its statement and, with a
  `REDIS_URL`, a `PING` where the rate limiter runs its script (core.redis_commands). The
  floor of an authenticated, rate-limited read in that configuration.

    gunicorn --config config/gunicorn.py bench.app:application
"""

import os
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.http import HttpResponse
from django.urls import path

from config.wsgi import application as service  # sets DJANGO_SETTINGS_MODULE and Django up
from core.redis_commands import shared

BODY = Path(os.environ["BENCH_BODY_FILE"]).read_bytes()
_HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def bare_view(request):
    return HttpResponse(BODY, content_type="application/json")


def round_trips_view(request):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    if settings.REDIS_URL:
        shared(settings.REDIS_URL, settings.RATELIMIT_STORE_TIMEOUT).run("PING")  # the limiter's connections
    return HttpResponse(BODY, content_type="application/json")


def _route_bare_view() -> None:
    """Before the catch-all 404 route; URLs are resolved on the first request, after this."""
    from config import urls  # needs Django set up

    urls.urlpatterns[:0] = [path("bench/view", bare_view), path("bench/round-trips", round_trips_view)]


_route_bare_view()


def application(environ, start_response):
    if environ.get("PATH_INFO") == "/bench/wsgi":
        start_response("200 OK", _HEADERS)
        return [BODY]
    return service(environ, start_response)
