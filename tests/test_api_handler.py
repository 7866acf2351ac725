"""`/v1/` requests go through config.wsgi's ApiHandler, which leaves out the middleware only
the pages and the back office use (settings.PAGES_ONLY_MIDDLEWARE): every API answer is the
same as through the whole stack, and the pages keep theirs."""

import gc
import io
import json
import sys

import pytest
from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpResponse, HttpResponseBase
from rest_framework.request import Request
from rest_framework.views import APIView

from config import wsgi
from conftest import assert_conforms
from polls.tests.factories import date_poll_body, make_poll
from webhooks.services.endpoints import create_endpoint

# What differs from one request to the next whatever the stack.
VARYING = {"x-request-id", "ratelimit", "ratelimit-remaining", "ratelimit-reset", "date"}


def call(application, method: str, path: str, key: str | None = None, body: bytes = b"") -> tuple[str, dict, bytes]:
    path, _, query = path.partition("?")
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SERVER_NAME": "testserver",
        "SERVER_PORT": "80", "HTTP_HOST": "testserver", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "REMOTE_ADDR": "127.0.0.1", "CONTENT_LENGTH": str(len(body)),
    }
    if key:
        environ["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    if body:
        environ["CONTENT_TYPE"] = "application/json"
    started = []
    chunks = application(environ, lambda status, headers, exc_info=None: started.append((status, headers)))
    content = b"".join(chunks)
    getattr(chunks, "close", lambda: None)()
    status, headers = started[0]
    return status, {name.lower(): value for name, value in headers}, content


def test_the_api_leaves_out_only_the_pages_middleware():
    assert wsgi._handler({"PATH_INFO": "/v1/polls"}) is wsgi.api_application
    for path in ("/poll/abc", "/invite/abc", "/admin/", "/static/x.css", "/healthz", "/v1"):
        assert wsgi._handler({"PATH_INFO": path}) is wsgi.django_application
    assert settings.API_MIDDLEWARE[0] == "core.api.middleware.RequestContextMiddleware"
    assert set(settings.MIDDLEWARE) - set(settings.API_MIDDLEWARE) == settings.PAGES_ONLY_MIDDLEWARE
    api_chain = {type(middleware).__name__ for middleware in _chain(wsgi.api_application)}
    assert "SessionMiddleware" not in api_chain and "CsrfViewMiddleware" not in api_chain
    assert "XFrameOptionsMiddleware" in api_chain and "RequestContextMiddleware" in api_chain


def _chain(handler):
    """The middleware instances of a loaded handler, outermost first."""
    found, current = [], handler._middleware_chain
    while current is not None:
        middleware = getattr(current, "__closure__", None) and current.__closure__[0].cell_contents
        if middleware is None or not hasattr(middleware, "get_response"):
            break
        found.append(middleware)
        current = middleware.get_response
    return found


@pytest.mark.django_db(transaction=True)
def test_api_answers_are_the_same_through_the_whole_stack(space_and_key):
    space, key = space_and_key
    poll = make_poll(space, date_poll_body("2031-05-01", "2031-05-02"))
    body = json.dumps(date_poll_body("2031-06-01")).encode()
    requests = [
        ("GET", f"/v1/polls/{poll.pk}", key, b""),
        ("GET", "/v1/polls?limit=1", key, b""),
        ("GET", f"/v1/polls/{poll.pk}/results", key, b""),
        ("GET", "/v1/polls/nope", key, b""),
        ("GET", f"/v1/polls/{poll.pk}", None, b""),
        ("GET", f"/v1/polls/{poll.pk}", "sk_forged", b""),
        ("DELETE", "/v1/nothing-here", key, b""),
    ]
    for method, path, auth, payload in requests:
        api = call(wsgi.api_application, method, path, auth, payload)
        whole = call(wsgi.django_application, method, path, auth, payload)
        assert api[0] == whole[0], path
        assert api[2] == whole[2], path
        assert {k: v for k, v in api[1].items() if k not in VARYING} == {
            k: v for k, v in whole[1].items() if k not in VARYING}, path
        assert "set-cookie" not in api[1] and api[1]["x-frame-options"] == "DENY"
    created = [call(application, "POST", "/v1/polls", key, body) for application in (wsgi.api_application,
                                                                                       wsgi.django_application)]
    assert [status for status, _, _ in created] == ["201 Created"] * 2
    assert {k for k in created[0][1] if k not in VARYING} == {k for k in created[1][1] if k not in VARYING}


@pytest.mark.django_db(transaction=True)
def test_pages_keep_their_middleware(space_and_key):
    poll = make_poll(space_and_key[0], date_poll_body("2031-05-01"))
    status, headers, _ = call(wsgi.application, "GET", f"/invite/{poll.pk}")
    assert status == "200 OK"
    assert "content-security-policy" in headers
    assert "csrftoken" in headers.get("set-cookie", "")


VIEW_OBJECTS = (APIView, Request, WSGIRequest, HttpResponseBase)


@pytest.mark.django_db(transaction=True)
def test_an_answered_api_request_leaves_nothing_to_the_garbage_collector(space_and_key, settings):
    # core.api.views.ApiView.dispatch: a view, its request and its response no longer hold
    # one another once it has answered, so that refcounting frees them all at once. Each
    # request runs with the collector off; what a collection then finds unreachable would
    # have waited for one. Rendered now (json_response) and later (DRF's Response), errors too.
    # (The ORM's own cycles, such as a space and its subscription loaded together, are the
    # collector's: only the view's objects are looked for.)
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    space, key = space_and_key
    poll = make_poll(space, date_poll_body("2031-05-01", "2031-05-02"))
    create_endpoint(space=space, url="http://127.0.0.1:9/hook")
    body = json.dumps(date_poll_body("2031-06-01")).encode()
    requests = [
        ("POST", "/v1/polls", body),
        ("GET", f"/v1/polls/{poll.pk}", b""),
        ("GET", "/v1/polls?limit=1", b""),
        ("GET", f"/v1/polls/{poll.pk}/results", b""),
        ("GET", f"/v1/polls/{poll.pk}/participants", b""),
        ("GET", "/v1/webhooks", b""),
        ("POST", "/v1/polls", b'{"title": "no kind"}'),
        ("GET", "/v1/polls/nope", b""),
    ]
    for method, path, payload in requests:  # the first time of each: caches filled, statements prepared
        call(wsgi.application, method, path, key, payload)
    statuses = []
    for method, path, payload in requests:
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            status, headers, content = call(wsgi.application, method, path, key, payload)
            gc.collect()
            left = [type(found).__name__ for found in gc.garbage if isinstance(found, VIEW_OBJECTS)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        response = HttpResponse(content, status=int(status[:3]), headers=headers)
        assert_conforms(method, path.partition("?")[0], response)
        statuses.append(response.status_code)
        assert left == [], (method, path, left)
    assert statuses == [201, 200, 200, 200, 200, 200, 400, 404]
