"""`manage.py webhooks ...`: output (plain and `--json`), what is stored, refusals."""

import re

import pytest
from django.core.management.base import CommandError

from webhooks.models import EVENT_TYPES, Attempt, Delivery, Endpoint, Event
from webhooks.tests.fixtures import received, verify

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
