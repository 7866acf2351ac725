"""The served OpenAPI document: valid 3.1, complete, and strict about request bodies."""

import gc
import re

import pytest
from django.core.management import call_command
from openapi_spec_validator import validate

from conftest import openapi_document
from core.api.schema import error_table
from core.errors import ServiceError


@pytest.fixture
def doc(db):
    return openapi_document()


def test_document_is_valid_openapi_3_1(doc, anon):
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    r = anon.get("/v1/openapi", headers={"Authorization": "Basic nonsense"})
    assert r.status_code == 200 and r.body == doc


def test_the_document_refuses_query_parameters_like_every_operation(doc, anon):
    r = anon.get("/v1/openapi?foo=1&format=yaml")
    assert r.status_code == 400
    assert r.body == {"error": {"code": "VALIDATION_ERROR", "message": "foo: unknown field; format: unknown field"}}
    assert set(doc["paths"]["/v1/openapi"]["get"]["responses"]) == {"200", "400", "500"}


def test_every_operation_is_described(doc):
    operations = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert {
        ("/v1/polls", "get"), ("/v1/polls", "post"), ("/v1/polls/{pollId}", "get"),
        ("/v1/polls/{pollId}", "delete"), ("/v1/openapi", "get"),
    } <= operations
    assert ("/v1/polls/{pollId}", "patch") not in operations
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert op.get("operationId") and op.get("summary"), (path, method)


def test_authenticated_operations_document_every_error_and_header(doc):
    assert doc["components"]["securitySchemes"]["apiKey"] == {
        "type": "http", "scheme": "bearer", "bearerFormat": "sk_<8 chars>_<32 chars>",
        "description": "An API key of the space: `Authorization: Bearer <API key>`.",
    }
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if path == "/v1/openapi":
                assert op.get("security", []) == [] and "401" not in op["responses"]
                continue
            assert op["security"] == [{"apiKey": []}]
            responses = op["responses"]
            assert {"400", "401", "403", "404", "429", "500", "503"} <= set(responses), (path, method)
            assert responses["401"]["headers"]["WWW-Authenticate"]["required"] is True
            assert responses["429"]["headers"]["Retry-After"]["required"] is True
            assert responses["503"]["headers"]["Retry-After"]["required"] is True
            success = [code for code in responses if code.startswith("2")]
            assert success and all("RateLimit-Remaining" in responses[code]["headers"] for code in success)


def _objects(schema, components, seen):
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return
        seen.add(name)
        schema = components[name]
    if schema.get("type") == "object":
        yield schema
    for child in list(schema.get("properties", {}).values()) + ([schema["items"]] if "items" in schema else []):
        yield from _objects(child, components, seen)
    for key in ("oneOf", "anyOf", "allOf"):
        for child in schema.get(key, []):
            yield from _objects(child, components, seen)


def test_request_bodies_forbid_unknown_fields_at_every_level(doc):
    components = doc["components"]["schemas"]
    body = doc["paths"]["/v1/polls"]["post"]["requestBody"]
    assert body["required"] is True
    objects = list(_objects(body["content"]["application/json"]["schema"], components, set()))
    assert len(objects) >= 6  # date poll, time poll, organizer, both option kinds, generator
    assert all(obj.get("additionalProperties") is False for obj in objects)
    assert body["content"]["application/json"]["examples"]


def test_description_states_the_rules(doc):
    text = doc["info"]["description"]
    for rule in ("Daylight saving", "fixed-offset", "TOO_MANY_OPTIONS", "RateLimit-Policy", "Order", "YYYY-MM-DDTHH:MM:SS.sssZ"):
        assert rule.lower() in text.lower(), rule


def test_each_status_lists_the_codes_of_the_error_classes(doc):
    responses = doc["paths"]["/v1/polls"]["post"]["responses"]
    listed = {status: re.findall(r"^- `([A-Z_]+)`", responses[status]["description"], re.M) for status in responses}
    assert listed["400"] == ["VALIDATION_ERROR", "INVALID_AUTHORIZATION_HEADER", "INAPPROPRIATE_CONTENT",
                             "ORGANIZER_NOT_MEMBER", "TOO_MANY_OPTIONS", "TOO_MANY_WEBHOOKS"]
    assert listed["404"] == ["NOT_FOUND", "POLL_NOT_FOUND", "PARTICIPANT_NOT_FOUND", "WEBHOOK_NOT_FOUND"]
    assert {status: codes for status, codes in listed.items() if status not in ("201", "400", "404")} == {
        "401": ["UNAUTHORIZED"], "403": ["SPACE_NOT_PRO"], "429": ["RATE_LIMIT_EXCEEDED"],
        "500": ["INTERNAL_ERROR"], "503": ["SERVICE_UNAVAILABLE"],
    }


def test_a_new_refusal_of_a_service_is_documented_with_its_docstring():
    class MadeUpRefusal(ServiceError):
        """Made up by this test."""

        code = "MADE_UP_BY_THIS_TEST"

    try:
        assert ("MADE_UP_BY_THIS_TEST", "Made up by this test.") in error_table()[400]
    finally:
        del MadeUpRefusal
        gc.collect()  # out of ServiceError.__subclasses__(), so no later document lists it
    assert "MADE_UP_BY_THIS_TEST" not in dict(error_table()[400])


def test_drf_spectacular_generates_the_document_without_a_warning(db, tmp_path):
    # --fail-on-warn: a serializer or view drf-spectacular cannot read fails this test.
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "openapi.yaml"))
    assert (tmp_path / "openapi.yaml").read_text().startswith("openapi: 3.1")
