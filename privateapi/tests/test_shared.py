"""One model, two presentations: the private API and `/v1` read and change the same polls,
with the same keys, maintenance switch, rate-limit window and events, and the private API's
reads cost no more queries than `/v1`'s."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from polls.tests.factories import make_poll, respond
from webhooks.tests.fixtures import received, run_worker

POLICY = "60;w=60, 5000;w=86400"


def test_a_poll_created_through_either_api_reads_the_same_through_both(private, api, space):
    legacy = private.post("/api/private/polls", {"title": "Legacy", "slots": {
        "duration": 45, "timezone": "Europe/Berlin", "times": ["2030-03-01T10:00:00"]}}).body["data"]
    v1 = api.get(f"/v1/polls/{legacy['id']}").body["data"]
    assert (v1["id"], v1["adminUrl"], v1["inviteUrl"], v1["timeZone"], v1["kind"]) == (
        legacy["id"], legacy["adminUrl"], legacy["inviteUrl"], "Europe/Berlin", "time")
    assert v1["options"] == [{"id": legacy["options"][0]["id"], "startTime": "2030-03-01T09:00:00.000Z", "duration": 45}]
    assert v1["organizer"]["name"] == legacy["user"]["name"] == space.owner.name

    created = api.post("/v1/polls", {"title": "V1", "kind": "date", "options": [{"date": "2030-03-02"}]}).body["data"]
    read = private.get(f"/api/private/polls/{created['id']}").body["data"]
    assert (read["id"], read["adminUrl"], read["inviteUrl"], read["createdAt"]) == (
        created["id"], created["adminUrl"], created["inviteUrl"], created["createdAt"])
    assert read["options"] == [{"id": created["options"][0]["id"], "startTime": "2030-03-02T00:00:00.000Z", "duration": 0}]
    assert {item["id"] for item in private.get("/api/private/polls").body["data"]} == {legacy["id"], created["id"]}


def test_a_close_and_a_delete_through_the_private_api_show_in_v1(private, api, space):
    poll = make_poll(space)
    private.patch(f"/api/private/polls/{poll.id}", {"status": "closed"})
    assert api.get(f"/v1/polls/{poll.id}").body["data"]["status"] == "closed"
    private.delete(f"/api/private/polls/{poll.id}")
    assert api.get(f"/v1/polls/{poll.id}").body["error"]["code"] == "POLL_NOT_FOUND"


def test_one_rate_limit_window_counts_each_request_to_either_api_once(private, api, space):
    seen = []
    for n in range(6):
        response = (private.get("/api/private/polls") if n % 2 else api.get("/v1/polls"))
        seen.append((response.status_code, response["RateLimit-Policy"], response["RateLimit-Remaining"]))
    assert seen == [(200, POLICY, str(59 - n)) for n in range(6)]


def test_the_61st_request_of_either_api_is_refused(private, api, space, time_machine):
    time_machine.move_to("2030-03-01T12:00:00Z", tick=False)
    for n in range(60):
        assert (private if n % 2 else api).request("GET", "/api/private/polls" if n % 2 else "/v1/polls").status_code == 200
    time_machine.shift(20)
    refused = private.get("/api/private/polls")
    assert (refused.status_code, refused.body["error"]["code"]) == (429, "RATE_LIMIT_EXCEEDED")
    assert (refused["Retry-After"], refused["RateLimit-Remaining"]) == ("40", "0")
    assert api.get("/v1/polls").status_code == 429


def test_maintenance_comes_first_and_carries_no_rate_limit_headers(private, private_anon, settings, space):
    settings.MAINTENANCE_MODE = True
    for client, path in [(private, "/api/private/polls"), (private_anon, "/api/private/polls"), (private, "/api/private/nothing"),
                         (private_anon, "/api/private/openapi"), (private_anon, "/api/private/docs")]:
        response = client.get(path)
        assert (response.status_code, response.body["error"]["code"]) == (503, "SERVICE_UNAVAILABLE")
        assert response["Retry-After"] == "300" and "RateLimit-Remaining" not in response


def test_the_same_events_as_v1(private, space, hook, receiver):
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    assert run_worker() == 0
    created = private.post("/api/private/polls", {"title": "Events", "dates": ["2030-04-01"]}).body["data"]
    ref = {"poll": {"id": created["id"]}}
    for action, expected in [
        (lambda: None, ("poll.created", ref)),
        (lambda: private.patch(f"/api/private/polls/{created['id']}", {"status": "closed"}), ("poll.closed", {**ref, "reason": "manual"})),
        (lambda: private.delete(f"/api/private/polls/{created['id']}"), ("poll.deleted", ref)),
    ]:
        action()
        assert run_worker() == 1
        body = received(receiver)[-1]["body"]
        assert (body["type"], body["data"]) == expected
    closed = make_poll(space, status="closed")
    assert run_worker() == 1  # its poll.created
    private.patch(f"/api/private/polls/{closed.id}", {"status": "closed"})
    assert run_worker() == 0  # closing a closed poll changes nothing and sends nothing


# --- Query counts ---------------------------------------------------------------------------


def count(client, path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured.captured_queries)


def queries(client, path: str) -> int:
    """The fewer of two reads in a row (the limiter's cache of a space's limits, expiring
    between them, costs one more)."""
    return min(count(client, path), count(client, path))


# The key, the page and its organizers or the poll (with its organizer); for the results, the
# options and the tallies.
@pytest.mark.parametrize("legacy, v1, expected", [
    ("/api/private/polls?limit=5", "/v1/polls?limit=5", 3),
    ("/api/private/polls/{id}", "/v1/polls/{id}", 2),
    ("/api/private/polls/{id}/results", "/v1/polls/{id}/results", 4),
])
def test_reads_cost_no_more_queries_than_v1_and_stay_constant(private, api, space, legacy, v1, expected):
    polls = [make_poll(space, title=f"Poll {n}") for n in range(2)]
    respond(polls[-1], "yes", "ifNeedBe", "no")
    count(private, legacy.format(id=polls[-1].id))  # the key's use is recorded once a minute
    first = queries(private, legacy.format(id=polls[-1].id))
    for n in range(6):
        respond(make_poll(space, title=f"More {n}"), "yes", None, "no", name=f"P{n}")
        respond(polls[-1], "no", "yes", None, name=f"Q{n}")
    assert queries(private, legacy.format(id=polls[-1].id)) == first
    assert first == expected <= queries(api, v1.format(id=polls[-1].id))
