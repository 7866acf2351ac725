"""The served OpenAPI document: valid 3.1, complete, and strict about request bodies."""

import gc
import re

import jsonschema
import pytest
from django.core.management import call_command
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

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
    assert listed["404"] == ["NOT_FOUND", "PARTICIPANT_NOT_FOUND", "POLL_NOT_FOUND", "WEBHOOK_NOT_FOUND"]
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


# --- Written for integrators ---------------------------------------------------------------

PROJECT_PACKAGES = ("config", "core", "idempotency", "polls", "ratelimit", "spaces", "webhooks")


def _python_class_names() -> set[str]:
    """Every class the project defines whose name is a compound word (`ApiView`,
    `IdempotentCreate`, `ServiceError`): what an inherited docstring would leak."""
    import ast
    from pathlib import Path

    names = set()
    for package in PROJECT_PACKAGES:
        for path in Path(package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and len(re.findall(r"[A-Z][a-z]+", node.name)) >= 2:
                    names.add(node.name)
    return names


def _texts(node, where=()):
    """(where, text) of every description and summary in the document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary") and isinstance(value, str):
                yield where + (key,), value
            elif key not in ("examples", "example"):
                yield from _texts(value, where + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _texts(value, where + (index,))


def test_every_operation_has_a_summary_a_description_and_an_example_answer(doc):
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert op.get("summary", "").strip() and len(op.get("description", "").strip()) >= 40, (path, method)
            if path == "/v1/openapi":
                continue
            success = [response for status, response in op["responses"].items() if status.startswith("2")]
            assert all(response["content"]["application/json"].get("examples") for response in success), (path, method)


def test_no_text_of_the_document_names_a_python_module_or_class(doc):
    module = re.compile(rf"\b({'|'.join(PROJECT_PACKAGES)}|django|rest_framework|drf_spectacular)\.[a-z_]+|\.py\b")
    classes = _python_class_names() - set(doc["components"]["schemas"])
    assert {"ApiView", "IdempotentCreate", "ServiceError"} <= classes
    word = re.compile(r"\b(" + "|".join(sorted(classes)) + r")\b")
    leaks = [(where, text) for where, text in _texts(doc) if module.search(text) or word.search(text)]
    assert leaks == []
    # The test would catch the leak it was written for.
    assert module.search("A mixin of `core.api.views.ApiView` subclasses") and word.search("ApiView")


def test_every_example_is_valid_against_its_schema(doc):
    registry = Registry().with_resource("urn:openapi", Resource.from_contents(doc, default_specification=DRAFT202012))
    checked = 0
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            bodies = [("requestBody", op.get("requestBody", {}))]
            bodies += [(f"responses/{status}", response) for status, response in op["responses"].items()]
            for where, body in bodies:
                media = body.get("content", {}).get("application/json", {})
                for name, example in media.get("examples", {}).items():
                    pointer = "/".join(part.replace("~", "~0").replace("/", "~1") for part in ("paths", path, method))
                    pointer += f"/{where}/content/application~1json/schema"
                    validator = jsonschema.Draft202012Validator(
                        {"$ref": f"urn:openapi#/{pointer}"}, registry=registry,
                        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
                    errors = [error.message for error in validator.iter_errors(example["value"])]
                    assert errors == [], (method, path, where, name)
                    checked += 1
    assert checked >= 20
