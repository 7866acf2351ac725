"""A body sent to an operation that documents none is refused (VALIDATION_ERROR) and
changes nothing: a client that sends `{"secret": ...}` to a rotation must learn that it was
not used, not get a random secret silently. Every such operation of the served OpenAPI
document is tried, so that a new one cannot forget it."""

import json

import pytest

from conftest import openapi_document
from polls.models import Poll
from webhooks.models import Delivery, Endpoint

PUBLIC_URL = "https://93.184.216.34/hook"  # a literal public address: no DNS needed
MESSAGE = "body: this operation takes no body"


def bodiless_operations() -> list[tuple[str, str]]:
    return [
        (method.upper(), template)
        for template, operations in openapi_document()["paths"].items()
        for method, operation in operations.items()
        if method in ("get", "post", "put", "patch", "delete") and "requestBody" not in operation
    ]


@pytest.fixture
def ids(api):
    poll = api.post("/v1/polls", {"title": "Lunch", "kind": "date", "options": [{"date": "2030-05-02"}]}).body["data"]
    endpoint = api.post("/v1/webhooks", {"url": PUBLIC_URL}).body["data"]
    return {"pollId": poll["id"], "webhookId": endpoint["id"], "participantId": "nosuchparticipant"}


def snapshot() -> tuple:
    return (list(Poll.objects.values()), list(Endpoint.objects.values()), Delivery.objects.count())


def test_every_operation_without_a_documented_body_refuses_one(api, ids):
    operations = bodiless_operations()
    # The document names them: reads, deletions, the rotation and the ping.
    assert {("POST", "/v1/webhooks/{webhookId}/rotate-secret"), ("POST", "/v1/webhooks/{webhookId}/ping"),
            ("DELETE", "/v1/polls/{pollId}"), ("DELETE", "/v1/webhooks/{webhookId}"), ("GET", "/v1/polls")} <= set(operations)
    before = snapshot()
    for method, template in operations:
        path = template.format(**ids)
        for raw in (b'{"secret": "whsec_0123456789abcdef0123456789abcdef"}', b"{}", b"x"):
            r = api.request(method, path, raw=raw)
            assert (r.status_code, r.body["error"]["code"], r.body["error"]["message"]) == (400, "VALIDATION_ERROR", MESSAGE), (
                method, path, raw)
    assert snapshot() == before


def test_no_body_or_an_empty_one_is_still_served(api, ids):
    r = api.post(f"/v1/webhooks/{ids['webhookId']}/rotate-secret", raw=b"")
    assert r.status_code == 200 and r.body["data"]["secret"].startswith("whsec_")
    r = api.request("GET", f"/v1/polls/{ids['pollId']}", headers={"Content-Length": "0"})
    assert r.status_code == 200


def test_a_body_is_refused_before_the_operation_looks_anything_up(api):
    # Even for an endpoint that does not exist: the request is malformed first.
    r = api.post("/v1/webhooks/nosuchendpoint/ping", raw=json.dumps({"x": 1}).encode())
    assert (r.status_code, r.body["error"]["message"]) == (400, MESSAGE)
