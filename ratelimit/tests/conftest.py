"""Fixtures of the rate-limit tests: both stores, no counters left behind, a stopped clock."""

import socket

import pytest
import redis
import time_machine
from django.db.models.signals import post_save

from ratelimit.stores import RedisStore
from spaces.models import Space

REDIS_URL = "redis://127.0.0.1:6379/2"  # this app's own Redis database in tests


@pytest.fixture
def redis_client():
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


@pytest.fixture(autouse=True)
def forget_counters(redis_client):
    """No counter of one test can reach another: each test's spaces are new (random ids),
    and their Redis keys are deleted when it ends. Not FLUSHDB: another test run may be using
    the same Redis database at the same moment."""
    space_ids = []

    def collect(sender, instance, created, **kwargs):
        if created:
            space_ids.append(instance.pk)

    post_save.connect(collect, sender=Space, weak=False)
    yield
    post_save.disconnect(collect, sender=Space)
    if space_ids:
        redis_client.delete(*(RedisStore.key(space_id) for space_id in space_ids))


@pytest.fixture(params=["redis", "embedded"])
def store(request, settings):
    """Run the test against the Redis store and against the embedded (database) store."""
    settings.REDIS_URL = REDIS_URL if request.param == "redis" else ""
    return request.param


@pytest.fixture
def redis_store(settings):
    settings.REDIS_URL = REDIS_URL
    return "redis"


@pytest.fixture
def clock():
    """A stopped clock at a fixed instant; `clock.shift(seconds)` moves it."""
    with time_machine.travel("2027-03-01T12:00:00Z", tick=False) as traveller:
        yield traveller


def limit_headers(response) -> dict:
    """The RateLimit-* headers of a response (absent ones left out)."""
    names = ("RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
    return {name.removeprefix("RateLimit-"): response[name] for name in names if name in response}


def closed_port_url() -> str:
    """A Redis URL on a local port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"
