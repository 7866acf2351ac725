"""Redis over its Unix socket (docs/deploy.md): REDIS_URL in redis-py's form makes a Celery
broker URL in kombu's, and the service's own commands to that broker read it back."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from core.brokers import celery_broker_url, redis_url
from tests.redisproc import start_redis

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("given", "celery"), [
    ("unix:///run/redis/redis.sock?db=3", "redis+socket:///run/redis/redis.sock?virtual_host=3"),
    ("unix://:pw@/run/redis.sock?db=1&socket_timeout=2", "redis+socket://:pw@/run/redis.sock?virtual_host=1&socket_timeout=2"),
    ("unix:///run/redis.sock", "redis+socket:///run/redis.sock"),
    ("redis://cache.internal:6379/0", "redis://cache.internal:6379/0"),
    ("rediss://:pw@cache.internal:6380/2", "rediss://:pw@cache.internal:6380/2"),
    ("", ""),
])
def test_a_redis_url_becomes_celerys_and_back(given, celery):
    assert celery_broker_url(given) == celery
    assert redis_url(celery) == (given or None)


@pytest.mark.parametrize("broker", ["memory://", "amqp://guest@localhost//", "sqs://", ""])
def test_a_broker_that_is_not_redis_has_no_redis_url(broker):
    assert redis_url(broker) is None


@pytest.fixture
def socket_redis(tmp_path):
    """A Redis server of this test's own, on a Unix socket only."""
    path = tmp_path / "redis.sock"
    client = redis.Redis(unix_socket_path=str(path), db=3)
    process = start_redis("--port", "0", "--unixsocket", str(path), client=client)
    yield path, client
    process.kill()
    process.wait(10)


def test_with_redis_on_a_unix_socket_a_write_enqueues_its_fan_out_and_marks_it(socket_redis, tmp_path):
    """A process configured with nothing but REDIS_URL=unix://...: the limiter counts there,
    Celery publishes there (kombu has no `unix://`: every enqueue used to fail) and the
    fan-out's mark is set there."""
    path, client = socket_redis
    code = (
        "import django, json, time; django.setup()\n"
        "from django.conf import settings\n"
        "from ratelimit.stores import get_store\n"
        "from webhooks import dispatch\n"
        "get_store().hit_key('socket-probe', int(time.time() * 1000), (1_000, 1_000))\n"
        "dispatch._enqueue_fan_out('evt000000001')\n"
        "print(json.dumps([settings.CELERY_BROKER_URL, settings.WEBHOOKS_DISPATCH]))\n"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "CELERY_BROKER_URL")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings", REDIS_URL=f"unix://{path}?db=3",
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3", LOG_LEVEL="WARNING",
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "could not enqueue" not in done.stderr, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [f"redis+socket://{path}?virtual_host=3", "celery"]
    (message,) = client.lrange("celery", 0, -1)
    assert json.loads(message)["headers"]["task"] == "webhooks.fan_out_event"
    assert client.get("webhooks:fan-out-queued") is not None
    assert client.exists("ratelimit:key:socket-probe")
