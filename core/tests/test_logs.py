"""The service's log lines: JSON with a UTC millisecond timestamp, the request id and the
W3C trace id on every line of a request and of the webhook task it caused, the same format
in Celery's worker and beat, and no line per static file unless asked."""

import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings

from core.logging import JsonFormatter, trace_id_of
from tests.waiting import wait_until

ROOT = Path(settings.BASE_DIR)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


class Lines:
    """What the service's log handler (settings.LOGGING's `console`) writes, as parsed JSON."""

    def __init__(self):
        self.stream = io.StringIO()
        self.restore = []

    def attach(self) -> None:
        """Write the handler's lines here (again, after something configured logging anew:
        a Celery worker's start runs django.setup())."""
        handler = next(h for h in logging.getLogger().handlers if isinstance(h.formatter, JsonFormatter))
        self.restore.append((handler, handler.setStream(self.stream)))

    def __call__(self) -> list[dict]:
        text = self.stream.getvalue()
        self.stream.seek(0)
        self.stream.truncate()
        return json_lines(text)


@pytest.fixture
def log_lines(caplog):
    caplog.set_level("INFO", logger="service.access")
    caplog.set_level("WARNING", logger="service.webhooks")
    lines = Lines()
    lines.attach()
    yield lines
    for handler, stream in reversed(lines.restore):
        handler.setStream(stream)


@pytest.mark.parametrize("header, expected", [
    (TRACEPARENT, TRACE_ID),
    (f" {TRACEPARENT} ", TRACE_ID),
    (f"00-{TRACE_ID}-00f067aa0ba902b7-01-extra", None),
    (f"00-{'0' * 32}-00f067aa0ba902b7-01", None),
    (f"00-{TRACE_ID}-{'0' * 16}-01", None),
    (f"ff-{TRACE_ID}-00f067aa0ba902b7-01", None),
    (TRACEPARENT.upper(), None),
    ("", None), (None, None), ("x" * 10_000, None),
])
def test_traceparent_is_parsed_strictly(header, expected):
    assert trace_id_of(header) == expected


def test_every_line_of_a_request_carries_its_request_and_trace_ids(api, log_lines, monkeypatch):
    api.get("/v1/polls", headers={"traceparent": TRACEPARENT, "X-Request-ID": "req-1"})
    from polls import selectors

    monkeypatch.setattr(selectors, "list_polls", lambda *a, **k: 1 / 0)
    crashed = api.get("/v1/polls", headers={"traceparent": TRACEPARENT, "X-Request-ID": "req-2"})
    assert crashed.status_code == 500
    api.get("/v1/polls", headers={"traceparent": "garbage", "X-Request-ID": "req-3"})
    lines = log_lines()
    by_request = {}
    for line in lines:
        by_request.setdefault(line.get("request_id"), []).append(line)
    assert [line["message"] for line in by_request["req-1"]] == ["request"]
    assert [line["message"] for line in by_request["req-2"]] == ["unhandled exception", "request"]
    assert all(line["trace_id"] == TRACE_ID for line in by_request["req-1"] + by_request["req-2"])
    assert "trace_id" not in by_request["req-3"][0]
    assert all(TIME.match(line["time"]) for line in lines), [line["time"] for line in lines]


def test_static_files_are_not_logged_unless_asked(client, log_lines, settings):
    client.get("/static/admin/css/base.css")
    client.get("/healthz")
    assert [line["path"] for line in log_lines() if line["message"] == "request"] == ["/healthz"]
    settings.LOG_STATIC_REQUESTS = True
    client.get("/static/admin/css/base.css")
    assert [line["path"] for line in log_lines() if line["message"] == "request"] == ["/static/admin/css/base.css"]


@pytest.mark.django_db(transaction=True)
def test_the_webhook_task_a_request_caused_logs_with_its_trace_id(local_urls, receiver, make_space, make_endpoint,
                                                                log_lines, broker):
    from config.celery import app
    from conftest import Api
    from webhooks.tests.fixtures import use_broker

    local_urls.WEBHOOKS_DISPATCH = "celery"
    previous = use_broker(broker.url)  # a redis-server of this test's own
    space, key = make_space()
    make_endpoint(receiver.url_for("/down"), target_space=space)
    receiver.expect_request("/down").respond_with_data("no", status=500)
    try:
        with start_worker(app, perform_ping_check=False, shutdown_timeout=10):
            log_lines.attach()
            created = Api(key).post("/v1/polls", {"title": "Traced", "kind": "date", "options": [{"date": "2031-01-01"}]},
                                    headers={"traceparent": TRACEPARENT, "X-Request-ID": "req-traced"})
            assert created.status_code == 201
            failed = wait_until(lambda: [line for line in log_lines() if line["message"] == "webhook attempt failed"],
                                60, message="the worker logged no failed attempt")
    finally:
        use_broker(previous)
    assert (failed[0]["trace_id"], failed[0]["request_id"]) == (TRACE_ID, "req-traced")
    assert failed[0]["task_id"] and TIME.match(failed[0]["time"])


def test_celery_worker_and_beat_log_json_lines(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "CELERY_BROKER_URL")}
    env.update(CELERY_BROKER_URL="memory://", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               DJANGO_SETTINGS_MODULE="config.settings",
               # Run as root (CI), the worker warns so before it loads the project and its log
               # settings; that one plain line is not the service's to format.
               PYTHONWARNINGS="ignore:You're running the worker with superuser privileges")
    celery = [sys.executable, "-m", "celery", "-A", "config"]
    # Each is stopped once it has logged that it is running. Beat logs "Starting..." before it
    # opens its schedule file, and a SIGTERM while it opens it makes Celery build a second
    # scheduler from its signal handler and die with a plain traceback (Celery's, not the log
    # settings'): beat is waited for until its first tick, which it logs at DEBUG only.
    commands = {
        "worker": ([*celery, "worker", "--pool", "solo", "--without-heartbeat", "--without-mingle", "--without-gossip"],
                   "INFO", "ready."),
        "beat": ([*celery, "beat", "--schedule", str(tmp_path / "beat-schedule")], "DEBUG",
                 "beat: Ticking with max interval"),
    }
    for name, (command, level, ready) in commands.items():
        log = tmp_path / f"{name}.log"
        with open(log, "w") as err:
            process = subprocess.Popen(command, cwd=ROOT, env={**env, "LOG_LEVEL": level}, stdout=subprocess.DEVNULL,
                                       stderr=err, start_new_session=True)
        try:
            wait_until(lambda: ready in log.read_text() or process.poll() is not None, 60, interval=0.2)
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        lines = [line for line in log.read_text().splitlines() if line.strip()]
        assert any(ready in line for line in lines), (name, lines)
        not_json = [line for line in lines if not line.startswith("{")]
        assert not not_json, (name, lines)  # every line JSON, none in Celery's own format (the whole log if not)
        parsed = [json.loads(line) for line in lines]
        assert all(TIME.match(line["time"]) and line["level"] and line["logger"] for line in parsed), parsed


def test_a_broker_shared_with_another_installation_is_reported(broker):
    from config import celery

    assert celery.claim_broker(broker.url, "test-prefix:", "postgresql://db-a:5432/polls") is None
    assert celery.claim_broker(broker.url, "test-prefix:", "postgresql://db-a:5432/polls") is None
    assert celery.claim_broker(broker.url, "test-prefix:", "postgresql://db-b:5432/polls") == "postgresql://db-a:5432/polls"
    assert celery.claim_broker(broker.url, "other-prefix:", "postgresql://db-a:5432/polls") is None
    assert "password" not in celery.installation_identity()


def test_worker_and_beat_start_warn_when_the_broker_is_shared(caplog, settings, broker):
    import redis

    from config import celery

    settings.CELERY_BROKER_URL, settings.CELERY_BROKER_PREFIX = broker.url, "check-prefix:"
    client = redis.Redis.from_url(broker.url)
    key = "check-prefix:" + celery.BROKER_CLAIM_KEY
    client.set(key, "postgresql://another-installation:5432/polls")
    with caplog.at_level("ERROR", logger="service.celery"):
        celery.check_broker_is_ours()
        celery.check_broker_is_ours()  # now ours: quiet
    errors = [record for record in caplog.records if record.name == "service.celery"]
    assert len(errors) == 1 and "another installation uses this Redis database" in errors[0].getMessage()
    assert errors[0].other_installation == "postgresql://another-installation:5432/polls"
    assert client.get(key).decode() == celery.installation_identity()


def test_gunicorn_builds_no_access_line_of_its_own_unless_asked_for():
    from gunicorn.config import Config

    from core.logging import GunicornLogger

    config = Config()
    config.set("logger_class", "core.logging.GunicornLogger")
    config.set("logconfig_dict", {"version": 1, "disable_existing_loggers": False})
    assert config.logger_class is GunicornLogger
    logger = GunicornLogger(config)
    assert not logger.access_log_enabled  # gunicorn's own Logger says True given a logconfig_dict
    config.set("accesslog", "-")
    logger.setup(config)
    assert logger.access_log_enabled
