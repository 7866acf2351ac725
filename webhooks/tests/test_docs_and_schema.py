"""The integrators' guide and the OpenAPI document tell the truth about webhooks: the
Python verification snippet of docs/webhooks.md accepts real deliveries (during a rotation
too) and refuses forged ones, and the document's `webhooks` section describes every event
type, the envelope, the headers and the signature."""

import json
import re
import time
from pathlib import Path

import jsonschema
import pytest
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from conftest import openapi_document
from polls.tests.factories import date_poll_body
from webhooks import services
from webhooks.catalog import CATALOG
from webhooks.models import EVENT_TYPES, PING
from webhooks.tests.fixtures import received, run_worker

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def doc_snippet(language: str) -> str:
    [code] = [m for m in re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S) if "def verify" in m or
              "function verify" in m]
    return code


@pytest.fixture
def doc_verify():
    namespace: dict = {}
    exec(doc_snippet("python"), namespace)  # noqa: S102 - our own documentation
    return namespace["verify"]


def test_the_python_snippet_verifies_real_deliveries_during_and_after_rotation(api, hook, receiver, doc_verify):
    endpoint, old = hook
    receiver.expect_request("/hook").respond_with_data("ok")
    api.post("/v1/polls", date_poll_body("2030-01-02"))
    run_worker()
    new = api.post(f"/v1/webhooks/{endpoint.id}/rotate-secret").body["data"]["secret"]
    api.post(f"/v1/webhooks/{endpoint.id}/ping")
    run_worker()
    before, during = received(receiver)
    for request, secrets, wrong in ((before, [old], [new]), (during, [old, new], ["whsec_" + "x" * 43])):
        raw, header = request["raw"].encode(), request["headers"]["X-Service-Signature"]
        assert all(doc_verify(raw, header, secret) for secret in secrets)
        assert not any(doc_verify(raw, header, secret) for secret in wrong)
        assert not doc_verify(raw + b" ", header, secrets[0])  # the raw bytes, exactly
        assert not doc_verify(raw, header, secrets[0], tolerance=-1)  # too old
    assert header.count("v1=") == 2
    stamp = int(time.time())
    assert not doc_verify(b"{}", f"t={stamp}", new)
    assert not doc_verify(b"{}", f"t={stamp},t={stamp},v1=00", new)
    assert not doc_verify(b"{}", "v1=00", new)


def test_the_node_snippet_is_in_the_guide():
    code = doc_snippet("js")
    assert "timingSafeEqual" in code and 'name === "v1"' in code


@pytest.fixture
def doc(db):
    return openapi_document()


def test_the_document_stays_valid_with_its_webhooks_section(doc):
    validate(doc)
    assert list(doc["webhooks"]) == [*EVENT_TYPES, PING]
    assert set(CATALOG) == {*EVENT_TYPES, PING}
    for name, item in doc["webhooks"].items():
        operation = item["post"]
        assert operation["summary"] and CATALOG[name].when in operation["description"]
        headers = {p["name"]: p for p in operation["parameters"]}
        assert set(headers) == {"X-Service-Event", "X-Service-Delivery", "X-Service-Webhook-Version",
                                "X-Service-Signature", "User-Agent", "webhook-id", "webhook-timestamp",
                                "webhook-signature"}
        assert "v1=<new>,v1=<old>" in headers["X-Service-Signature"]["description"]
        assert "2XX" in operation["responses"]


def _validator(doc, event_type: str):
    schema = doc["webhooks"][event_type]["post"]["requestBody"]["content"]["application/json"]["schema"]
    registry = Registry().with_resource("urn:doc", Resource.from_contents(doc, default_specification=DRAFT202012))
    return jsonschema.Draft202012Validator(
        {"$ref": "urn:doc#/components/schemas/" + schema["$ref"].rsplit("/", 1)[-1]},
        registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )


def test_real_deliveries_match_their_documented_body_and_headers(api, hook, receiver, doc):
    from polls import services as poll_services
    from polls.models import Poll
    from polls.tests.factories import respond

    receiver.expect_request("/hook").respond_with_data("ok")
    endpoint, _ = hook
    poll_id = api.post("/v1/polls", date_poll_body("2030-01-02", "2030-01-03")).body["data"]["id"]
    poll = Poll.objects.get(pk=poll_id)
    respond(poll, "yes", "no")
    poll_services.close_poll(poll=poll)
    poll_services.schedule_poll(poll=poll, option_id=poll.options.order_by("date").first().pk)
    api.post(f"/v1/webhooks/{endpoint.id}/ping")
    run_worker()
    run_worker()
    requests = received(receiver)
    types = {r["body"]["type"] for r in requests}
    assert types == {"ping", "poll.created", "poll.participant.created", "poll.closed", "poll.scheduled"}
    for request in requests:
        event_type = request["body"]["type"]
        _validator(doc, event_type).validate(request["body"])
        for parameter in doc["webhooks"][event_type]["post"]["parameters"]:
            value = request["headers"][parameter["name"]]
            jsonschema.validate(value, parameter["schema"])
    # The schemas are not vacuous: a body of another type, or without data.poll, fails.
    created = next(r["body"] for r in requests if r["body"]["type"] == "poll.created")
    with pytest.raises(jsonschema.ValidationError):
        _validator(doc, "poll.closed").validate(created)
    with pytest.raises(jsonschema.ValidationError):
        _validator(doc, "poll.created").validate({**created, "data": {}})
    assert json.dumps(doc["webhooks"]).count("whsec_") >= 1


def test_idempotency_key_is_documented_on_both_creates(doc):
    for path in ("/v1/polls", "/v1/webhooks"):
        operation = doc["paths"][path]["post"]
        [header] = [p for p in operation["parameters"] if p["in"] == "header"]
        assert header["name"] == "Idempotency-Key" and header["schema"]["maxLength"] == 255
        assert operation["responses"]["201"]["headers"]["Idempotent-Replayed"]["required"] is False
    assert "Idempotent-Replayed" not in doc["paths"]["/v1/polls"]["get"]["responses"]["200"]["headers"]
    assert not any(p.get("in") == "header" for p in doc["paths"]["/v1/webhooks/{webhookId}"]["patch"].get("parameters", []))


def test_services_signature_header_with_rotation_is_documented_shape(doc):
    pattern = re.compile(doc["webhooks"]["ping"]["post"]["parameters"][3]["schema"]["pattern"])
    from webhooks import signing

    assert pattern.match(signing.signature_header(secret=["a", "b"], body="{}", timestamp=1))
    assert not pattern.match("t=1")
    assert services.SECRET_OVERLAP.total_seconds() == 24 * 3600
