"""Delivery to a real local receiver: envelope, headers, signature, fan-out rules."""

import base64
import json
import re
import time
from pathlib import Path

import pytest
import stripe
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from conftest import openapi_document
from polls.tests.factories import date_poll_body
from spaces import services as space_services
from webhooks import services, signing
from webhooks.models import CONTRACT_EVENT_TYPES, EVENT_TYPES, PAYLOAD_VERSION, Attempt, Delivery, Event
from webhooks.tests.fixtures import received, run_worker, verify

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_an_event_arrives_signed_with_the_envelope_and_headers(receiver, hook, space):
    endpoint, secret = hook
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    event = services.record_event(space_id=space.id, type="poll.closed", poll_id="AbCdEf123456", extra={"reason": "manual"})

    assert run_worker() == 1

    [got] = received(receiver)
    assert got["body"] == {
        "version": "2026-09-20",
        "id": event.id,
        "type": "poll.closed",
        "createdAt": got["body"]["createdAt"],
        "data": {"poll": {"id": "AbCdEf123456"}, "reason": "manual"},
    }
    assert INSTANT.match(got["body"]["createdAt"])
    assert got["raw"] == Event.objects.get(pk=event.id).body
    headers = got["headers"]
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"] == "Service-Webhooks/1.0"
    assert headers["X-Service-Event"] == "poll.closed"
    assert headers["X-Service-Webhook-Version"] == PAYLOAD_VERSION == endpoint.payload_version
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", headers["X-Service-Signature"])
    attempt = Attempt.objects.get()
    assert headers["X-Service-Delivery"] == attempt.id
    assert attempt.succeeded and attempt.status_code == 200 and attempt.error == "" and attempt.duration_ms is not None
    assert attempt.response_excerpt == "ok"
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED


def test_the_signature_verifies_independently_and_fails_for_a_wrong_secret_or_changed_body(receiver, hook, space):
    _endpoint, secret = hook
    receiver.expect_request("/hook").respond_with_data("ok")
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    [got] = received(receiver)

    assert verify(got["raw"], got["headers"], secret)
    other_secret = services.create_endpoint(space=space, url=receiver.url_for("/other"))[1]
    with pytest.raises(stripe.SignatureVerificationError):
        verify(got["raw"], got["headers"], other_secret)
    with pytest.raises(stripe.SignatureVerificationError):
        verify(got["raw"].replace("poll.created", "poll.deleted"), got["headers"], secret)


def test_secret_format(hook):
    endpoint, secret = hook
    assert re.fullmatch(r"whsec_[A-Za-z0-9_-]{43}", secret)
    assert endpoint.secret == secret


def test_participant_events_carry_the_participant(receiver, hook, space):
    receiver.expect_request("/hook").respond_with_data("ok")
    services.record_event(space_id=space.id, type="poll.participant.updated", poll_id="AbCdEf123456",
                          participant_id="p" * 24)
    run_worker()
    [got] = received(receiver)
    assert got["body"]["data"] == {"poll": {"id": "AbCdEf123456"}, "participant": {"id": "p" * 24}}


def test_every_endpoint_gets_the_same_event_id_and_only_subscribed_types(receiver, make_endpoint, space):
    receiver.expect_request("/a").respond_with_data("ok")
    receiver.expect_request("/b").respond_with_data("ok")
    make_endpoint(receiver.url_for("/a"))
    make_endpoint(receiver.url_for("/b"), event_types=["poll.deleted"])
    created = services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    deleted = services.record_event(space_id=space.id, type="poll.deleted", poll_id="AbCdEf123456")

    assert run_worker() == 3

    by_path = {}
    for request, _ in receiver.log:
        by_path.setdefault(request.path, []).append(json.loads(request.get_data())["id"])
    assert sorted(by_path["/a"]) == sorted([created.id, deleted.id])
    assert by_path["/b"] == [deleted.id]


def test_an_endpoint_gets_only_events_after_it_was_created(receiver, make_endpoint, space):
    receiver.expect_request("/hook").respond_with_data("ok")
    services.record_event(space_id=space.id, type="poll.created", poll_id="before123456")
    make_endpoint(receiver.url_for("/hook"))
    after = services.record_event(space_id=space.id, type="poll.created", poll_id="after1234567")
    run_worker()
    assert [got["body"]["id"] for got in received(receiver)] == [after.id]


def test_other_spaces_and_disabled_endpoints_get_nothing(receiver, make_endpoint, make_space, space):
    receiver.expect_request("/hook").respond_with_data("ok")
    other_space, _ = make_space()
    endpoint, _ = make_endpoint(receiver.url_for("/hook"), target_space=other_space)
    disabled, _ = make_endpoint(receiver.url_for("/disabled"))
    services.disable_endpoint(endpoint=disabled)
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    assert run_worker() == 0
    assert receiver.log == []
    assert Delivery.objects.count() == 0
    assert Event.objects.get().dispatched_at is not None


def test_a_space_that_lost_pro_gets_nothing(receiver, hook, space):
    receiver.expect_request("/hook").respond_with_data("ok")
    space_services.set_plan(space=space, pro=False)
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    assert run_worker() == 0
    assert receiver.log == []
    assert Delivery.objects.count() == 0


def test_pending_retries_stop_when_pro_lapses(receiver, hook, space, clock):
    receiver.expect_request("/hook").respond_with_data("down", status=503)
    services.record_event(space_id=space.id, type="poll.created", poll_id="AbCdEf123456")
    run_worker()
    space_services.set_plan(space=space, pro=False)
    clock.shift(61)
    assert run_worker() == 1  # claimed, then canceled without a request
    assert len(receiver.log) == 1
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.CANCELED
    assert delivery.last_error == "not sent: the space has no Pro subscription"


def test_every_event_type_is_subscribed_by_default(hook):
    endpoint, _ = hook
    assert endpoint.event_types == list(EVENT_TYPES)
    assert set(CONTRACT_EVENT_TYPES) < set(EVENT_TYPES) and len(CONTRACT_EVENT_TYPES) == 9


def test_recording_an_unknown_type_is_a_programming_error(space):
    with pytest.raises(ValueError, match="unknown event type 'poll.exploded'"):
        services.record_event(space_id=space.id, type="poll.exploded", poll_id="AbCdEf123456")
    assert Event.objects.count() == 0


def standard_webhooks_key(secret: str) -> str:
    """The conversion docs/webhooks.md gives (run from the document itself): the
    `standardwebhooks` libraries read the text after `whsec_` as standard base64, ours is
    base64url."""
    [code] = re.findall(r"```python\n(import base64\nfrom standardwebhooks.*?)```", DOC.read_text(), re.S)
    namespace: dict = {}
    exec(code.split("\npayload = ")[0], namespace)  # noqa: S102 - our own documentation
    return namespace["standard_webhooks_key"](secret)


def test_standard_webhooks_and_stripe_verify_the_same_deliveries_side_by_side(api, hook, receiver):
    """Every delivery carries both schemes: `X-Service-Signature` (Stripe's) unchanged, and
    the Standard Webhooks headers; each library verifies them with the secret the API
    returned, before and during a rotation (one signature per secret)."""
    endpoint, old = hook
    receiver.expect_request("/hook").respond_with_data("ok")
    api.post("/v1/polls", date_poll_body("2030-01-02"))
    run_worker()
    new = api.post(f"/v1/webhooks/{endpoint.id}/rotate-secret").body["data"]["secret"]
    api.post("/v1/polls", date_poll_body("2030-01-03"))
    run_worker()
    before, during = received(receiver)
    for request, secrets in ((before, [old]), (during, [new, old])):
        headers = dict(request["headers"])
        assert headers["Webhook-Id"] == request["body"]["id"]
        assert headers["Webhook-Timestamp"] == re.match(r"t=(\d+),", headers["X-Service-Signature"])[1]
        assert headers["Webhook-Signature"].count("v1,") == len(secrets) == headers["X-Service-Signature"].count("v1=")
        for parameter in openapi_document()["webhooks"]["poll.created"]["post"]["parameters"]:  # as documented
            if "pattern" in parameter["schema"]:
                assert re.fullmatch(parameter["schema"]["pattern"], headers[parameter["name"].title()])
        for secret in secrets:
            assert verify(request["raw"], request["headers"], secret)  # Stripe's library
            assert Webhook(standard_webhooks_key(secret)).verify(request["raw"], headers) == request["body"]
            assert Webhook(base64.urlsafe_b64decode(secret[6:] + "=")).verify(request["raw"], headers)  # the key bytes
            assert signing.standard_key(secret) == standard_webhooks_key(secret)
    with pytest.raises(WebhookVerificationError):
        Webhook(standard_webhooks_key("whsec_" + "x" * 43)).verify(during["raw"], dict(during["headers"]))
    with pytest.raises(WebhookVerificationError):
        Webhook(standard_webhooks_key(new)).verify(during["raw"] + " ", dict(during["headers"]))
    retried = dict(during["headers"], **{"Webhook-Timestamp": str(int(time.time()) - 600)})
    with pytest.raises(WebhookVerificationError):  # an old timestamp: a replay
        Webhook(standard_webhooks_key(new)).verify(during["raw"], retried)
