"""`/healthz` (the process answers) and `/readyz` (its database, and Redis when
configured, answer). Unauthenticated, outside `/v1`, never rate limited."""

import logging

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

logger = logging.getLogger("service.health")


@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


@require_GET
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
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping()
        return "ok"
    except Exception:
        logger.exception("readiness: redis unreachable")
        return "unreachable"
