"""Request id and trace id, one access-log line per request, and the JSON safety net for
crashes."""

import json
import logging
import re
import time
import uuid

from django.conf import settings

from core import metrics
from core.api.errors import DATABASE_ERRORS, InternalError, database_unavailable, error_response, log_crash
from core.bulkhead import SPACE_ID
from core.dbguard import NO_SLOT, REFUSED
from core.logging import bind, trace_id_of, unbind

access_log = logging.getLogger("service.access")
_STATIC = "/" + settings.STATIC_URL.lstrip("/")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")  # fullmatch: `$` would let a final newline in


def is_api_path(path: str) -> bool:
    return not path.startswith("/admin/")


def _answered_before_django(request):
    """The answer config/wsgi.py decided on without a request slot, or None. A refused body
    under the pages (settings.PAGE_PATH_PREFIXES) goes on, empty, for their middleware to
    answer with a page."""
    if request.META.get(REFUSED):  # the body was refused
        if request.path.startswith(settings.PAGE_PATH_PREFIXES):
            return None
        response = error_response(400, "VALIDATION_ERROR", request.META[REFUSED])
    elif request.META.get(NO_SLOT):  # every request slot stayed busy
        response = error_response(503, "SERVICE_UNAVAILABLE", "The service is overloaded; try again later.",
                                  {"Retry-After": str(settings.DATABASE_UNAVAILABLE_RETRY_AFTER)})
    else:
        return None
    response["Content-Length"] = str(len(response.content))  # CommonMiddleware, which would, does not run
    return response


class RequestContextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        incoming = request.headers.get("X-Request-ID", "")
        request.request_id = incoming if _REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        request.space_id = None
        # Every line logged for this request, and the tasks it enqueues, carry both ids.
        token = bind(request_id=request.request_id, trace_id=trace_id_of(request.META.get("HTTP_TRACEPARENT")))
        try:
            return self._respond(request, started)
        finally:
            unbind(token)

    def _respond(self, request, started):
        response = _answered_before_django(request)
        if response is None:
            response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        request.META[SPACE_ID] = request.space_id  # the WSGI environ: config/wsgi.py's bulkhead learns the key
        seconds = time.perf_counter() - started
        status = response.status_code
        metrics.observe_request(_route(request), request.method, status, seconds,
                                _error_message(response) if status == 503 else None)
        if request.path.startswith(_STATIC) and not settings.LOG_STATIC_REQUESTS:
            return response
        access_log.info(
            "request",
            extra={
                "method": request.method,
                "path": request.path,
                "status": status,
                "duration_ms": round(seconds * 1000, 2),
                "space_id": request.space_id,
                "request_id": request.request_id,
            },
        )
        return response

    def process_exception(self, request, exception):
        if not is_api_path(request.path):
            return None
        if isinstance(exception, DATABASE_ERRORS):  # e.g. in the maintenance check
            return error_response(*database_unavailable(request, exception))
        log_crash(request, exception)
        return error_response(InternalError.status_code, InternalError.code, InternalError.default_message)


def _route(request) -> str:
    """The metrics label of a request: its URL pattern (`/v1/polls/<str:pollId>`), so that
    ids never make new series; `unmatched` for what no route of the service matched, and
    `/static/` for the static files."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "/static/" if request.path.startswith(_STATIC) else "unmatched"
    if match.route == "^":  # the catch-all JSON 404
        return "unmatched"
    return "/" + match.route


def _error_message(response) -> str | None:
    try:
        return json.loads(response.content)["error"]["message"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
