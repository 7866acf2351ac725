"""Prometheus metrics of the service, scraped at `GET /metrics`.

Under gunicorn every worker process counts in files of `PROMETHEUS_MULTIPROC_DIR`
(config/gunicorn.py sets and empties it at start), and a scrape, answered by any worker,
adds them all up (prometheus-client's multiprocess mode). Without that directory (a single
process: tests, `runserver`) the process's own registry is served.

Counting costs a request a few microseconds (bench/metrics_overhead.py). What is read from
the database (the webhook outbox) is read at scrape time, by the scraping process only.
"""

import os
import time

from django.conf import settings
from django.db import connections
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))

REQUESTS = Counter("service_http_requests", "HTTP requests answered, by route template, method and status.",
                   ["route", "method", "status"])
LATENCY = Histogram("service_http_request_duration_seconds",
                    "Time from the request reaching the service to its answer, by route template.", ["route"],
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
REJECTIONS = Counter("service_http_rejections", "Requests refused with 429 or 503, by status and cause "
                     "(rate_limit, maintenance, database, ratelimit_store, overloaded, other).", ["status", "cause"])
RATELIMIT_STORE_ERRORS = Counter("service_ratelimit_store_errors",
                                 "Rate-limit counter store (Redis or the database) failures; each request fails closed (503).")
DELIVERIES = Counter("service_webhook_deliveries_finished",
                     "Webhook deliveries that reached a final state, by outcome (succeeded, failed, canceled).",
                     ["outcome"])
DB_POOL = Gauge("service_db_pool_connections",
                "PostgreSQL connections of the web processes' pools, by state (open: in the pool, idle: free, "
                "waiting: requests waiting for one), summed over the live processes.",
                ["state"], multiprocess_mode="livesum")

# The error messages of the 503s (core.api, ratelimit, the middleware) -> their cause.
CAUSES_503 = {
    "The service is down for maintenance.": "maintenance",
    "The database is unavailable; try again later.": "database",
    "The rate-limit service is unavailable; try again later.": "ratelimit_store",
    "The service is overloaded; try again later.": "overloaded",
}
# The `method` label's values: any other method a client makes up counts as `other`, so that
# requests never make new series.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_POOL_EVERY = 1.0  # seconds between two readings of a process's pool statistics
_pool_read_at = 0.0


def observe_request(route: str, method: str, status: int, seconds: float, message: str | None) -> None:
    """Count one answered request (the request middleware calls it). `message`: the error
    envelope's message of a 503, which names its cause."""
    REQUESTS.labels(route, method if method in METHODS else "other", status).inc()
    LATENCY.labels(route).observe(seconds)
    if status == 429:
        REJECTIONS.labels("429", "rate_limit").inc()
    elif status == 503:
        REJECTIONS.labels("503", CAUSES_503.get(message, "other")).inc()
    global _pool_read_at
    now = time.monotonic()
    if now - _pool_read_at >= _POOL_EVERY:
        _pool_read_at = now
        _read_pool()


def ratelimit_store_failed() -> None:
    RATELIMIT_STORE_ERRORS.inc()


def delivery_finished(outcome: str, count: int = 1) -> None:
    """`count` webhook deliveries reached `succeeded`, `failed` or `canceled`: for the
    delivery services to call where they record a final state (a bulk cancel passes the
    number of rows it updated)."""
    if count:
        DELIVERIES.labels(outcome).inc(count)


def _read_pool() -> None:
    pool = getattr(connections["default"], "pool", None) if "default" in connections else None
    if pool is None:
        return
    stats = pool.get_stats()
    DB_POOL.labels("open").set(stats.get("pool_size", 0))
    DB_POOL.labels("idle").set(stats.get("pool_available", 0))
    DB_POOL.labels("waiting").set(stats.get("requests_waiting", 0))


class ScrapeTimeCollector:
    """Gauges read when scraped: the outbox (settings.METRICS_COLLECTORS, dotted paths of
    functions returning metric families), so that core names no app."""

    def collect(self):
        from django.utils.module_loading import import_string

        for path in settings.METRICS_COLLECTORS:
            yield from import_string(path)()


def gauge(name: str, documentation: str, value: float, labels: dict[str, str] | None = None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=list(labels or {}))
    family.add_metric(list((labels or {}).values()), value)
    return family


def exposition() -> bytes:
    """The text a scrape answers: every process's counters (multiprocess mode) or this
    process's, and the scrape-time gauges."""
    if MULTIPROCESS:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY as registry
    scraped = CollectorRegistry()
    scraped.register(ScrapeTimeCollector())
    return generate_latest(registry) + generate_latest(scraped)
