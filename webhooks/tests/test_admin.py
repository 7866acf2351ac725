"""The webhooks back office: endpoints (secret shown once), deliveries and attempts,
resend, test ping, enable and disable."""

import re

import pytest
from django.urls import reverse

from webhooks import services
from webhooks.models import EVENT_TYPES, Attempt, Delivery, Endpoint
from webhooks.tests.fixtures import received, run_worker

SECRET = re.compile(r"whsec_[A-Za-z0-9_-]{43}")


def url(model: str, view: str, *args) -> str:
    return reverse(f"admin:webhooks_{model}_{view}", args=args)


def act(client, model: str, action: str, objects) -> list[str]:
    """Run an admin action; return the messages the next page shows."""
    response = client.post(url(model, "changelist"), {"action": action, "_selected_action": [o.pk for o in objects]},
                           follow=True)
    assert response.redirect_chain and response.status_code == 200
    return [str(message) for message in response.context["messages"]]


def test_adding_an_endpoint_shows_its_secret_once(superuser_client, local_urls, space, receiver):
    response = superuser_client.post(
        url("endpoint", "add"),
        {"space": space.pk, "url": receiver.url_for("/hook"), "event_types": ["poll.created", "poll.closed"]},
        follow=True,
    )
    endpoint = Endpoint.objects.get()
    page = response.content.decode()
    assert SECRET.findall(page) == [endpoint.secret]
    assert (endpoint.url, endpoint.event_types) == (receiver.url_for("/hook"), ["poll.created", "poll.closed"])
    again = superuser_client.get(url("endpoint", "change", endpoint.pk)).content.decode()
    assert endpoint.secret not in again
    assert endpoint.secret not in superuser_client.get(url("endpoint", "changelist")).content.decode()


def test_adding_a_forbidden_url_is_a_form_error_and_stores_nothing(superuser_client, space):
    response = superuser_client.post(
        url("endpoint", "add"), {"space": space.pk, "url": "https://127.0.0.1/hook", "event_types": list(EVENT_TYPES)}
    )
    assert response.status_code == 200
    assert "url: 127.0.0.1 is in 127.0.0.0/8: loopback (RFC 1122)" in response.content.decode()
    assert Endpoint.objects.count() == 0


def test_changing_the_subscribed_types(superuser_client, hook):
    endpoint, _ = hook
    response = superuser_client.post(url("endpoint", "change", endpoint.pk),
                                     {"url": endpoint.url, "event_types": ["poll.deleted"]})
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.event_types == ["poll.deleted"]
    response = superuser_client.post(url("endpoint", "change", endpoint.pk), {"url": endpoint.url, "event_types": []})
    assert response.status_code == 200
    endpoint.refresh_from_db()
    assert endpoint.event_types == ["poll.deleted"]


def test_the_endpoint_page_lists_its_deliveries_and_the_delivery_page_its_attempts(superuser_client, receiver, hook,
                                                                                 space, clock):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("try later", status=503)
    event = services.record_event(space_id=space.id, type="poll.reopened", poll_id="AbCdEf123456")
    run_worker()
    clock.shift(60)
    run_worker()
    delivery = Delivery.objects.get()
    page = superuser_client.get(url("endpoint", "change", endpoint.pk)).content.decode()
    assert url("delivery", "change", delivery.pk) in page and "poll.reopened" in page and "HTTP 503" in page
    page = superuser_client.get(url("delivery", "change", delivery.pk)).content.decode()
    for attempt in Attempt.objects.all():
        assert attempt.id in page
    assert page.count("try later") == 2 and event.id in page
    listing = superuser_client.get(url("delivery", "changelist"), {"endpoint__id__exact": endpoint.pk})
    assert delivery.pk in listing.content.decode()


def test_resend_makes_a_new_delivery_of_the_same_event(superuser_client, receiver, hook, space):
    _endpoint, secret = hook
    receiver.expect_request("/hook").respond_with_data("ok")
    event = services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    first = Delivery.objects.get()
    assert act(superuser_client, "delivery", "resend", [first]) == ["1 delivery(ies) queued again."]
    run_worker()
    got = received(receiver)
    assert [item["raw"] for item in got] == [event.body, event.body]
    assert Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).count() == 2


def test_resend_is_refused_for_a_disabled_endpoint(superuser_client, receiver, hook, space):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("ok")
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    services.disable_endpoint(endpoint=endpoint)
    delivery = Delivery.objects.get()
    messages = act(superuser_client, "delivery", "resend", [delivery])
    assert f"{delivery.pk}: the endpoint is disabled; enable it first" in messages
    assert Delivery.objects.count() == 1


def test_ping_action_queues_and_the_dispatcher_sends(superuser_client, receiver, hook):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("pong")
    [message] = act(superuser_client, "endpoint", "send_ping", [endpoint])
    assert message == f"Ping to {endpoint.url} queued; its outcome appears in the endpoint's deliveries."
    assert received(receiver) == []  # the request did not wait for the receiver
    assert run_worker() == 1
    [got] = received(receiver)
    assert (got["body"]["type"], got["body"]["data"]) == ("ping", {})
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED


def test_a_failed_ping_shows_in_the_delivery_log(superuser_client, receiver, hook):
    endpoint, _ = hook
    receiver.expect_request("/hook").respond_with_data("no", status=404)
    act(superuser_client, "endpoint", "send_ping", [endpoint])
    run_worker()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error) == (Delivery.Status.FAILED, "HTTP 404")
    assert run_worker() == 0  # never retried


def test_disable_and_enable_actions(superuser_client, hook):
    endpoint, _ = hook
    assert act(superuser_client, "endpoint", "disable", [endpoint]) == ["1 endpoint(s) disabled."]
    endpoint.refresh_from_db()
    assert not endpoint.is_enabled
    assert act(superuser_client, "endpoint", "enable", [endpoint]) == ["1 endpoint(s) enabled."]
    endpoint.refresh_from_db()
    assert endpoint.is_enabled


def test_rotate_secret_action_shows_the_new_secret_once(superuser_client, hook):
    endpoint, old = hook
    [message] = act(superuser_client, "endpoint", "rotate_secret", [endpoint])
    endpoint.refresh_from_db()
    assert endpoint.secret != old and f"<code>{endpoint.secret}</code>" in message
    assert endpoint.signing_secrets() == [endpoint.secret, old]
    assert old not in message


def test_deleting_an_endpoint(superuser_client, hook):
    endpoint, _ = hook
    response = superuser_client.post(url("endpoint", "delete", endpoint.pk), {"post": "yes"})
    assert response.status_code == 302
    assert Endpoint.objects.count() == 0


@pytest.mark.parametrize("model", ["endpoint", "delivery", "event"])
def test_changelists_and_searches_load(superuser_client, hook, model):
    assert superuser_client.get(url(model, "changelist")).status_code == 200
    assert superuser_client.get(url(model, "changelist"), {"q": "hook"}).status_code == 200


def test_endpoint_changes_rotations_and_resends_are_recorded_in_the_history(superuser_client, receiver, hook, space):
    from conftest import admin_history
    from polls.tests.factories import make_poll

    endpoint, secret = hook
    superuser_client.post(url("endpoint", "change", endpoint.pk), {"url": receiver.url_for("/other"),
                                                                   "event_types": ["poll.created"]})
    act(superuser_client, "endpoint", "disable", [endpoint])
    act(superuser_client, "endpoint", "enable", [endpoint])
    act(superuser_client, "endpoint", "rotate_secret", [endpoint])
    receiver.expect_request("/other").respond_with_data("ok")
    act(superuser_client, "endpoint", "send_ping", [endpoint])
    assert admin_history(endpoint) == [
        ("operator", "Changed URL and Event types."), ("operator", "Disabled"), ("operator", "Enabled"),
        ("operator", "Rotated the signing secret"), ("operator", "Queued a test ping"),
    ]
    history_page = superuser_client.get(url("endpoint", "history", endpoint.pk)).content.decode()
    assert "Rotated the signing secret" in history_page and Endpoint.objects.get().secret not in history_page
    make_poll(space)
    run_worker()
    delivery = Delivery.objects.exclude(event__type="ping").get()
    act(superuser_client, "delivery", "resend", [delivery])
    again = Delivery.objects.exclude(pk=delivery.pk).exclude(event__type="ping").get()
    assert admin_history(delivery) == [("operator", f"Resent as delivery {again.pk}")]
