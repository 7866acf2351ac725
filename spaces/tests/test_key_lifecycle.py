"""What the operator commands do to the API: a created key works; revoked, expired and
banned keys are refused; the free plan is refused; maintenance answers 503 at once and
goes away again; `lastUsedAt` is written at most once a minute."""

import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client

from conftest import Api
from core import maintenance
from core.models import ServiceSwitch
from spaces import services
from spaces.models import ApiKey

INVALID_TOKEN = 'Bearer realm="api", error="invalid_token"'
RATELIMIT_HEADERS = ("RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


@pytest.fixture
def space(db):
    return services.create_space(name="Acme", owner_email="boss@example.com", pro=True)


@pytest.fixture
def new_key(run, space):
    def make(*options) -> str:
        return run.text("keys", "create", space.id, *options).strip()

    return make


def assert_unauthorized(response, challenge=INVALID_TOKEN):
    assert response.status_code == 401
    assert response.body["error"]["code"] == "UNAUTHORIZED"
    assert response["WWW-Authenticate"] == challenge
    assert not any(name in response for name in RATELIMIT_HEADERS)


def test_a_key_printed_by_keys_create_works(new_key):
    response = Api(new_key()).get("/v1/polls")
    assert response.status_code == 200
    assert response.body["data"] == []


def test_a_revoked_key_is_refused_from_the_next_request(run, new_key):
    api = Api(new_key())
    assert api.get("/v1/polls").status_code == 200
    run("keys", "revoke", ApiKey.objects.get().id)
    assert_unauthorized(api.get("/v1/polls"))


def test_an_expired_key_is_refused(new_key):
    api = Api(new_key("--expires-at", "2100-01-01T00:00:00Z"))
    with time_machine.travel(datetime(2099, 12, 31, 23, 59, tzinfo=UTC)):
        assert api.get("/v1/polls").status_code == 200
    with time_machine.travel(datetime(2100, 1, 1, tzinfo=UTC)):
        assert_unauthorized(api.get("/v1/polls"))


def test_a_banned_owner_s_keys_are_refused_until_unbanned(run, new_key):
    api = Api(new_key())
    run("users", "ban", "boss@example.com")
    assert_unauthorized(api.get("/v1/polls"))
    run("users", "unban", "boss@example.com")
    assert api.get("/v1/polls").status_code == 200


def test_the_free_plan_is_refused_with_space_not_pro(run, space, new_key):
    api = Api(new_key())
    run("spaces", "set-plan", space.id, "free")
    response = api.get("/v1/polls")
    assert response.status_code == 403
    assert response.body["error"]["code"] == "SPACE_NOT_PRO"
    assert not any(name in response for name in RATELIMIT_HEADERS)
    run("spaces", "set-plan", space.id, "pro")
    assert api.get("/v1/polls").status_code == 200


def assert_maintenance(response):
    assert response.status_code == 503
    assert response.body["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert response["Retry-After"] == "300"
    assert not any(name in response for name in RATELIMIT_HEADERS)


def test_maintenance_on_answers_503_before_anything_else_and_off_restores_service(run, new_key):
    api = Api(new_key())
    run("maintenance", "on")
    assert_maintenance(api.get("/v1/polls"))
    assert_maintenance(api.post("/v1/polls", {"title": "x"}))
    assert_maintenance(Api(None).get("/v1/polls"))
    assert Client().get("/v1/openapi").status_code == 200
    run("maintenance", "off")
    assert api.get("/v1/polls").status_code == 200


def test_maintenance_set_by_another_process_reaches_a_running_one_within_a_second(new_key):
    api = Api(new_key())
    assert api.get("/v1/polls").status_code == 200  # this process now caches "off"
    ServiceSwitch.set(ServiceSwitch.MAINTENANCE, True)  # what `maintenance on` does elsewhere
    assert api.get("/v1/polls").status_code == 200  # still cached
    seen_at, value = maintenance._cached
    maintenance._cached = (seen_at - 1.01, value)  # the second has passed
    assert_maintenance(api.get("/v1/polls"))
    ServiceSwitch.set(ServiceSwitch.MAINTENANCE, False)
    maintenance._cached = (time.monotonic() - 1.01, True)
    assert api.get("/v1/polls").status_code == 200


def test_last_used_at_is_written_at_most_once_a_minute(new_key):
    api = Api(new_key())
    start = datetime(2099, 3, 1, 12, tzinfo=UTC)

    def used_at(offset: timedelta):
        with time_machine.travel(start + offset, tick=False):
            assert api.get("/v1/polls").status_code == 200
        return ApiKey.objects.get().last_used_at

    assert ApiKey.objects.get().last_used_at is None
    assert used_at(timedelta(0)) == start
    assert used_at(timedelta(seconds=59)) == start
    assert used_at(timedelta(seconds=60)) == start + timedelta(seconds=60)
    assert used_at(timedelta(seconds=61)) == start + timedelta(seconds=60)
    assert used_at(timedelta(minutes=5)) == start + timedelta(minutes=5)
