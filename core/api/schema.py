"""OpenAPI generation: the bearer security scheme, the error responses and headers every
operation may produce, and `additionalProperties: false` on every request object.

drf-spectacular adds none of these by itself; doing it here keeps the document generated
from the code, never edited by hand.
"""

from drf_spectacular.openapi import AutoSchema as BaseAutoSchema
from drf_spectacular.utils import OpenApiExample

from core.api import errors
from core.errors import ServiceError

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

# status -> (headers, whether they are always present) of the error responses of an
# authenticated operation. What each status means is generated from the error classes.
ERROR_HEADERS = {
    400: (RATELIMIT_HEADERS, False),
    401: (WWW_AUTHENTICATE, True),
    403: ({}, True),
    404: (RATELIMIT_HEADERS, False),
    429: ({**RETRY_AFTER, **RATELIMIT_HEADERS}, True),
    500: ({}, False),
    503: (RETRY_AFTER, True),
}


def _subclasses(cls) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def error_table() -> dict[int, list[tuple[str, str]]]:
    """status -> [(code, what it means)], from the error classes: the HTTP layer's
    (`ApiError`, in the order they are defined) and the services' refusals (`ServiceError`
    subclasses with a code of their own, at their own status),
    each described by its docstring."""
    table: dict[int, dict[str, str]] = {}

    def add(status: int, code: str, cls: type) -> None:
        table.setdefault(status, {}).setdefault(code, " ".join((cls.__doc__ or "").split()))

    for cls in _subclasses(errors.ApiError):
        add(cls.status_code, cls.code, cls)
    for cls in sorted(_subclasses(ServiceError), key=lambda cls: cls.code):
        if cls.code != ServiceError.code:
            add(cls.status, cls.code, cls)
    return {status: list(codes.items()) for status, codes in sorted(table.items())}


def _error_responses() -> dict[str, tuple[str, dict, bool]]:
    described = {}
    for status, codes in error_table().items():
        text = "\n".join(f"- `{code}`: {meaning}" if meaning else f"- `{code}`" for code, meaning in codes)
        described[str(status)] = (text, *ERROR_HEADERS[status])
    return described


# The public operation (the OpenAPI document) has no key, limits or ids to refuse.
PUBLIC_ERRORS = {
    "400": ("- `VALIDATION_ERROR`: a query parameter the operation does not have.", {}, False),
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


def response_example(name: str, value, status: int = 200) -> OpenApiExample:
    """An example of one operation's response with this status (tests validate every
    example against its schema)."""
    return OpenApiExample(name, value=value, response_only=True, status_codes=[str(status)])


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
    every_error = _error_responses()
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
            codes = every_error if authenticated else {**PUBLIC_ERRORS, "500": every_error["500"]}
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
