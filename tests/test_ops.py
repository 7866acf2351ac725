"""Operations: `/healthz` and `/readyz`, the one access-log line per request (never a key),
and the JSON error envelope where DRF is not involved (unknown routes, crashes)."""

import json
import logging
import os
import socket
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.test import Client

from core import health
from core.logging import JsonFormatter
from spaces import services as space_services
from spaces.keys import KEY_LENGTH, SECRET_LENGTH
from spaces.models import ApiKey, Space

ROOT_MESSAGE = "No such route. The API is under /v1; its reference is at /docs and its OpenAPI document at /v1/openapi."
NOT_FOUND = {"error": {"code": "NOT_FOUND", "message": "No route matches this method and path."}}
INTERNAL_ERROR = {"error": {"code": "INTERNAL_ERROR", "message": "An unexpected error occurred."}}


@pytest.fixture
def client():
    """A client that enforces CSRF like a real deployment does (Django's test client skips it)."""
    return Client(enforce_csrf_checks=True)


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


def closed_port() -> int:
    """A local TCP port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def access_records(caplog) -> list[logging.LogRecord]:
    """The access-log records, less the schema-checking client's own (first) fetch of the
    OpenAPI document."""
    return [r for r in caplog.records if r.name == "service.access" and (r.method, r.path) != ("GET", "/v1/openapi")]


# --- /healthz and /readyz ------------------------------------------------------------------


def test_healthz_answers_without_a_key_whatever_the_client_accepts(client, db):
    response = client.get("/healthz", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "ok"}


def test_healthz_answers_in_maintenance_while_the_api_does_not(client, api, settings):
    settings.MAINTENANCE_MODE = True
    assert client.get("/healthz").json() == {"status": "ok"}
    assert api.get("/v1/polls").status_code == 503


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_health_routes_answer_only_get(client, db, debug, path, method):
    response = client.generic(method, path, data="{}", content_type="application/json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == NOT_FOUND


def test_health_routes_answer_head_with_404(client, db):
    assert client.head("/healthz").status_code == 404


def test_readyz_checks_the_database(client, db, settings):
    settings.REDIS_URL = ""
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok"}}


def test_readyz_checks_redis_when_configured(client, db, settings):
    settings.REDIS_URL = "redis://127.0.0.1:6379/4"
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "redis": "ok"}}


def test_readyz_is_503_when_redis_is_unreachable(client, db, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "unavailable", "checks": {"database": "ok", "redis": "unreachable"}}


def test_readyz_is_503_when_the_database_is_unreachable(client, db, settings, monkeypatch):
    class Unreachable:
        def cursor(self):
            raise OperationalError("connection refused")

    settings.REDIS_URL = ""
    monkeypatch.setattr(health, "connection", Unreachable())
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "checks": {"database": "unreachable"}}


# --- The access log ------------------------------------------------------------------------


def test_one_access_line_per_request_with_its_fields(api, space, caplog):
    caplog.set_level(logging.INFO, logger="service.access")
    response = api.get("/v1/polls?limit=5", headers={"X-Request-ID": "trace-42.a_b"})
    assert response.status_code == 200
    [record] = access_records(caplog)
    line = json.loads(JsonFormatter().format(record))
    assert line["logger"] == "service.access"
    assert line["level"] == "INFO"
    assert {key: line[key] for key in ("method", "path", "status", "space_id", "request_id")} == {
        "method": "GET",
        "path": "/v1/polls",
        "status": 200,
        "space_id": space.id,
        "request_id": "trace-42.a_b",
    }
    assert isinstance(line["duration_ms"], (int, float)) and line["duration_ms"] >= 0
    assert response["X-Request-ID"] == "trace-42.a_b"


@pytest.mark.parametrize("incoming", ["", "has spaces", "x" * 65, "semi;colon"])
def test_an_unusable_request_id_is_replaced(anon, db, caplog, incoming):
    caplog.set_level(logging.INFO, logger="service.access")
    response = anon.get("/v1/polls", headers={"X-Request-ID": incoming})
    assert response.status_code == 401
    [record] = access_records(caplog)
    assert record.space_id is None
    assert record.status == 401
    assert record.request_id == response["X-Request-ID"] != incoming
    assert len(record.request_id) == 32 and set(record.request_id) <= set("0123456789abcdef")


def test_each_request_gets_its_own_request_id(anon, db):
    first, second = anon.get("/v1/polls"), anon.get("/v1/polls")
    assert first["X-Request-ID"] != second["X-Request-ID"]


def test_the_authorization_header_never_reaches_the_log(make_space, anon, caplog, debug, monkeypatch):
    space, key = make_space()
    revoked_key, revoked = space_services.create_key(space=space, name="revoked")
    space_services.revoke_key(key=revoked_key)
    wrong = key[:-1] + ("A" if key[-1] != "A" else "B")
    caplog.set_level(logging.DEBUG)
    sent = [
        f"Bearer {key}",
        f"bearer {key}",
        f"Basic {key}",
        f"Bearer {key} extra",
        f"Bearer {revoked}",
        f"Bearer {wrong}",
    ]
    for header in sent:
        anon.get("/v1/polls", key=None, headers={"Authorization": header})
        anon.post("/v1/polls", {"title": "x"}, key=None, headers={"Authorization": header})
    monkeypatch.setattr("polls.selectors.list_polls", _crash)
    assert anon.get("/v1/polls", key=key).status_code == 500

    formatter = JsonFormatter()
    logged = caplog.text + "\n".join(formatter.format(record) for record in caplog.records)
    assert len(access_records(caplog)) == 2 * len(sent) + 1
    secret_part = slice(KEY_LENGTH - SECRET_LENGTH, None)
    for secret in (key, revoked, wrong, key[secret_part], revoked[secret_part]):
        assert secret not in logged


# --- The JSON envelope outside DRF ---------------------------------------------------------


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/nope"),
        ("POST", "/nope"),
        ("GET", "/v1"),
        ("GET", "/v1/"),
        ("GET", "/v1/nope"),
        ("POST", "/v1/nope"),
        ("POST", "/v1/openapi"),
        ("DELETE", "/v1/openapi"),
        ("GET", "/v1/polls/"),
        ("PUT", "/v1/polls"),
        ("PATCH", "/v1/polls/abcdefABCDEF"),
        ("GET", "/v1/polls/abcdefABCDEF/nope/deeper"),
    ],
)
def test_unknown_routes_and_methods_give_the_json_404(client, api, debug, caplog, method, path):
    caplog.set_level(logging.INFO, logger="service.access")
    # `/` says where the API and its reference are (tests/test_docs.py).
    expected = NOT_FOUND if path != "/" else {"error": {**NOT_FOUND["error"], "message": ROOT_MESSAGE}}
    for headers in ({}, {"HTTP_AUTHORIZATION": f"Bearer {api.key}"}, {"HTTP_ACCEPT": "text/html"}):
        response = client.generic(method, path, data="{}", content_type="application/json", **headers)
        assert response.status_code == 404, (method, path, headers)
        assert response["Content-Type"] == "application/json"
        assert response.json() == expected
    assert [record.status for record in access_records(caplog)] == [404, 404, 404]
    # The schema-checking client agrees: no documented operation, so only the 404 envelope.
    assert api.request(method, path).body == expected


def _crash(*args, **kwargs):
    raise RuntimeError("secret internal detail: /srv/app/polls/selectors.py password=hunter2")


def test_a_crash_inside_a_view_is_a_500_envelope_that_leaks_nothing(api, debug, caplog, monkeypatch):
    monkeypatch.setattr("polls.selectors.list_polls", _crash)
    caplog.set_level(logging.INFO)
    response = api.get("/v1/polls")
    assert response.status_code == 500
    assert response.body == INTERNAL_ERROR
    for leak in (b"secret", b"hunter2", b"Traceback", b"RuntimeError", b"selectors"):
        assert leak not in response.content
    _assert_crash_logged(caplog, response, "/v1/polls")


def test_a_crash_outside_drf_is_a_500_envelope_that_leaks_nothing(client, db, debug, caplog, monkeypatch):
    monkeypatch.setattr(health, "_check_database", _crash)
    caplog.set_level(logging.INFO)
    response = client.get("/readyz")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == INTERNAL_ERROR
    for leak in (b"secret", b"hunter2", b"Traceback", b"RuntimeError"):
        assert leak not in response.content
    _assert_crash_logged(caplog, response, "/readyz")


def _assert_crash_logged(caplog, response, path):
    """The crash is logged once with its traceback and the request id the client was given,
    and the access log records the 500."""
    [crash] = [record for record in caplog.records if record.name == "service.errors"]
    assert crash.levelno == logging.ERROR
    assert crash.request_id == response["X-Request-ID"]
    assert crash.exc_info[0] is RuntimeError
    assert "hunter2" in JsonFormatter().format(crash)  # operators see the details; clients don't
    [access] = access_records(caplog)
    assert (access.path, access.status, access.request_id) == (path, 500, response["X-Request-ID"])


# --- manage.py demo ------------------------------------------------------------------------


def demo(*args) -> str:
    out = StringIO()
    call_command("demo", *args, stdout=out)
    return out.getvalue()


def test_demo_makes_the_space_once_and_a_working_key_each_run(anon, db):
    first = json.loads(demo("--json"))
    runs = [json.loads(demo("--json", "--base-url", "http://api.test:9000/")) for _ in range(11)]
    last = runs[-1]
    assert first["spaceCreated"] is True and not any(run["spaceCreated"] for run in runs)
    assert {run["spaceId"] for run in runs} == {first["spaceId"]}
    assert last["ownerEmail"] == "demo@example.com" and last["baseUrl"] == "http://api.test:9000"
    space = Space.objects.get()
    assert space.is_pro and space.owner.email == "demo@example.com"
    # Only the newest demo key works: older ones are revoked, so the space stays under its limit.
    active = ApiKey.objects.filter(space=space, revoked_at__isnull=True)
    assert [key.id for key in active] == [last["keyId"]]
    assert ApiKey.objects.filter(space=space).count() == 12
    assert anon.get("/v1/polls", key=last["key"]).status_code == 200
    assert anon.get("/v1/polls", key=first["key"]).status_code == 401


def test_demo_restores_pro_and_keeps_other_keys(anon, db):
    space_id = json.loads(demo("--json"))["spaceId"]
    space = Space.objects.get(pk=space_id)
    space_services.set_plan(space=space, pro=False)
    other, other_raw = space_services.create_key(space=space, name="ci")
    text = demo()
    [key] = [word for word in text.split() if word.startswith("sk_")][:1]
    assert f"curl -s http://localhost:8000/v1/polls -H 'Authorization: Bearer {key}'" in text
    assert anon.get("/v1/polls", key=key).status_code == 200
    assert anon.get("/v1/polls", key=other_raw).status_code == 200
    assert Space.objects.count() == 1


def test_demo_refuses_a_bad_email(db):
    with pytest.raises(CommandError, match="not a valid e-mail address"):
        demo("--email", "not-an-address")
    assert not Space.objects.exists()


def test_demo_keys_of_another_name_stay_valid(anon, db):
    """bin/serve names its key after its port: a second server never revokes the first's."""
    first = json.loads(demo("--json", "--key-name", "demo (port 8000)"))
    second = json.loads(demo("--json", "--key-name", "demo (port 9000)"))
    again = json.loads(demo("--json", "--key-name", "demo (port 9000)"))
    assert anon.get("/v1/polls", key=first["key"]).status_code == 200
    assert anon.get("/v1/polls", key=second["key"]).status_code == 401
    assert anon.get("/v1/polls", key=again["key"]).status_code == 200


# --- bin/serve and settings that follow PORT -------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def test_bin_serve_on_a_busy_port_stops_before_changing_anything(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        database = tmp_path / "db.sqlite3"
        env = {**os.environ, "PORT": str(port), "HOST": "127.0.0.1", "DATABASE_URL": f"sqlite:///{database}"}
        done = subprocess.run(["bin/serve"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f"error: cannot listen on 127.0.0.1:{port}" in done.stderr
    assert f"PORT={port + 1} ./bin/serve" in done.stderr
    assert not database.exists()  # not migrated, no demo key made or revoked


@pytest.mark.parametrize("environment,expected", [
    ({"PORT": "9123"}, ("http://localhost:9123", "http://localhost:9123/cdn")),
    ({"PORT": "9123", "APP_URL": "https://app.example.com/", "CDN_URL": "https://cdn.example.com"},
     ("https://app.example.com", "https://cdn.example.com")),
])
def test_app_and_cdn_urls_default_to_the_served_port(environment, expected):
    env = {key: value for key, value in os.environ.items() if key not in ("APP_URL", "CDN_URL", "PORT")}
    code = "from django.conf import settings; print(settings.APP_URL, settings.CDN_URL)"
    done = subprocess.run([sys.executable, "manage.py", "shell", "-v0", "-c", code], cwd=ROOT, env={**env, **environment},
                          capture_output=True, text=True, timeout=60, check=True)
    assert tuple(done.stdout.split()) == expected


# --- Database failures on the request path -------------------------------------------------


def _database_down(*args, **kwargs):
    raise OperationalError("connection to server at 10.0.0.5 failed: Connection refused")


def test_a_database_error_inside_a_view_is_a_503_with_retry_after(api, caplog, monkeypatch):
    monkeypatch.setattr("polls.selectors.list_polls", _database_down)
    response = api.get("/v1/polls")
    assert (response.status_code, response["Retry-After"]) == (503, "30")
    assert response.body == {"error": {"code": "SERVICE_UNAVAILABLE",
                                       "message": "The database is unavailable; try again later."}}
    assert b"10.0.0.5" not in response.content
    assert any(record.getMessage() == "database unavailable" for record in caplog.records)


def test_a_database_error_before_any_view_is_a_503_too(anon, db, monkeypatch):
    """The maintenance check runs first, in the base view: the database fails there."""
    monkeypatch.setattr("core.api.views.maintenance_enabled", _database_down)
    response = anon.get("/v1/polls")
    assert (response.status_code, response["Retry-After"], response.body["error"]["code"]) == (
        503, "30", "SERVICE_UNAVAILABLE")


@pytest.mark.parametrize("mode, refused", [("Celery", True), ("thread", True), ("celery", False), ("embedded", False)])
def test_an_unknown_webhook_dispatch_mode_stops_the_service_at_startup(mode, refused):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "WEBHOOKS_DISPATCH": mode}
    done = subprocess.run([sys.executable, "manage.py", "check"], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[1])
    assert (done.returncode != 0) == refused
    assert (f"WEBHOOKS_DISPATCH must be embedded or celery, not {mode!r}" in done.stderr) == refused
