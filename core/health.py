"""`/healthz` (the process answers) and `/readyz` (its database, and Redis when
configured, answer). Unauthenticated, outside `/v1`, never rate limited."""

import functools
import logging

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from core.api.errors import json_404

logger = logging.getLogger("service.health")


def get_only(view):
    """Any method but GET is an unknown route: the JSON 404 envelope, as under `/v1`
    (exempt from CSRF, which would otherwise answer a POST with an HTML 403 first)."""

    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request):
        return view(request) if request.method == "GET" else json_404(request)

    return wrapper


@get_only
def healthz(request):
    return JsonResponse({"status": "ok"})


@get_only
def readyz(request):
    checks = {"database": _check_database()}
    if settings.REDIS_URL:
        checks["redis"] = _check_redis()
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)


def _check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception:
        logger.exception("readiness: database unreachable")
        return "unreachable"


def _check_redis() -> str:
    import redis

    try:
        with redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1) as client:
            client.ping()  # the connection is closed on leaving the block
        return "ok"
    except Exception:
        logger.exception("readiness: redis unreachable")
        return "unreachable"
