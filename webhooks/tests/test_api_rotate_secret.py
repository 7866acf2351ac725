"""`POST /v1/webhooks/{id}/rotate-secret` over HTTP: both secrets sign for 24 hours, a second
rotation drops the oldest, and the command line does the same. Every response is checked
against the served OpenAPI document by the `Api` client."""

import re
from datetime import timedelta

import pytest
import stripe
from django.utils import timezone

from polls.tests.factories import date_poll_body
from webhooks.tests.fixtures import received, run_worker, verify

INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SECRET = re.compile(r"^whsec_[A-Za-z0-9_-]{43}$")


# --- Rotation ------------------------------------------------------------------------------


def _signatures(request) -> list[str]:
    return [part[3:] for part in request["headers"]["X-Service-Signature"].split(",") if part.startswith("v1=")]


def test_rotation_signs_with_both_secrets_for_24_hours(api, hook, receiver, clock):
    endpoint, old = hook
    receiver.expect_request("/hook").respond_with_data("ok")
    r = api.post(f"/v1/webhooks/{endpoint.id}/rotate-secret")
    assert r.status_code == 200
    new = r.body["data"]["secret"]
    assert SECRET.match(new) and new != old
    expires = r.body["data"]["previousSecretExpiresAt"]
    assert INSTANT.match(expires)
    assert timedelta(hours=23, minutes=59) < (
        timezone.datetime.fromisoformat(expires.replace("Z", "+00:00")) - timezone.now()
    ) <= timedelta(hours=24)
    assert api.get(f"/v1/webhooks/{endpoint.id}").body["data"]["previousSecretExpiresAt"] == expires

    api.post("/v1/polls", date_poll_body("2030-01-02"))
    run_worker()
    [during] = received(receiver)
    assert len(_signatures(during)) == 2
    assert verify(during["raw"], during["headers"], new) and verify(during["raw"], during["headers"], old)
    with pytest.raises(stripe.SignatureVerificationError):
        verify(during["raw"], during["headers"], "whsec_" + "x" * 43)

    clock.shift(timedelta(hours=24, seconds=1))
    receiver.clear_log()
    api.post("/v1/polls", date_poll_body("2030-01-03"))
    run_worker()
    [after] = received(receiver)
    assert len(_signatures(after)) == 1
    assert verify(after["raw"], after["headers"], new)
    with pytest.raises(stripe.SignatureVerificationError):
        verify(after["raw"], after["headers"], old)
    assert api.get(f"/v1/webhooks/{endpoint.id}").body["data"]["previousSecretExpiresAt"] is None


def test_a_second_rotation_drops_the_oldest_secret(api, hook, receiver):
    endpoint, first = hook
    receiver.expect_request("/hook").respond_with_data("ok")
    second = api.post(f"/v1/webhooks/{endpoint.id}/rotate-secret").body["data"]["secret"]
    third = api.post(f"/v1/webhooks/{endpoint.id}/rotate-secret").body["data"]["secret"]
    api.post("/v1/polls", date_poll_body("2030-01-02"))
    run_worker()
    [request] = received(receiver)
    assert verify(request["raw"], request["headers"], third) and verify(request["raw"], request["headers"], second)
    with pytest.raises(stripe.SignatureVerificationError):
        verify(request["raw"], request["headers"], first)


def test_rotate_and_add_from_the_command_line_too(run, space, hook):
    endpoint, old = hook
    data = run("webhooks", "rotate-secret", endpoint.id)
    endpoint.refresh_from_db()
    assert data["secret"] == endpoint.secret != old and endpoint.signing_secrets() == [endpoint.secret, old]
    assert INSTANT.match(data["previousSecretExpiresAt"])
