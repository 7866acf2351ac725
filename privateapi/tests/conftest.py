"""A client for the private API whose every response is checked against the private API's
own OpenAPI document (as conftest.py's `Api` checks `/v1`'s against `/v1/openapi`)."""

import json
import re
from functools import cache

import jsonschema
import pytest
from django.test import Client
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from privateapi.openapi import OpenApiView

DOCUMENT_PATH = "/api/private/openapi"


@cache
def private_document() -> dict:
    OpenApiView._document = None  # built from the code of this run
    response = Client().get(DOCUMENT_PATH)
    assert response.status_code == 200
    return response.json()


@cache
def _routes():
    routes = []
    for template, operations in private_document()["paths"].items():
        pattern = "^" + "[^/]+".join(re.escape(part) for part in re.split(r"\{[^}]+\}", template)) + "$"
        routes.append((re.compile(pattern), template, operations))
    return routes


@cache
def _registry() -> Registry:
    return Registry().with_resource("urn:private", Resource.from_contents(private_document(), default_specification=DRAFT202012))


def assert_conforms(method: str, path: str, response) -> None:
    """A documented status and media type, the body valid against its schema, and every
    required header present. A path or method no operation has: the plain-text 404."""
    media_type = response["Content-Type"].split(";")[0].strip()
    operation = template = None
    for pattern, template, operations in _routes():
        if pattern.match(path):
            operation = operations.get(method.lower())
            break
    if operation is None:  # the plain-text 404, after the maintenance switch
        if response.status_code == 503:
            assert json.loads(response.content)["error"]["code"] == "SERVICE_UNAVAILABLE"
            return
        assert (response.status_code, media_type, response.content) == (404, "text/plain", b"404 Not Found"), (
            method, path, response.status_code, response.content[:200])
        return
    status = str(response.status_code)
    documented = operation["responses"]
    assert status in documented, f"{method} {path}: status {status} is not documented"
    spec = documented[status]
    assert media_type in spec.get("content", {}), f"{method} {path} {status}: {media_type} is not documented"
    body = json.loads(response.content) if media_type == "application/json" else response.content.decode()
    pointer = "/".join(
        part.replace("~", "~0").replace("/", "~1")
        for part in ("paths", template, method.lower(), "responses", status, "content", media_type, "schema")
    )
    jsonschema.Draft202012Validator(
        {"$ref": f"urn:private#/{pointer}"}, registry=_registry(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    ).validate(body)
    for name, header in spec.get("headers", {}).items():
        if header.get("required"):
            assert name in response, f"{method} {path} {status}: header {name} missing"


class PrivateApi:
    """JSON in; every response checked; `.body` is the parsed JSON, or the text."""

    def __init__(self, key: str | None = None):
        self.client = Client()
        self.key = key

    def request(self, method: str, path: str, body=None, *, key=..., headers=None, raw: bytes | None = None,
                content_type: str = "application/json"):
        key = self.key if key is ... else key
        extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in (headers or {}).items()}
        if key is not None:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {key}"
        data = raw if raw is not None else (json.dumps(body) if body is not None else "")
        response = self.client.generic(method, path, data=data, content_type=content_type, **extra)
        assert_conforms(method, path.split("?")[0], response)
        is_json = response["Content-Type"].startswith("application/json")
        response.body = json.loads(response.content) if is_json else response.content.decode()
        return response

    def get(self, path, **kwargs):
        return self.request("GET", path, **kwargs)

    def post(self, path, body=None, **kwargs):
        return self.request("POST", path, body, **kwargs)

    def patch(self, path, body=None, **kwargs):
        return self.request("PATCH", path, body, **kwargs)

    def delete(self, path, **kwargs):
        return self.request("DELETE", path, **kwargs)


@pytest.fixture
def private(space_and_key):
    """The private API, authenticated as a Pro space (the same key `api` uses for `/v1`)."""
    return PrivateApi(space_and_key[1])


@pytest.fixture
def private_anon():
    return PrivateApi(None)
