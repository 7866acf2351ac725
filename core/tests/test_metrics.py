"""`GET /metrics`: Prometheus counters of requests, rejections and deliveries, latency
histograms, pool and outbox gauges; a bearer token when METRICS_TOKEN is set; and the counts
of every gunicorn worker added up in one scrape."""

import json
from concurrent.futures import ThreadPoolExecutor

from django.db.models import F
from prometheus_client.parser import text_string_to_metric_families

from core import metrics
from polls.tests.factories import make_poll


def samples(text: str) -> dict[tuple, float]:
    """(sample name, sorted labels) -> value."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(parsed: dict, name: str, **labels) -> float:
    return parsed.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(client, **headers) -> dict:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return samples(response.content.decode())


def test_requests_are_counted_by_route_template_method_and_status(client, api, space):
    before = scrape(client)
    poll = make_poll(space)
    api.get(f"/v1/polls/{poll.pk}")
    api.get("/v1/polls/nOtApOlLiD12")
    api.get("/v1/nope")
    after = scrape(client)
    route = "/v1/polls/<str:pollId>"
    for status in ("200", "404"):
        counted = value(after, "service_http_requests_total", route=route, method="GET", status=status)
        assert counted - value(before, "service_http_requests_total", route=route, method="GET", status=status) == 1
    assert value(after, "service_http_requests_total", route="unmatched", method="GET", status="404") >= 1
    assert not any(poll.pk in str(key) for key in after)  # ids never make series
    count = value(after, "service_http_request_duration_seconds_count", route=route)
    assert count - value(before, "service_http_request_duration_seconds_count", route=route) == 2
    assert value(after, "service_http_request_duration_seconds_bucket", route=route, le="+Inf") == count


def test_429s_and_503s_are_counted_by_cause(client, api, settings, monkeypatch):
    before = scrape(client)
    settings.RATELIMIT_PER_MINUTE = 1
    api.get("/v1/polls")
    assert api.get("/v1/polls").status_code == 429
    settings.RATELIMIT_PER_MINUTE = 1000
    from ratelimit import stores

    def down(*args, **kwargs):
        raise stores.StoreUnavailable("down")

    monkeypatch.setattr(stores.get_store().__class__, "start_hit", down)  # what the limiter calls
    assert api.get("/v1/polls").status_code == 503
    monkeypatch.undo()
    settings.MAINTENANCE_MODE = True
    from core import maintenance

    maintenance._cached = None
    assert api.get("/v1/polls").status_code == 503
    settings.MAINTENANCE_MODE = False
    maintenance._cached = None
    after = scrape(client)
    for labels in ({"status": "429", "cause": "rate_limit"}, {"status": "503", "cause": "ratelimit_store"},
                   {"status": "503", "cause": "maintenance"}):
        added = value(after, "service_http_rejections_total", **labels) - value(before, "service_http_rejections_total", **labels)
        assert added == 1, labels
    assert value(after, "service_ratelimit_store_errors_total") - value(before, "service_ratelimit_store_errors_total") == 1


def test_the_outbox_gauges_and_the_delivery_outcome_hook(client, space, db, settings):
    settings.WEBHOOKS_DISPATCH = "embedded"  # (no Celery ping at each scrape)
    make_poll(space)  # an event, not yet fanned out
    before = scrape(client)
    assert value(before, "service_webhook_events_undispatched") >= 1
    assert value(before, "service_webhook_events_undispatched_oldest_age_seconds") >= 0
    assert ("service_webhook_deliveries_due", ()) in before
    assert value(before, "service_webhook_dispatch_mode", mode="embedded") == 1
    metrics.delivery_finished("succeeded")
    after = scrape(client)
    assert value(after, "service_webhook_deliveries_finished_total", outcome="succeeded") == value(
        before, "service_webhook_deliveries_finished_total", outcome="succeeded") + 1


def test_a_metrics_token_is_required_when_set(client, settings, db):
    settings.METRICS_TOKEN = "s3cret-scrape-token"
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer wrong"}, {"HTTP_AUTHORIZATION": "s3cret-scrape-token"}):
        response = client.get("/metrics", **headers)
        assert response.status_code == 401 and response.json()["error"]["code"] == "UNAUTHORIZED"
        assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    scrape(client, HTTP_AUTHORIZATION="Bearer s3cret-scrape-token")
    assert client.post("/metrics").status_code == 404



def test_made_up_methods_count_as_other(client, db):
    for method in ("FOO", "BAR", "PROPFIND"):
        client.generic(method, "/v1/polls")
    client.generic("OPTIONS", "/v1/polls")
    parsed = scrape(client)
    methods = {dict(labels).get("method") for (name, labels) in parsed if name == "service_http_requests_total"}
    assert "other" in methods and "OPTIONS" in methods
    assert not methods & {"FOO", "BAR", "PROPFIND"}
    assert methods <= metrics.METHODS | {"other"}


def test_without_a_token_only_loopback_and_private_addresses_scrape(settings, db):
    from django.test import Client

    settings.METRICS_TOKEN = ""
    for address in ("127.0.0.1", "::1", "10.0.0.7", "172.16.3.4", "192.168.1.9", "fd00::5", "::ffff:10.1.1.1"):
        assert Client(REMOTE_ADDR=address).get("/metrics").status_code == 200, address
    for address in ("8.8.8.8", "2a00:1450::1", "100.64.0.1", "::ffff:8.8.4.4", ""):
        response = Client(REMOTE_ADDR=address).get("/metrics")
        assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND", address
    # Behind the TLS proxy the proxy's own (private) address does not count: the client's does.
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="8.8.8.8").get("/metrics").status_code == 404
    assert Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="8.8.8.8, 10.0.0.9").get("/metrics").status_code == 200
    # A proxy on this machine, not declared: the addresses it names in front of it count too.
    settings.SECURE_PROXY_SSL_HEADER = None
    for header, value in (("HTTP_X_FORWARDED_FOR", "8.8.8.8"), ("HTTP_X_FORWARDED_FOR", "10.0.0.3, 8.8.8.8"),
                          ("HTTP_X_REAL_IP", "8.8.8.8"), ("HTTP_FORWARDED", 'for="[2a00:1450::1]:443";proto=https'),
                          ("HTTP_FORWARDED", "for=unknown"), ("HTTP_X_FORWARDED_FOR", "")):
        assert Client(**{header: value}).get("/metrics").status_code == 404, (header, value)
    assert Client(HTTP_X_FORWARDED_FOR="10.0.0.3, 192.168.0.4", HTTP_FORWARDED="for=10.0.0.3").get(
        "/metrics").status_code == 200
    # With a token, the token decides, from anywhere.
    settings.METRICS_TOKEN = "s3cret-scrape-token"
    public = Client(REMOTE_ADDR="8.8.8.8")
    assert public.get("/metrics").status_code == 401
    assert public.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape-token").status_code == 200


# --- Two gunicorn workers ----------------------------------------------------------------


def test_a_scrape_adds_up_the_counts_of_both_gunicorn_workers(tmp_path):
    from tests import webproc

    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    (metrics_dir / "counter_1.db").write_bytes(b"left over from an earlier run")
    port = webproc.free_port()
    env = webproc.base_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", port, WEB_CONCURRENCY=2, RATELIMIT_PER_MINUTE=30,
                           METRICS_TOKEN="scrape-token", PROMETHEUS_MULTIPROC_DIR=metrics_dir)
    webproc.manage(env, "manage.py", "migrate", "-v0")
    key = json.loads(webproc.manage(env, "manage.py", "demo", "--json", "--base-url", f"http://127.0.0.1:{port}"))["key"]
    with webproc.serving(env):
        # 40 requests at once over separate connections: both workers take some.
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: webproc.request(port, "GET", "/v1/polls", key)[0], range(40)))
        assert sorted(set(statuses)) == [200, 429] and statuses.count(200) == 30
        workers = {path.name for path in metrics_dir.glob("counter_*.db")}
        assert len(workers) == 2, workers  # both counted (and the leftover file was removed)
        assert webproc.request(port, "GET", "/metrics")[0] == 401
        for _ in range(3):  # whichever worker answers the scrape, it reports both
            status, _, body, _ = webproc.request(port, "GET", "/metrics", "scrape-token")
            assert status == 200
            parsed = samples(body.decode())
            labels = {"route": "/v1/polls", "method": "GET"}
            assert value(parsed, "service_http_requests_total", status="200", **labels) == 30
            assert value(parsed, "service_http_requests_total", status="429", **labels) == 10
            assert value(parsed, "service_http_rejections_total", status="429", cause="rate_limit") == 10
            assert value(parsed, "service_http_request_duration_seconds_count", route="/v1/polls") == 40


def test_the_embedded_dispatchers_heartbeat_age(client, transactional_db, settings):
    """The loop runs in another process than the scraped one: its heartbeat goes through the
    database, and a scrape reports its age; NaN before any loop ever ran."""
    import math
    import threading
    from datetime import timedelta

    from webhooks import dispatch
    from webhooks.models import DispatcherHeartbeat

    settings.WEBHOOKS_DISPATCH = "embedded"
    age = "service_webhook_dispatcher_heartbeat_age_seconds"
    assert math.isnan(scrape(client)[(age, ())])
    stop = threading.Event()
    thread = dispatch.Dispatcher(threads=1, poll_seconds=0.05).start(stop)
    try:
        for _ in range(200):  # the first turn of the loop beats
            if DispatcherHeartbeat.objects.exists():
                break
            threading.Event().wait(0.05)
        assert 0 <= scrape(client)[(age, ())] < 60
    finally:
        stop.set()
        dispatch.wake()
        thread.join()
    DispatcherHeartbeat.objects.update(beat_at=F("beat_at") - timedelta(hours=1))  # the loop died long ago
    assert scrape(client)[(age, ())] >= 3600
