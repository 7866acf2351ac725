"""Counters of keys that are not spaces (ratelimit.keyed), in both stores."""

import uuid

import pytest

from ratelimit import keyed
from ratelimit.limiter import consume

pytestmark = pytest.mark.django_db


@pytest.fixture
def key(redis_client):
    name = f"test:{uuid.uuid4().hex}"
    yield name
    redis_client.delete(f"ratelimit:key:{name}")


def test_a_key_is_counted_against_the_callers_limits(store, key, clock):
    for n in range(3):
        outcome, _ = keyed.hit(key, per_minute=3, per_day=10)
        assert (outcome.allowed, outcome.minute.remaining, outcome.day.remaining) == (True, 2 - n, 9 - n)
    clock.shift(20)
    outcome, now = keyed.hit(key, per_minute=3, per_day=10)
    assert not outcome.allowed
    assert keyed.retry_after(outcome, now) == 40
    clock.shift(40)
    outcome, _ = keyed.hit(key, per_minute=3, per_day=10)
    assert (outcome.allowed, outcome.minute.remaining, outcome.day.remaining) == (True, 2, 6)  # the refusal was not counted


def test_keys_are_counted_apart(store, key, clock):
    assert keyed.hit(key, per_minute=1, per_day=10)[0].allowed
    assert not keyed.hit(key, per_minute=1, per_day=10)[0].allowed
    assert keyed.hit(key + ":other", per_minute=1, per_day=10)[0].allowed


def test_the_purge_forgets_finished_days_only_of_keys_and_spaces(settings, clock, make_space):
    settings.REDIS_URL = ""
    old_space, new_space = make_space()[0], make_space()[0]
    keyed.hit("test:old", per_minute=5, per_day=5)
    consume(old_space)
    clock.shift(86_400)
    keyed.hit("test:new", per_minute=5, per_day=5)
    consume(new_space)
    assert keyed.purge() == 2
    assert keyed.purge() == 0
    assert keyed.hit("test:new", per_minute=5, per_day=5)[0].minute.count == 2  # kept
    assert keyed.hit("test:old", per_minute=5, per_day=5)[0].day.count == 1  # a new day
    assert consume(new_space).headers["RateLimit-Remaining"] == "58"
    assert consume(old_space).headers["RateLimit-Remaining"] == "59"
