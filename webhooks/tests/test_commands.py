"""`manage.py webhooks ...`: output (plain and `--json`), what is stored, refusals."""

import re

import pytest
from django.core.management.base import CommandError

from webhooks.models import EVENT_TYPES, Attempt, Delivery, Endpoint, Event
from webhooks.tests.fixtures import received, run_worker, verify

INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_add_prints_the_id_and_the_secret_once(run, local_urls, space, receiver):
    url = receiver.url_for("/hook")
    out = run.text("webhooks", "add", space.id, url)
    endpoint = Endpoint.objects.get()
    assert out.strip().splitlines() == [f"id: {endpoint.id}", f"secret: {endpoint.secret}"]
    assert "cannot be shown again" in run.stderr
    assert (endpoint.url, endpoint.event_types, endpoint.is_enabled) == (url, list(EVENT_TYPES), True)
    assert endpoint.secret not in run.text("webhooks", "list", space.id)
    assert "secret" not in run("webhooks", "list", space.id)[0]


def test_add_json_with_chosen_events(run, local_urls, space, receiver):
    data = run("webhooks", "add", space.id, receiver.url_for("/hook"), "--events", "poll.deleted, poll.created")
    endpoint = Endpoint.objects.get()
    assert data == {
        "id": endpoint.id,
        "spaceId": space.id,
        "url": receiver.url_for("/hook"),
        "events": ["poll.created", "poll.deleted"],
        "enabled": True,
        "payloadVersion": "2026-09-20",
        "failedInARow": 0,
        "disabledReason": None,
        "createdAt": data["createdAt"],
        "disabledAt": None,
        "secret": endpoint.secret,
    }
    assert INSTANT.match(data["createdAt"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["https://93.184.216.34/x", "--events", "poll.exploded"], "unknown event type(s): poll.exploded; known: "),
        (["https://93.184.216.34/x", "--events", " , "], "subscribe to at least one event type"),
        (["http://127.0.0.1/x"], "url: the URL must start with https://"),
        (["https://10.0.0.1/x"], "url: 10.0.0.1 is in 10.0.0.0/8: private use (RFC 1918); webhooks are only sent to public addresses"),
        (["https://user:pw@10.0.0.1/x"], "url: the URL must not contain a user name or password"),
    ],
)
def test_add_refuses_bad_input_and_stores_nothing(run, space, args, message):
    with pytest.raises(CommandError) as info:
        run("webhooks", "add", space.id, *args)
    assert str(info.value).startswith(message)
    assert Endpoint.objects.count() == 0


def test_add_refuses_an_unknown_space(run, db):
    with pytest.raises(CommandError, match="no space with id 'nope'"):
        run("webhooks", "add", "nope", "https://93.184.216.34/x")


def test_at_most_five_endpoints_per_space(run, local_urls, space, receiver):
    for n in range(5):
        run("webhooks", "add", space.id, receiver.url_for(f"/{n}"))
    with pytest.raises(CommandError, match="a space may have at most 5 webhook endpoints; remove one first"):
        run("webhooks", "add", space.id, receiver.url_for("/6"))
    assert Endpoint.objects.count() == 5


def test_list_shows_every_endpoint(run, make_endpoint, space):
    first, _ = make_endpoint("http://127.0.0.1:9/a")
    second, _ = make_endpoint("http://127.0.0.1:9/b", event_types=["poll.closed", "poll.reopened"])
    rows = run("webhooks", "list", space.id)
    assert [(row["id"], row["events"]) for row in rows] == [
        (first.id, list(EVENT_TYPES)), (second.id, ["poll.closed", "poll.reopened"])
    ]
    text = run.text("webhooks", "list", space.id).splitlines()
    assert text[0].split() == ["ID", "ENABLED", "FAILED", "IN", "A", "ROW", "CREATED", "URL", "EVENTS"]
    assert text[1].startswith(first.id) and text[1].endswith("http://127.0.0.1:9/a  all")
    assert text[2].endswith("poll.closed,poll.reopened")


def test_list_of_a_space_without_endpoints(run, space):
    assert run.text("webhooks", "list", space.id).strip() == f"Space {space.id} has no webhook endpoints."
    assert run("webhooks", "list", space.id) == []


def test_disable_enable_and_remove(run, make_endpoint):
    endpoint, _ = make_endpoint("http://127.0.0.1:9/a")
    data = run("webhooks", "disable", endpoint.id)
    assert (data["enabled"], data["disabledReason"]) == (False, "disabled by an operator")
    assert INSTANT.match(data["disabledAt"])
    assert run.text("webhooks", "enable", endpoint.id).strip() == f"Endpoint {endpoint.id} is enabled."
    endpoint.refresh_from_db()
    assert endpoint.is_enabled and endpoint.disabled_at is None
    assert run("webhooks", "remove", endpoint.id)["removed"] is True
    assert Endpoint.objects.count() == 0


@pytest.mark.parametrize("action", ["remove", "enable", "disable", "ping"])
def test_unknown_endpoint(run, db, action):
    with pytest.raises(CommandError, match="no webhook endpoint with id 'nope'"):
        run("webhooks", action, "nope")


def test_ping_sends_now_and_reports(run, receiver, hook, space):
    endpoint, secret = hook
    receiver.expect_request("/hook").respond_with_data("pong")
    data = run("webhooks", "ping", endpoint.id)
    [got] = received(receiver)
    assert got["body"] == {"version": "2026-09-20", "id": data["eventId"], "type": "ping",
                           "createdAt": got["body"]["createdAt"], "data": {}}
    assert got["headers"]["X-Service-Event"] == "ping"
    assert verify(got["raw"], got["headers"], secret)
    assert data == {"endpointId": endpoint.id, "eventId": data["eventId"], "deliveryId": got["headers"]["X-Service-Delivery"],
                    "delivered": True, "statusCode": 200, "error": None, "durationMs": data["durationMs"]}
    assert Event.objects.get().dispatched_at is not None


def test_a_failed_ping_exits_non_zero_and_is_never_retried(run, receiver, hook, clock):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("no", status=500)
    with pytest.raises(CommandError, match="the ping was not delivered"):
        run.text("webhooks", "ping", endpoint.id)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.FAILED, 1)
    clock.shift(86400)
    from webhooks.tests.fixtures import run_worker

    assert run_worker() == 0
    assert Attempt.objects.count() == 1
    endpoint.refresh_from_db()
    assert endpoint.failure_streak == 0  # a test ping does not count


# --- deliveries and resend ------------------------------------------------------------------


def _two_deliveries(make_endpoint, receiver, space):
    """Two endpoints of the space; a poll event delivered to one (200) and failed once at
    the other (500, pending a retry)."""
    from polls.tests.factories import make_poll

    receiver.expect_request("/ok").respond_with_data("ok")
    receiver.expect_request("/down").respond_with_data("no", status=500)
    ok, _ = make_endpoint(receiver.url_for("/ok"))
    down, _ = make_endpoint(receiver.url_for("/down"))
    make_poll(space)
    run_worker()
    return ok, down


def test_deliveries_lists_and_filters_by_endpoint_status_space_and_type(run, make_endpoint, receiver, space, make_space):
    ok, down = _two_deliveries(make_endpoint, receiver, space)
    rows = run("webhooks", "deliveries")
    assert {(row["endpointId"], row["status"], row["attempts"], row["eventType"]) for row in rows} == {
        (ok.id, "succeeded", 1, "poll.created"), (down.id, "pending", 1, "poll.created")}
    failing = run("webhooks", "deliveries", "--endpoint", down.id)
    assert [row["endpointId"] for row in failing] == [down.id]
    assert "500" in failing[0]["lastError"] and INSTANT.match(failing[0]["nextAttemptAt"])
    assert [row["endpointId"] for row in run("webhooks", "deliveries", "--status", "succeeded")] == [ok.id]
    assert run("webhooks", "deliveries", "--space", make_space()[0].id) == []
    assert run("webhooks", "deliveries", "--event-type", "poll.deleted") == []
    assert len(run("webhooks", "deliveries", "--limit", "1")) == 1
    text = run.text("webhooks", "deliveries", "--endpoint", down.id)
    assert text.splitlines()[0].split() == ["ID", "STATUS", "ATTEMPTS", "CREATED", "ENDPOINT", "EVENT", "LAST", "ERROR"]
    assert failing[0]["id"] in text and "pending" in text


def test_deliveries_refuses_an_unknown_endpoint_or_space_and_a_bad_status(run, db):
    with pytest.raises(CommandError, match="no webhook endpoint with id 'nope'"):
        run("webhooks", "deliveries", "--endpoint", "nope")
    with pytest.raises(CommandError, match="no space with id 'nope'"):
        run("webhooks", "deliveries", "--space", "nope")
    with pytest.raises(CommandError, match="invalid choice"):
        run("webhooks", "deliveries", "--status", "lost")


def test_resend_queues_the_same_event_again_as_a_new_delivery(run, make_endpoint, receiver, space):
    ok, _ = _two_deliveries(make_endpoint, receiver, space)
    first = Delivery.objects.get(endpoint=ok)
    data = run("webhooks", "resend", first.id)
    assert data["resentFrom"] == first.id and data["id"] != first.id
    assert (data["endpointId"], data["eventId"], data["status"], data["attempts"]) == (ok.id, first.event_id, "pending", 0)
    receiver.expect_request("/ok").respond_with_data("ok")
    run_worker()
    assert Delivery.objects.get(pk=data["id"]).status == Delivery.Status.SUCCEEDED
    bodies = [request["body"] for request in received(receiver) if request["body"]["id"] == first.event_id]
    assert len(bodies) >= 2 and bodies[-1] == bodies[0]
    assert run.text("webhooks", "resend", first.id).startswith("Delivery ")


def test_resend_refuses_an_unknown_delivery_a_ping_and_a_disabled_endpoint(run, receiver, hook, make_endpoint, space):
    with pytest.raises(CommandError, match="no webhook delivery with id 'nope'"):
        run("webhooks", "resend", "nope")
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("ok")
    run("webhooks", "ping", endpoint.id)
    ping = Delivery.objects.get(endpoint=endpoint)
    with pytest.raises(CommandError, match="a ping is not resent"):
        run("webhooks", "resend", ping.id)
    count = Delivery.objects.count()
    run("webhooks", "disable", endpoint.id)
    ping.event.type = "poll.created"
    ping.event.save()
    with pytest.raises(CommandError, match="the endpoint is disabled"):
        run("webhooks", "resend", ping.id)
    assert Delivery.objects.count() == count
