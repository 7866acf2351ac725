"""OpenAPI generation: the bearer security scheme, the error responses and headers every
operation may produce, and `additionalProperties: false` on every request object.

drf-spectacular adds none of these by itself; doing it here keeps the document generated
from the code, never edited by hand.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from rest_framework import serializers

RATELIMIT_HEADERS = {
    "RateLimit-Policy": ("Both limits of the space, e.g. `60;w=60, 5000;w=86400`.", "string"),
    "RateLimit-Limit": ("Size of the window closest to exhaustion.", "integer"),
    "RateLimit-Remaining": ("Requests left in that window.", "integer"),
    "RateLimit-Reset": ("Whole seconds until that window resets.", "integer"),
}
IDEMPOTENT_REPLAYED = {
    "Idempotent-Replayed": ("`true` when this is the stored answer to an earlier request with the same "
                            "`Idempotency-Key` and body (nothing was created); absent otherwise.", "string"),
}
RETRY_AFTER = {"Retry-After": ("Whole seconds to wait before retrying.", "integer")}
WWW_AUTHENTICATE = {"WWW-Authenticate": ('RFC 6750 challenge: `Bearer realm="api"`, with `error="invalid_token"` for a bad key.', "string")}

ERRORS = {
    "400": ("Bad request: `VALIDATION_ERROR` (the message names each field as `<path>: <reason>`, joined by `; `), "
            "`INVALID_AUTHORIZATION_HEADER`, `ORGANIZER_NOT_MEMBER`, `TOO_MANY_OPTIONS`, `INAPPROPRIATE_CONTENT` or "
            "`TOO_MANY_WEBHOOKS`.",
            RATELIMIT_HEADERS, False),
    "401": ("`UNAUTHORIZED`: the key is missing, invalid, expired or revoked, or its owner is banned.", WWW_AUTHENTICATE, True),
    "403": ("`SPACE_NOT_PRO`: the key's space has no Pro subscription.", {}, True),
    "404": ("`NOT_FOUND` (no route for this method and path), `POLL_NOT_FOUND`, `PARTICIPANT_NOT_FOUND` "
            "or `WEBHOOK_NOT_FOUND`.", RATELIMIT_HEADERS, False),
    "429": ("`RATE_LIMIT_EXCEEDED`: a window of the space is exhausted.", {**RETRY_AFTER, **RATELIMIT_HEADERS}, True),
    "500": ("`INTERNAL_ERROR`: an unexpected failure; nothing was half-done.", {}, False),
    "503": ("`SERVICE_UNAVAILABLE`: maintenance (`Retry-After: 300`), the rate-limit store is unreachable "
            "(`Retry-After: 60`), or the database is (`Retry-After: 30`; it is down, frozen or too slow: "
            "the answer comes within seconds, never as a hang), or every request slot of the process stayed busy "
            "for `DB_REQUEST_TIMEOUT` seconds (`Retry-After: 30`). No RateLimit headers.", RETRY_AFTER, True),
}

# The public operation (the OpenAPI document) has no key, limits or ids to refuse.
PUBLIC_ERRORS = {
    "400": ("`VALIDATION_ERROR`: a query parameter the operation does not have.", {}, False),
    "500": ERRORS["500"],
}

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "Stable; what clients branch on.", "examples": ["POLL_NOT_FOUND"]},
                "message": {"type": "string", "description": "For humans; may change."},
            },
        }
    },
}


class AutoSchema(BaseAutoSchema):
    pass


def envelope(name: str, inner, many: bool = False, paginated: bool = False):
    """A `{data: ...}` response component (documentation only: reads build plain dicts)."""
    fields = {"data": inner(many=True) if many else inner()}
    if paginated:
        fields["nextCursor"] = serializers.CharField(
            allow_null=True, help_text="Pass as `cursor` for the next page; null on the last page."
        )
    return type(name, (serializers.Serializer,), fields)


class DeletedSerializer(serializers.Serializer):
    """The result of a delete."""

    id = serializers.CharField()
    deleted = serializers.BooleanField()


class BearerKeyScheme(OpenApiAuthenticationExtension):
    target_class = "spaces.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "sk_<8 chars>_<32 chars>",
            "description": "An API key of the space: `Authorization: Bearer <API key>`.",
        }


def _headers(spec: dict, required: bool) -> dict:
    return {
        name: {"description": text, "required": required, "schema": {"type": kind}}
        for name, (text, kind) in spec.items()
    }


def _forbid_additional(schema: dict, components: dict, seen: set) -> None:
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            _forbid_additional(components.get(name, {}), components, seen)
        return
    if schema.get("type") == "object" and "properties" in schema:
        schema["additionalProperties"] = False
    for key in ("properties",):
        for child in schema.get(key, {}).values():
            _forbid_additional(child, components, seen)
    for key in ("items",):
        _forbid_additional(schema.get(key), components, seen)
    for key in ("oneOf", "anyOf", "allOf"):
        for child in schema.get(key, []):
            _forbid_additional(child, components, seen)


def postprocess(result, generator, request, public):
    components = result.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["Error"] = ERROR_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            authenticated = bool(operation.get("security")) and operation["security"] != [{}]
            responses = operation.setdefault("responses", {})
            idempotent = any(p.get("in") == "header" and p.get("name") == "Idempotency-Key"
                             for p in operation.get("parameters", []))
            for status, response in responses.items():
                if status.startswith("2") and authenticated:
                    response["headers"] = _headers(RATELIMIT_HEADERS, True)
                if status == "201" and idempotent:
                    response["headers"].update(_headers(IDEMPOTENT_REPLAYED, False))
            codes = ERRORS if authenticated else PUBLIC_ERRORS
            for status, (text, headers, required) in codes.items():
                responses.setdefault(status, {
                    "description": text,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                    **({"headers": _headers(headers, required)} if headers else {}),
                })
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                _forbid_additional(body, schemas, set())
                operation["requestBody"]["required"] = True
    return result
