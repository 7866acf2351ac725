"""The private API's failures, as it answered them (`/v1` answers every one with its single
envelope instead):

- a body or query that does not match the schema: 400 `{"data": <input>, "error": [Issue],
  "success": false}`, each issue with `code`, `path` (an array of keys and indexes) and
  `message`;
- the transport's own refusals in plain text: `Unauthorized` (401, with a
  `WWW-Authenticate` challenge), `Bad Request` (400, an Authorization header that is not
  `Bearer <key>`), `Malformed JSON in request body` (400), `404 Not Found` (no route) and
  `Internal Server Error` (500);
- everything else: `{"error": {"code", "message"}}`, as `/v1` answers it.
"""

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response

from core.api import errors as api_errors
from core.errors import ServiceError
from core.maintenance import maintenance_enabled
from polls.rules import PollNotFound

TEXT = "text/plain; charset=UTF-8"
NOT_FOUND_TEXT = "404 Not Found"
POLL_NOT_FOUND_MESSAGE = "Poll not found or does not belong to this space."
NOT_PRO_MESSAGE = "API access requires a Pro subscription. Upgrade this space in Settings > Billing."
RATE_LIMITED_MESSAGE = "Rate limit exceeded. Retry after the time indicated in the Retry-After header."


class LegacyError(exceptions.APIException):
    """A refusal with its code, in the `{"error": {"code", "message"}}` envelope."""

    def __init__(self, status: int, code: str, message: str):
        self.status_code, self.code, self.message = status, code, message
        super().__init__(message)


class InvalidInput(exceptions.APIException):
    """The body or query does not match the schema: the issues, and the input as given."""

    status_code = 400

    def __init__(self, issues: list[dict], data):
        self.issues, self.data = issues, data
        super().__init__("invalid input")


class MalformedJson(exceptions.APIException):
    status_code = 400


def text_response(status: int, text: str, headers: dict | None = None) -> HttpResponse:
    response = HttpResponse(text, status=status, content_type=TEXT)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@csrf_exempt  # else CSRF answers a POST with an HTML 403 first
def not_found(request, *args, **kwargs) -> HttpResponse:
    """Any other path under `/api/private` (maintenance first, as for every route)."""
    if maintenance_enabled():
        return api_errors.error_response(503, "SERVICE_UNAVAILABLE", "The service is down for maintenance.",
                                         {"Retry-After": str(settings.MAINTENANCE_RETRY_AFTER)})
    return text_response(404, NOT_FOUND_TEXT)


def _envelope(status: int, code: str, message: str, headers: dict | None = None) -> Response:
    response = Response(api_errors.error_body(code, message), status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def exception_handler(exc, context):
    if isinstance(exc, InvalidInput):
        return Response({"data": exc.data, "error": exc.issues, "success": False}, status=400)
    if isinstance(exc, LegacyError):
        return _envelope(exc.status_code, exc.code, exc.message)
    if isinstance(exc, MalformedJson):
        return text_response(400, "Malformed JSON in request body")
    if isinstance(exc, api_errors.NotFound):
        return text_response(404, NOT_FOUND_TEXT)
    if isinstance(exc, api_errors.InvalidAuthorizationHeader):
        return text_response(400, "Bad Request", {"WWW-Authenticate": 'Bearer error="invalid_request"'})
    if isinstance(exc, (api_errors.Unauthorized, exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        sent_a_key = "error=" in getattr(exc, "headers", {}).get("WWW-Authenticate", "")
        challenge = 'Bearer error="invalid_token"' if sent_a_key else 'Bearer realm=""'
        return text_response(401, "Unauthorized", {"WWW-Authenticate": challenge})
    if isinstance(exc, api_errors.SpaceNotPro):
        return _envelope(403, exc.code, NOT_PRO_MESSAGE)
    if isinstance(exc, api_errors.RateLimitExceeded):
        return _envelope(429, exc.code, RATE_LIMITED_MESSAGE, exc.headers)
    if isinstance(exc, PollNotFound):
        return _envelope(404, exc.code, POLL_NOT_FOUND_MESSAGE)
    if isinstance(exc, ServiceError):
        return _envelope(exc.status, exc.code, str(exc))
    # Maintenance, an unreachable store or database (503, the envelope), or a crash.
    response = api_errors.exception_handler(exc, context)
    if response.status_code == 500:
        return text_response(500, "Internal Server Error")
    return response


# --- Issues ---------------------------------------------------------------------------------

# DRF's error codes as the private API's issue codes.
_CODES = {
    "required": "invalid_type", "null": "invalid_type", "invalid": "invalid_type", "not_a_list": "invalid_type",
    "max_length": "too_big", "max_value": "too_big",
    "min_length": "too_small", "min_value": "too_small", "blank": "too_small", "empty": "too_small",
    "invalid_choice": "invalid_value", "format": "invalid_format",
}


def issue(path: list, message: str, code: str = "custom") -> dict:
    return {"code": code, "path": path, "message": message}


def issues_of(detail, path: list | None = None) -> list[dict]:
    """DRF's nested error detail as issues, in input order."""
    path = path or []
    if isinstance(detail, dict):
        found = []
        for key, value in detail.items():
            child = path if key == "non_field_errors" else [*path, key]
            found += issues_of(value, child)
        return found
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return [issue(path, str(item), _CODES.get(getattr(item, "code", ""), "custom")) for item in detail]
        found = []
        for index, value in enumerate(detail):
            if value:
                found += issues_of(value, [*path, index])
        return found
    return [issue(path, str(detail), _CODES.get(getattr(detail, "code", ""), "custom"))]
