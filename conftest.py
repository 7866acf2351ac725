"""Shared test fixtures: spaces with keys, and an HTTP client whose every response is
checked against the OpenAPI document the service serves."""

import json
import os
import re
from functools import cache
from io import StringIO

import jsonschema
import pytest
from django.core.management import call_command
from django.forms import MultiWidget
from django.test import Client
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from spaces import services as space_services

# The webhook receivers and endpoints, for the webhook tests and the end-to-end event tests.
pytest_plugins = ["webhooks.tests.fixtures"]


def pytest_collection_modifyitems(config, items):
    """Tests that need what a run may not have are left out with a note (deselected, not
    skipped): PostgreSQL-only tests on the SQLite run (CI runs both), and browser tests
    without Chromium (Debian's package), except under CI, where they run and fail."""
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    on_postgresql = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://", "pgsql://"))
    reasons = {
        "postgresql": None if on_postgresql else "they run when DATABASE_URL is a PostgreSQL database",
        "browser": None if os.path.exists(chromium) or os.environ.get("CI") else (
            f"{chromium} not found (Debian: apt-get install chromium; or set CHROMIUM=/path/to/chromium)"),
    }
    for marker, reason in reasons.items():
        left_out = [item for item in items if item.get_closest_marker(marker)] if reason else []
        if left_out:
            items[:] = [item for item in items if not item.get_closest_marker(marker)]
            config.hook.pytest_deselected(items=left_out)
            config.pluginmanager.get_plugin("terminalreporter").write_line(f"note: {len(left_out)} {marker} test(s) deselected: {reason}")


@cache
def openapi_document() -> dict:
    response = Client().get("/v1/openapi")
    assert response.status_code == 200
    return response.json()


@cache
def _routes():
    routes = []
    for template, operations in openapi_document()["paths"].items():
        pattern = "^" + "[^/]+".join(re.escape(part) for part in re.split(r"\{[^}]+\}", template)) + "$"
        routes.append((re.compile(pattern), template, operations))
    return routes


@cache
def _registry() -> Registry:
    return Registry().with_resource("urn:openapi", Resource.from_contents(openapi_document(), default_specification=DRAFT202012))


def assert_conforms(method: str, path: str, response, content: bytes | None = None) -> None:
    """The response is one the OpenAPI document describes for this operation: a documented
    status, JSON, the body valid against its schema, and every required header present.
    `content`: the body of a streamed response, read already."""
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = json.loads(response.content if content is None else content)
    operation = template = None
    for pattern, template, operations in _routes():
        if pattern.match(path):
            operation = operations.get(method.lower())
            break
    if operation is None:
        # No documented operation: only the JSON 404 envelope is allowed.
        assert response.status_code == 404, (method, path, response.status_code)
        assert body["error"]["code"] == "NOT_FOUND"
        return
    documented = operation["responses"]
    status = str(response.status_code)
    assert status in documented, f"{method} {path}: status {status} is not documented"
    spec = documented[status]
    pointer = "/".join(
        part.replace("~", "~0").replace("/", "~1")
        for part in ("paths", template, method.lower(), "responses", status, "content", "application/json", "schema")
    )
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"urn:openapi#/{pointer}"},
        registry=_registry(),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )
    validator.validate(body)
    for name, header in spec.get("headers", {}).items():
        if header.get("required"):
            assert name in response, f"{method} {path} {status}: header {name} missing"


class Api:
    """A test client for `/v1`: JSON in, JSON out, every response schema-checked."""

    def __init__(self, key: str | None = None):
        self.client = Client()
        self.key = key

    def request(self, method: str, path: str, body=None, *, key=..., headers=None, raw: bytes | None = None,
                content_type: str = "application/json"):
        key = self.key if key is ... else key
        extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in (headers or {}).items()}
        if key is not None:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {key}"
        data = raw if raw is not None else (json.dumps(body) if body is not None else "")
        response = self.client.generic(method, path, data=data, content_type=content_type, **extra)
        content = b"".join(response.streaming_content) if response.streaming else response.content
        assert_conforms(method, path.split("?")[0], response, content)
        response.body = json.loads(content)
        return response

    def get(self, path, **kwargs):
        return self.request("GET", path, **kwargs)

    def post(self, path, body=None, **kwargs):
        return self.request("POST", path, body, **kwargs)

    def patch(self, path, body=None, **kwargs):
        return self.request("PATCH", path, body, **kwargs)

    def delete(self, path, **kwargs):
        return self.request("DELETE", path, **kwargs)


@pytest.fixture(autouse=True)
def fresh_maintenance_cache():
    """Each process caches the maintenance switch for a second, but every test's database is
    rolled back: forget what the previous test saw."""
    from core import maintenance

    maintenance._cached = None
    yield
    maintenance._cached = None


@pytest.fixture(autouse=True)
def forget_sqlite_counters():
    """On SQLite the rate-limit counters live in a database of their own
    (ratelimit.sqlite_counters), outside the transaction each test rolls back: emptied after
    each test, so that no count (a client address's, say) reaches the next."""
    yield
    from ratelimit import sqlite_counters

    sqlite_counters.clear()


@pytest.fixture
def make_space(db):
    """A factory: `make_space(pro=True)` returns (space, api_key)."""
    counter = iter(range(1, 10_000))

    def make(*, pro: bool = True, name: str | None = None):
        n = next(counter)
        space = space_services.create_space(
            name=name or f"Space {n}", owner_email=f"owner{n}-{id(counter)}@example.com", owner_name=f"Owner {n}", pro=pro
        )
        _, raw = space_services.create_key(space=space, name="test")
        return space, raw

    return make


@pytest.fixture
def space_and_key(make_space):
    return make_space()


@pytest.fixture
def space(space_and_key):
    return space_and_key[0]


@pytest.fixture
def api(space_and_key):
    """A client authenticated as a Pro space."""
    return Api(space_and_key[1])


@pytest.fixture
def anon():
    return Api(None)


# --- Operators: manage.py and the back office ----------------------------------------------


class Run:
    """`manage.py` in-process: `run("keys", "list", space_id)` returns the parsed `--json`
    output; `run.text(...)` the plain output. `run.stderr` holds the last stderr."""

    stderr = ""

    def __call__(self, *args):
        return json.loads(self._call(*args, "--json"))

    def text(self, *args) -> str:
        return self._call(*args)

    def _call(self, *args) -> str:
        out, err = StringIO(), StringIO()
        try:
            call_command(*args, stdout=out, stderr=err)
        finally:
            self.stderr = err.getvalue()
        return out.getvalue()


@pytest.fixture
def run(db):
    return Run()


@pytest.fixture
def superuser_client(db, client):
    """A test client logged in as a superuser (without password hashing: it is slow)."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create(username="operator", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def form_data(response) -> dict:
    """The POST data a browser would send for an admin form page as it stands (with its
    inline formsets)."""
    data = {}
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        forms += [inline.formset.management_form, *inline.formset.forms]
    for form in forms:
        for field in form:
            value = field.value()
            if isinstance(field.field.widget, MultiWidget):
                for index, part in enumerate(field.field.widget.decompress(value)):
                    data[f"{field.html_name}_{index}"] = "" if part is None else str(part)
            elif value is True:
                data[field.html_name] = "on"
            elif value is not None and value is not False:  # 0 is a value (0 == False)
                data[field.html_name] = str(value)
    return data


def admin_history(obj) -> list[tuple[str, str]]:
    """(staff username, what they did) of the object's back-office History, oldest first."""
    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType

    entries = LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(obj), object_id=str(obj.pk))
    return [(entry.user.username, entry.get_change_message()) for entry in entries.order_by("action_time", "id")]


@pytest.fixture
def request_overhead(api, monkeypatch) -> int:
    """The queries an authenticated request costs before its endpoint runs (the key, the rate
    limiter), measured on a request whose endpoint needs no query of its own ("-" cannot be
    a poll id). A warm-up request first settles the once-a-minute key bookkeeping, and the
    maintenance switch stays cached for the test, so that the count is exact."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core import maintenance

    maintenance._cached = None
    api.get("/v1/polls/-/results")
    monkeypatch.setattr(maintenance, "_CACHE_SECONDS", 3600.0)
    with CaptureQueriesContext(connection) as queries:
        response = api.get("/v1/polls/-/results")
    assert response.body["error"]["code"] == "POLL_NOT_FOUND"
    return len(queries.captured_queries)
