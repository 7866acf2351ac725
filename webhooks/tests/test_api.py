"""`/v1/webhooks` over HTTP: create, read, list, change and delete, their refusals, space
isolation, and constant query counts (the rotation: test_api_rotate_secret.py; pings and the
delivery log: test_api_deliveries.py). Every response is checked against the served OpenAPI
document by the `Api` client."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conftest import Api
from polls.tests.factories import date_poll_body
from webhooks import services
from webhooks.models import EVENT_TYPES, Delivery, Endpoint
from webhooks.tests.fixtures import run_worker

INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SECRET = re.compile(r"^whsec_[A-Za-z0-9_-]{43}$")
PUBLIC_URL = "https://93.184.216.34/hook"  # a literal public address: no DNS needed


@pytest.fixture
def other(make_space):
    """A second Pro space, its client, and an endpoint of it."""
    space, key = make_space()
    endpoint, _ = services.create_endpoint(space=space, url=PUBLIC_URL)
    return space, Api(key), endpoint


def create(api, url, **body):
    return api.post("/v1/webhooks", {"url": url, **body})


# --- Create, read, list --------------------------------------------------------------------


def test_create_answers_the_secret_once(api, space, local_urls, receiver):
    url = receiver.url_for("/hook")
    r = create(api, url, events=["poll.deleted", "poll.created"])
    assert r.status_code == 201
    data = r.body["data"]
    endpoint = Endpoint.objects.get()
    assert data == {
        "id": endpoint.id, "url": url, "events": ["poll.created", "poll.deleted"], "enabled": True,
        "payloadVersion": "2026-09-20", "createdAt": data["createdAt"], "disabledAt": None, "disabledReason": None,
        "failedInARow": 0, "previousSecretExpiresAt": None, "secret": endpoint.secret,
    }
    assert SECRET.match(data["secret"]) and INSTANT.match(data["createdAt"])
    assert (endpoint.space_id, endpoint.event_types) == (space.id, ["poll.created", "poll.deleted"])
    shown = api.get(f"/v1/webhooks/{endpoint.id}").body["data"]
    assert "secret" not in shown and shown == {k: v for k, v in data.items() if k != "secret"}
    assert "secret" not in api.get("/v1/webhooks").body["data"][0]


def test_every_event_type_by_default(api):
    r = create(api, PUBLIC_URL)
    assert r.status_code == 201 and r.body["data"]["events"] == list(EVENT_TYPES)


@pytest.mark.parametrize(
    "body, message",
    [
        ({"url": PUBLIC_URL, "events": ["poll.exploded"]}, "events[0]: must be one of: poll.created, "),
        ({"url": PUBLIC_URL, "events": ["ping"]}, "events[0]: must be one of: "),
        ({"url": PUBLIC_URL, "events": ["poll.created", "poll.created"]}, "events[1]: repeated"),
        ({"url": PUBLIC_URL, "events": []}, "events: must have at least 1 items"),
        ({"url": PUBLIC_URL, "events": "poll.created"}, "events: must be an array"),
        ({"url": PUBLIC_URL, "secret": "whsec_mine"}, "secret: unknown field"),
        ({"url": PUBLIC_URL, "enabled": False}, "enabled: unknown field"),
        ({"events": ["poll.created"]}, "url: required"),
        ({"url": 5}, "url: must be a string"),
        ({"url": "http://93.184.216.34/x"}, "url: the URL must start with https://"),
        ({"url": "https://10.0.0.1/x"}, "url: 10.0.0.1 is in 10.0.0.0/8: private use (RFC 1918); webhooks are only sent to public addresses"),
        ({"url": "https://127.0.0.1/x"}, "url: 127.0.0.1 is in 127.0.0.0/8: loopback (RFC 1122)"),
        ({"url": "https://[::ffff:10.0.0.1]/x"}, "url: ::ffff:a00:1 is in ::ffff:0:0/96: IPv4-mapped (RFC 4291)"),
        ({"url": "https://user:pw@93.184.216.34/x"}, "url: the URL must not contain a user name or password"),
        ({"url": "https://" + "a" * 2048}, "url: must be at most 2048 characters"),
    ],
)
def test_create_refusals_store_nothing(api, body, message):
    r = api.post("/v1/webhooks", body)
    assert r.status_code == 400 and r.body["error"]["code"] == "VALIDATION_ERROR"
    assert r.body["error"]["message"].startswith(message), r.body["error"]["message"]
    assert Endpoint.objects.count() == 0


def test_five_endpoints_per_space(api, make_space):
    ids = [create(api, f"{PUBLIC_URL}/{n}").body["data"]["id"] for n in range(5)]
    r = create(api, f"{PUBLIC_URL}/6")
    assert r.status_code == 400 and r.body["error"] == {
        "code": "TOO_MANY_WEBHOOKS", "message": "a space may have at most 5 webhook endpoints; remove one first",
    }
    assert Endpoint.objects.count() == 5
    _, key = make_space()
    assert create(Api(key), PUBLIC_URL).status_code == 201  # per space
    api.delete(f"/v1/webhooks/{ids[0]}")
    assert create(api, f"{PUBLIC_URL}/7").status_code == 201


def test_list_newest_first_with_cursor(api, space, make_space):
    ids = [create(api, f"{PUBLIC_URL}/{n}").body["data"]["id"] for n in range(5)]
    first = api.get("/v1/webhooks?limit=2")
    assert [w["id"] for w in first.body["data"]] == ids[::-1][:2]
    second = api.get(f"/v1/webhooks?limit=2&cursor={first.body['nextCursor']}")
    last = api.get(f"/v1/webhooks?limit=2&cursor={second.body['nextCursor']}")
    assert [w["id"] for w in second.body["data"] + last.body["data"]] == ids[::-1][2:]
    assert last.body["nextCursor"] is None
    assert api.get("/v1/webhooks").body == {"data": api.get("/v1/webhooks?limit=5").body["data"], "nextCursor": None}
    # A cursor of another space, or of the delivery log, is refused.
    _, key = make_space()
    r = Api(key).get(f"/v1/webhooks?cursor={first.body['nextCursor']}")
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert r.body["error"]["message"] == "cursor: not a cursor issued by this service for this list"


@pytest.mark.parametrize(
    "query, message",
    [
        ("limit=0", "limit: must be at least 1"),
        ("limit=101", "limit: must be at most 100"),
        ("limit=x", "limit: must be an integer"),
        ("limit=1&limit=2", "limit: given more than once"),
        ("status=open", "status: unknown field"),
    ],
)
def test_list_query_is_strict(api, query, message):
    r = api.get(f"/v1/webhooks?{query}")
    assert (r.status_code, r.body["error"]["code"], r.body["error"]["message"]) == (400, "VALIDATION_ERROR", message)


# --- Space isolation, authentication, Pro --------------------------------------------------


@pytest.mark.parametrize(
    "method, suffix, body",
    [
        ("GET", "", None), ("PATCH", "", {"enabled": False}), ("DELETE", "", None),
        ("POST", "/rotate-secret", None), ("POST", "/ping", None), ("GET", "/deliveries", None),
    ],
)
def test_another_spaces_endpoint_is_not_found_and_unchanged(api, other, method, suffix, body):
    _, _, endpoint = other
    before = Endpoint.objects.values().get(pk=endpoint.pk)
    r = api.request(method, f"/v1/webhooks/{endpoint.id}{suffix}", body)
    assert r.status_code == 404
    assert r.body["error"] == {"code": "WEBHOOK_NOT_FOUND", "message": "Webhook endpoint not found."}
    assert Endpoint.objects.values().get(pk=endpoint.pk) == before
    assert not Delivery.objects.exists()
    for missing in ("nosuchendpoint0000000000", "-", "UPPER"):
        r = api.request(method, f"/v1/webhooks/{missing}{suffix}", body)
        assert (r.status_code, r.body["error"]["code"]) == (404, "WEBHOOK_NOT_FOUND")


def test_an_id_that_cannot_be_one_needs_no_query(api, request_overhead, django_assert_num_queries):
    with django_assert_num_queries(request_overhead):
        assert api.get("/v1/webhooks/Not-An-Id").body["error"]["code"] == "WEBHOOK_NOT_FOUND"


def test_authentication_and_pro_gate(make_space, anon, other):
    _, _, endpoint = other
    space, key = make_space(pro=False)
    for method, path in [("GET", "/v1/webhooks"), ("POST", "/v1/webhooks"), ("GET", f"/v1/webhooks/{endpoint.id}")]:
        r = Api(key).request(method, path, {"url": PUBLIC_URL} if method == "POST" else None)
        assert (r.status_code, r.body["error"]["code"]) == (403, "SPACE_NOT_PRO")
        r = anon.request(method, path)
        assert (r.status_code, r.body["error"]["code"]) == (401, "UNAUTHORIZED")
    assert Endpoint.objects.count() == 1


def test_query_parameters_are_refused_where_there_are_none(api, other):
    endpoint_id = create(api, PUBLIC_URL).body["data"]["id"]
    for method, suffix in [("GET", ""), ("DELETE", ""), ("POST", "/rotate-secret"), ("POST", "/ping")]:
        r = api.request(method, f"/v1/webhooks/{endpoint_id}{suffix}?verbose=1")
        assert (r.status_code, r.body["error"]["message"]) == (400, "verbose: unknown field")
    assert Endpoint.objects.filter(pk=endpoint_id).exists()


def test_rate_limited_like_every_operation(api, settings):
    settings.RATELIMIT_PER_MINUTE = 2
    assert api.get("/v1/webhooks").status_code == 200
    r = create(api, PUBLIC_URL)
    assert r.status_code == 201 and r["RateLimit-Remaining"] == "0"
    r = create(api, PUBLIC_URL)
    assert (r.status_code, r.body["error"]["code"]) == (429, "RATE_LIMIT_EXCEEDED")
    assert Endpoint.objects.count() == 1


# --- Change and delete ----------------------------------------------------------------------


def test_patch_changes_only_what_is_given(api, local_urls, receiver):
    endpoint_id = create(api, PUBLIC_URL).body["data"]["id"]
    r = api.patch(f"/v1/webhooks/{endpoint_id}", {"events": ["poll.closed"]})
    assert r.status_code == 200 and r.body["data"]["events"] == ["poll.closed"] and r.body["data"]["url"] == PUBLIC_URL
    r = api.patch(f"/v1/webhooks/{endpoint_id}", {"url": receiver.url_for("/new")})
    assert r.body["data"]["url"] == receiver.url_for("/new") and r.body["data"]["events"] == ["poll.closed"]
    assert api.patch(f"/v1/webhooks/{endpoint_id}", {}).body == r.body
    endpoint = Endpoint.objects.get()
    assert (endpoint.url, endpoint.event_types) == (receiver.url_for("/new"), ["poll.closed"])


def test_disable_cancels_pending_and_enable_starts_afresh(api, space, hook):
    endpoint, _ = hook
    endpoint.failure_streak = 3
    endpoint.save()
    api.post("/v1/polls", date_poll_body("2030-01-02"))
    services.fan_out()
    r = api.patch(f"/v1/webhooks/{endpoint.id}", {"enabled": False})
    data = r.body["data"]
    assert (data["enabled"], data["disabledReason"]) == (False, "disabled through the API")
    assert INSTANT.match(data["disabledAt"])
    assert Delivery.objects.get().status == Delivery.Status.CANCELED
    r = api.patch(f"/v1/webhooks/{endpoint.id}", {"enabled": True})
    data = r.body["data"]
    assert (data["enabled"], data["disabledAt"], data["disabledReason"], data["failedInARow"]) == (True, None, None, 0)
    assert api.patch(f"/v1/webhooks/{endpoint.id}", {"enabled": True}).body["data"] == data  # no change


@pytest.mark.parametrize(
    "body, message",
    [
        ({"url": "https://10.0.0.1/x", "events": ["poll.closed"]}, "url: 10.0.0.1 is in 10.0.0.0/8: private use"),
        ({"events": ["poll.closed", "nope"], "enabled": False}, "events[1]: must be one of: "),
        ({"enabled": "false", "url": PUBLIC_URL + "/2"}, "enabled: must be a boolean"),
        ({"url": None}, "url: must not be null"),
        ({"secret": "x"}, "secret: unknown field"),
        ({"id": "x"}, "id: unknown field"),
    ],
)
def test_patch_refusals_change_nothing(api, body, message):
    endpoint_id = create(api, PUBLIC_URL).body["data"]["id"]
    before = Endpoint.objects.values().get()
    r = api.patch(f"/v1/webhooks/{endpoint_id}", body)
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert r.body["error"]["message"].startswith(message), r.body["error"]["message"]
    assert Endpoint.objects.values().get() == before


def test_patch_needs_a_json_body(api):
    endpoint_id = create(api, PUBLIC_URL).body["data"]["id"]
    r = api.request("PATCH", f"/v1/webhooks/{endpoint_id}", raw=b"")
    assert (r.status_code, r.body["error"]["message"]) == (400, "body: a JSON object is required")


def test_delete_removes_the_endpoint_and_its_log(api, hook):
    endpoint, _ = hook
    api.post("/v1/polls", date_poll_body("2030-01-02"))
    services.fan_out()
    r = api.delete(f"/v1/webhooks/{endpoint.id}")
    assert r.status_code == 200 and r.body == {"data": {"id": endpoint.id, "deleted": True}}
    assert not Endpoint.objects.exists() and not Delivery.objects.exists()
    r = api.delete(f"/v1/webhooks/{endpoint.id}")
    assert (r.status_code, r.body["error"]["code"]) == (404, "WEBHOOK_NOT_FOUND")


# --- Constant query counts ---------------------------------------------------------------------


def _queries(call) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured.captured_queries)


def test_constant_queries_however_many_endpoints_and_deliveries(api, hook, receiver, request_overhead):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("down", status=500)
    counts = {}
    for size in (1, 4):
        while Endpoint.objects.count() < size:
            create(api, f"{PUBLIC_URL}/{Endpoint.objects.count()}")
        while Delivery.objects.count() < size * 3:
            api.post("/v1/polls", date_poll_body("2030-01-02"))
            run_worker()
        counts[size] = (
            _queries(lambda: api.get("/v1/webhooks")),
            _queries(lambda: api.get(f"/v1/webhooks/{endpoint.id}/deliveries")),
            _queries(lambda: api.get(f"/v1/webhooks/{endpoint.id}")),
        )
    assert counts[1] == counts[4] == (request_overhead + 1, request_overhead + 3, request_overhead + 1)
