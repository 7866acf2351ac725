"""Request id, one access-log line per request, and the JSON safety net for crashes."""

import logging
import re
import time
import uuid

from django.conf import settings

from core.api.errors import DATABASE_ERRORS, InternalError, database_unavailable, error_response, log_crash
from core.dbguard import NO_SLOT

access_log = logging.getLogger("service.access")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")  # fullmatch: `$` would let a final newline in


def is_api_path(path: str) -> bool:
    return not path.startswith("/admin/")


class RequestContextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        incoming = request.headers.get("X-Request-ID", "")
        request.request_id = incoming if _REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        request.space_id = None
        if request.META.get(NO_SLOT):  # config/wsgi.py: every request slot stayed busy
            response = error_response(503, "SERVICE_UNAVAILABLE", "The service is overloaded; try again later.",
                                      {"Retry-After": str(settings.DATABASE_UNAVAILABLE_RETRY_AFTER)})
        else:
            response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        access_log.info(
            "request",
            extra={
                "method": request.method,
                "path": request.path,
                "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
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
