"""The one error envelope: `{"error": {"code": ..., "message": ...}}`.

Every failure under `/v1` (and the health endpoints) leaves through here: DRF exceptions
via `exception_handler`, Django-level failures (unknown routes, crashes outside DRF) via
`error_response` called from the URL catch-all and the request middleware.
"""

import logging

from django.conf import settings
from django.core.exceptions import SuspiciousOperation, TooManyFieldsSent
from django.db import InterfaceError, OperationalError
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response

from core.errors import ServiceError

logger = logging.getLogger("service.errors")


class ApiError(exceptions.APIException):
    """An error with a stable code; raise a subclass or an instance from any layer."""

    status_code = 400
    code = "VALIDATION_ERROR"
    default_message = "The request is not valid."

    def __init__(self, message: str | None = None, *, headers: dict[str, str] | None = None):
        self.message = message or self.default_message
        self.headers = headers or {}
        super().__init__(self.message)


class ValidationFailed(ApiError):
    """The message names each field as `<path>: <reason>`, joined by `; `."""

    status_code, code, default_message = 400, "VALIDATION_ERROR", "The request is not valid."


class InvalidAuthorizationHeader(ApiError):
    """The Authorization header is not `Bearer <API key>`."""

    status_code, code = 400, "INVALID_AUTHORIZATION_HEADER"
    default_message = "The Authorization header must be of the form 'Bearer <API key>'."


class Unauthorized(ApiError):
    """The key is missing, invalid, expired or revoked, or its owner is banned."""

    status_code, code = 401, "UNAUTHORIZED"
    default_message = "A valid API key is required."


class SpaceNotPro(ApiError):
    """The key's space has no Pro subscription."""

    status_code, code = 403, "SPACE_NOT_PRO"
    default_message = "The API is available only for spaces with a Pro subscription."


class NotFound(ApiError):
    """No route for this method and path."""

    status_code, code = 404, "NOT_FOUND"
    default_message = "No route matches this method and path."


class RateLimitExceeded(ApiError):
    """A window of the space is exhausted."""

    status_code, code, default_message = 429, "RATE_LIMIT_EXCEEDED", "Rate limit exceeded."


class ServiceUnavailable(ApiError):
    """Maintenance (`Retry-After: 300`), the rate-limit store is unreachable (`Retry-After: 60`), or the
    database is (`Retry-After: 30`; it is down, frozen or too slow: the answer comes within seconds, never as
    a hang), or every request slot of the process stayed busy for `DB_REQUEST_TIMEOUT` seconds
    (`Retry-After: 30`). No RateLimit headers."""

    status_code, code = 503, "SERVICE_UNAVAILABLE"
    default_message = "The service is temporarily unavailable."


class InternalError(ApiError):
    """An unexpected failure; nothing was half-done."""

    status_code, code, default_message = 500, "INTERNAL_ERROR", "An unexpected error occurred."


def error_body(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": message}}


def error_response(status: int, code: str, message: str, headers: dict | None = None) -> JsonResponse:
    response = JsonResponse(error_body(code, message), status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def flatten_validation_errors(detail, path: str = "") -> list[str]:
    """Turn DRF's nested error detail into `path: reason` strings, in input order."""
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            if key == "non_field_errors":
                child = path
            elif path:
                child = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"
            else:
                child = f"[{key}]" if isinstance(key, int) else str(key)
            out += flatten_validation_errors(value, child)
        return out
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return [f"{path or 'body'}: {item}" for item in dict.fromkeys(detail)]
        out = []
        for index, value in enumerate(detail):
            if value:
                out += flatten_validation_errors(value, f"{path}[{index}]")
        return out
    return [f"{path or 'body'}: {detail}"]


def exception_handler(exc, context):
    request = context.get("request")
    if isinstance(exc, ApiError):
        return _respond(exc.status_code, exc.code, exc.message, exc.headers)
    if isinstance(exc, exceptions.ValidationError):
        return _respond(400, "VALIDATION_ERROR", "; ".join(flatten_validation_errors(exc.detail)))
    if isinstance(exc, TooManyFieldsSent):
        return _respond(400, "VALIDATION_ERROR", "query: too many parameters")
    if isinstance(exc, SuspiciousOperation):
        return _respond(400, "VALIDATION_ERROR", "request: refused as malformed")
    if isinstance(exc, exceptions.ParseError):
        return _respond(400, "VALIDATION_ERROR", f"body: {exc.detail}")
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return _respond(400, "VALIDATION_ERROR", "body: Content-Type must be application/json")
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return _respond(401, "UNAUTHORIZED", Unauthorized.default_message,
                        {"WWW-Authenticate": 'Bearer realm="api"'})
    if isinstance(exc, (exceptions.NotFound, exceptions.MethodNotAllowed)):
        return _respond(404, "NOT_FOUND", NotFound.default_message)
    if isinstance(exc, ServiceError):  # a refusal: its own code and status
        return _respond(exc.status, exc.code, str(exc))
    if isinstance(exc, DATABASE_ERRORS):
        return _respond(*database_unavailable(request, exc))
    log_crash(request, exc)
    return _respond(InternalError.status_code, InternalError.code, InternalError.default_message)


DATABASE_ERRORS = (OperationalError, InterfaceError)


def database_unavailable(request, exc) -> tuple[int, str, str, dict]:
    """The answer to a database that cannot be reached, is frozen, or timed out (a
    statement, a lock wait, a free pooled connection): 503, never a 500 or a hang."""
    request_id = getattr(request, "request_id", None) if request is not None else None
    logger.warning("database unavailable", extra={"error": str(exc)[:300], "request_id": request_id})
    return (503, "SERVICE_UNAVAILABLE", "The database is unavailable; try again later.",
            {"Retry-After": str(settings.DATABASE_UNAVAILABLE_RETRY_AFTER)})


def log_crash(request, exc) -> None:
    request_id = getattr(request, "request_id", None) if request is not None else None
    logger.error("unhandled exception", exc_info=exc, extra={"request_id": request_id})
    if request is not None:
        # Mark the Django request so the access log records the crash once.
        getattr(request, "_request", request).crashed = True


def _respond(status, code, message, headers=None) -> Response:
    response = Response(error_body(code, message), status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@csrf_exempt  # else CSRF answers an unknown POST route with an HTML 403 first
def json_404(request, exception=None):
    return error_response(404, "NOT_FOUND", NotFound.default_message)


def json_400(request, exception=None):
    """Django's own 400 (a malformed or disallowed Host header, refused before any view)."""
    return error_response(400, "VALIDATION_ERROR", "request: refused as malformed")


def json_500(request):
    return error_response(InternalError.status_code, InternalError.code, InternalError.default_message)

