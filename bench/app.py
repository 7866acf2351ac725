"""What bench/endpoints.py serves with gunicorn: the service's own WSGI application
(config.wsgi, with its body reader and request slots), plus two baselines that answer fixed
bytes (BENCH_BODY_FILE, the bytes of `GET /v1/polls/{id}`):

- `GET /bench/wsgi`: a bare WSGI callable, before Django;
- `GET /bench/view`: a bare Django view behind the service's middleware, URL routing and
  request slots, the floor of what any endpoint of this Django project can do.

    gunicorn --config config/gunicorn.py bench.app:application
"""

import os
from pathlib import Path

from django.http import HttpResponse
from django.urls import path

from config.wsgi import application as service  # sets DJANGO_SETTINGS_MODULE and Django up

BODY = Path(os.environ["BENCH_BODY_FILE"]).read_bytes()
_HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def bare_view(request):
    return HttpResponse(BODY, content_type="application/json")


def _route_bare_view() -> None:
    """Before the catch-all 404 route; URLs are resolved on the first request, after this."""
    from config import urls  # needs Django set up

    urls.urlpatterns.insert(0, path("bench/view", bare_view))


_route_bare_view()


def application(environ, start_response):
    if environ.get("PATH_INFO") == "/bench/wsgi":
        start_response("200 OK", _HEADERS)
        return [BODY]
    return service(environ, start_response)
