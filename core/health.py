"""`/healthz` (the process answers), `/readyz` (its database, and Redis when configured,
answer) and `/metrics` (core/metrics.py's exposition). Outside `/v1`, never rate limited."""

import functools
import hmac
import ipaddress
import logging
import re

from django.conf import settings
from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from core import metrics
from core.api.errors import error_response, json_404

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


def private_client(request) -> bool:
    """The client is on this machine or a private network (loopback, RFC 1918, link-local,
    unique local IPv6): the only ones /metrics answers without METRICS_TOKEN. The address
    that connected must be one, and so must every address a proxy named in front of it
    (`X-Forwarded-For`, `X-Real-IP`, `Forwarded`) unless the proxy is declared
    (BEHIND_TLS_PROXY: then the address it appended is the client's): a proxy on this machine
    that is not declared would otherwise pass the public off as loopback."""
    from core.login_guard import client_ip

    meta = request.META
    named = [client_ip(request) or ""]
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        return _private(named[0])
    named += meta["HTTP_X_FORWARDED_FOR"].split(",") if "HTTP_X_FORWARDED_FOR" in meta else []
    named += [meta["HTTP_X_REAL_IP"]] if "HTTP_X_REAL_IP" in meta else []
    named += _FORWARDED_FOR.findall(meta.get("HTTP_FORWARDED", ""))
    return all(_private(address.strip()) for address in named)


_FORWARDED_FOR = re.compile(r'for="?\[?([^\]";,]*)', re.IGNORECASE)


def _private(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_private


def metrics_view(request):
    """`GET /metrics`. With METRICS_TOKEN set, only for `Authorization: Bearer <token>`;
    without it, only for clients on loopback or private addresses (404 for the others)."""
    from prometheus_client import CONTENT_TYPE_LATEST

    if request.method != "GET":
        return json_404(request)
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return error_response(401, "UNAUTHORIZED", "A metrics scrape needs Authorization: Bearer <METRICS_TOKEN>.",
                                  {"WWW-Authenticate": 'Bearer realm="metrics"'})
    elif not private_client(request):
        return json_404(request)
    return HttpResponse(metrics.exposition(), content_type=CONTENT_TYPE_LATEST)
