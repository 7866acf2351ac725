"""Fail closed: a Redis that is down, hangs or answers with an error gives a quick 503, never
a 500 or a hang, and service resumes by itself when Redis is back."""

import socket
import time

import pytest
import redis

from polls.models import Poll
from polls.tests.factories import date_poll_body
from ratelimit.stores import RedisStore
from ratelimit.tests.conftest import closed_port_url, limit_headers
from tests.redisproc import start_redis


def assert_unavailable(response, retry_after="60"):
    assert (response.status_code, response.body["error"]["code"]) == (503, "SERVICE_UNAVAILABLE")
    assert response["Retry-After"] == retry_after
    assert limit_headers(response) == {}


def test_a_closed_port_gives_503_at_once(api, settings):
    settings.REDIS_URL = closed_port_url()
    started = time.monotonic()
    assert_unavailable(api.get("/v1/polls"))
    assert_unavailable(api.post("/v1/polls", {"title": "x"}))  # before validation
    assert time.monotonic() - started < 1
    settings.RATELIMIT_UNAVAILABLE_RETRY_AFTER = 45
    assert_unavailable(api.get("/v1/polls"), retry_after="45")


def test_a_redis_that_never_answers_gives_503_within_the_timeout(api, settings):
    with socket.socket() as silent:  # accepts connections (the kernel does), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        settings.REDIS_URL = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        settings.RATELIMIT_STORE_TIMEOUT = 0.2
        started = time.monotonic()
        assert_unavailable(api.get("/v1/polls"))
        assert 0.2 <= time.monotonic() - started < 1
        started = time.monotonic()
        assert_unavailable(api.post("/v1/polls", {"title": "x"}))  # the answer read after validating
        assert_unavailable(api.post("/v1/polls", date_poll_body("2030-01-02")))
        assert 0.4 <= time.monotonic() - started < 2
    assert not Poll.objects.exists()


def test_an_error_answer_gives_503_and_the_next_good_answer_200(api, space, redis_store, redis_client):
    key = RedisStore.key(space.pk)
    redis_client.set(key, "not a hash")  # every command of the script on it fails: WRONGTYPE
    assert_unavailable(api.get("/v1/polls"))
    assert_unavailable(api.post("/v1/polls", date_poll_body("2030-01-02")))
    assert not Poll.objects.filter(space=space).exists()
    redis_client.delete(key)
    r = api.get("/v1/polls")
    assert (r.status_code, r["RateLimit-Remaining"]) == (200, "59")


@pytest.fixture
def own_redis():
    """A Redis server of this test's own, which the test stops and starts again."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    class Server:
        url = f"redis://127.0.0.1:{port}/0"
        process = None

        def start(self):
            client = redis.Redis(port=port, socket_connect_timeout=0.2)
            self.process = start_redis("--port", str(port), "--bind", "127.0.0.1", client=client)
            client.close()

        def stop(self):
            self.process.terminate()
            self.process.wait(timeout=10)

    server = Server()
    server.start()
    yield server
    if server.process.poll() is None:
        server.stop()


def test_service_resumes_by_itself_when_redis_comes_back(api, settings, own_redis):
    settings.REDIS_URL = own_redis.url
    assert api.get("/v1/polls")["RateLimit-Remaining"] == "59"
    own_redis.stop()
    started = time.monotonic()
    for _ in range(3):
        assert_unavailable(api.get("/v1/polls"))
    assert time.monotonic() - started < 1
    own_redis.start()  # empty: the counters and the loaded script are gone
    r = api.get("/v1/polls")  # the same process and connection pool, nothing restarted
    assert (r.status_code, r["RateLimit-Remaining"]) == (200, "59")
    assert api.get("/v1/polls")["RateLimit-Remaining"] == "58"


def test_a_restart_between_two_requests_goes_unnoticed(api, settings, own_redis):
    settings.REDIS_URL = own_redis.url
    assert api.get("/v1/polls")["RateLimit-Remaining"] == "59"
    own_redis.stop()
    own_redis.start()
    # The pooled connection is dead; the store reconnects once, at once, and loads its script again.
    r = api.get("/v1/polls")
    assert (r.status_code, r["RateLimit-Remaining"]) == (200, "59")
