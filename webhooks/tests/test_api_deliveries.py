"""`POST /v1/webhooks/{id}/ping` and `GET /v1/webhooks/{id}/deliveries` over HTTP: a ping
answered at once and sent by the dispatcher, a refused one logged and never retried, the
delivery log newest first with its attempts. Every response is checked against the served
OpenAPI document by the `Api` client."""

import re

from polls.tests.factories import date_poll_body
from webhooks import services
from webhooks.tests.fixtures import received, run_worker, verify

INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PUBLIC_URL = "https://93.184.216.34/hook"  # a literal public address: no DNS needed


# --- Ping and the delivery log ---------------------------------------------------------------


def test_ping_answers_202_at_once_and_the_dispatcher_sends_it(api, hook, receiver):
    endpoint, secret = hook
    receiver.expect_request("/hook").respond_with_data("pong")
    r = api.post(f"/v1/webhooks/{endpoint.id}/ping")
    assert r.status_code == 202
    data = r.body["data"]
    assert (data["status"], data["attempts"], data["finishedAt"]) == ("pending", [], None)
    assert data["event"]["type"] == "ping"
    assert received(receiver) == []  # the request did not wait for the receiver
    assert run_worker() == 1
    [request] = received(receiver)
    assert request["body"]["type"] == "ping" and request["body"]["data"] == {}
    assert verify(request["raw"], request["headers"], secret)
    assert data["event"] == {"id": request["body"]["id"], "type": "ping", "createdAt": request["body"]["createdAt"]}
    [logged] = api.get(f"/v1/webhooks/{endpoint.id}/deliveries").body["data"]
    assert logged["id"] == data["id"]
    assert (logged["status"], logged["nextAttemptAt"]) == ("succeeded", None) and INSTANT.match(logged["finishedAt"])
    [attempt] = logged["attempts"]
    assert attempt["id"] == request["headers"]["X-Service-Delivery"]
    assert (attempt["statusCode"], attempt["succeeded"], attempt["error"]) == (200, True, None)
    assert isinstance(attempt["durationMs"], int) and INSTANT.match(attempt["startedAt"])


def test_a_refused_ping_is_reported_in_the_log_and_never_retried(api, hook, receiver, clock):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("nope", status=503)
    services.disable_endpoint(endpoint=endpoint)  # a ping goes out even so
    assert api.post(f"/v1/webhooks/{endpoint.id}/ping").status_code == 202
    run_worker()
    clock.shift(3600)
    assert run_worker() == 0
    [data] = api.get(f"/v1/webhooks/{endpoint.id}/deliveries").body["data"]
    assert data["status"] == "failed"
    [attempt] = data["attempts"]
    assert (attempt["statusCode"], attempt["succeeded"]) == (503, False) and "503" in attempt["error"]
    assert len(received(receiver)) == 1
    endpoint.refresh_from_db()
    assert endpoint.failure_streak == 0  # a test ping does not count


def test_deliveries_newest_first_with_attempts(api, hook, receiver, clock):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("down", status=500)
    api.post("/v1/polls", date_poll_body("2030-01-02"))
    run_worker()
    clock.shift(61)
    run_worker()  # the first retry
    clock.shift(1)
    receiver.clear_all_handlers()
    receiver.expect_request("/hook").respond_with_data("ok")
    poll_id = api.post("/v1/polls", date_poll_body("2030-01-03")).body["data"]["id"]
    run_worker()
    r = api.get(f"/v1/webhooks/{endpoint.id}/deliveries")
    newest, oldest = r.body["data"]
    assert r.body["nextCursor"] is None
    assert (newest["event"]["type"], newest["status"], len(newest["attempts"])) == ("poll.created", "succeeded", 1)
    assert newest["attempts"][0]["statusCode"] == 200
    assert (oldest["status"], len(oldest["attempts"])) == ("pending", 2)
    assert INSTANT.match(oldest["nextAttemptAt"])
    assert [a["statusCode"] for a in oldest["attempts"]] == [500, 500]
    assert all(a["error"] and not a["succeeded"] and a["finishedAt"] for a in oldest["attempts"])
    assert oldest["attempts"][0]["startedAt"] < oldest["attempts"][1]["startedAt"]
    assert {d["attempts"][-1]["id"] for d in r.body["data"]} <= {x["headers"]["X-Service-Delivery"] for x in received(receiver)}
    assert [x["body"]["data"]["poll"]["id"] for x in received(receiver)][-1] == poll_id

    page = api.get(f"/v1/webhooks/{endpoint.id}/deliveries?limit=1")
    assert [d["id"] for d in page.body["data"]] == [newest["id"]]
    rest = api.get(f"/v1/webhooks/{endpoint.id}/deliveries?limit=1&cursor={page.body['nextCursor']}")
    assert [d["id"] for d in rest.body["data"]] == [oldest["id"]] and rest.body["nextCursor"] is None
    # A cursor of the endpoint list is not one of this log.
    listing = api.get("/v1/webhooks?limit=1")
    assert api.post("/v1/webhooks", {"url": PUBLIC_URL}).status_code == 201
    cursor = api.get("/v1/webhooks?limit=1").body["nextCursor"]
    assert listing.status_code == 200 and cursor
    r = api.get(f"/v1/webhooks/{endpoint.id}/deliveries?cursor={cursor}")
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
