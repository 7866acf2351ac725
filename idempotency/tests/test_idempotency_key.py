"""`Idempotency-Key` on `POST /v1/polls` and `POST /v1/webhooks`: replays, conflicts,
space scoping, expiry and purge, key rules, and concurrent duplicates from several
processes and threads (SQLite file and PostgreSQL)."""

import json
import os
from datetime import timedelta

import pytest
from django.test import Client

from conftest import Api
from idempotency import services
from idempotency.jobs import purge_expired
from idempotency.models import IdempotencyRecord
from polls.models import Poll
from polls.tests.factories import date_poll_body
from tests.hammer import hammer, shared_database
from webhooks.models import Endpoint

PUBLIC_URL = "https://93.184.216.34/hook"


def post(api, path, body, key):
    return api.post(path, body, headers={"Idempotency-Key": key})


@pytest.fixture
def clock(time_machine):
    from datetime import UTC, datetime

    time_machine.move_to(datetime.now(UTC), tick=True)
    return time_machine


def test_same_key_and_body_replays_the_first_answer(api, space):
    first = post(api, "/v1/polls", date_poll_body("2030-01-02"), "order-17")
    assert first.status_code == 201 and "Idempotent-Replayed" not in first
    again = post(api, "/v1/polls", date_poll_body("2030-01-02"), "order-17")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.content == first.content
    assert Poll.objects.count() == 1
    # The same body with its keys in another order and other whitespace is the same body.
    raw = b'{ "options": [{"date": "2030-01-02"}],  "kind": "date", "title": "Dinner" }'
    third = api.request("POST", "/v1/polls", raw=raw, headers={"Idempotency-Key": "order-17"})
    assert third.status_code == 201 and third.body == first.body and third["Idempotent-Replayed"] == "true"
    assert "RateLimit-Remaining" in third  # a replay is a request like any other
    assert Poll.objects.count() == 1


def test_no_key_no_replay(api):
    for _ in range(2):
        assert api.post("/v1/polls", date_poll_body("2030-01-02")).status_code == 201
    assert Poll.objects.count() == 2 and not IdempotencyRecord.objects.exists()


def test_same_key_with_another_body_is_refused(api):
    first = post(api, "/v1/polls", date_poll_body("2030-01-02"), "k1")
    r = post(api, "/v1/polls", date_poll_body("2030-01-03"), "k1")
    assert r.status_code == 400 and r.body["error"] == {
        "code": "VALIDATION_ERROR",
        "message": "Idempotency-Key: already used in the last 24 hours for another request (createPoll, another body); "
        "use a new key",
    }
    r = post(api, "/v1/webhooks", {"url": PUBLIC_URL}, "k1")
    assert (r.status_code, r.body["error"]["message"]) == (
        400, "Idempotency-Key: already used in the last 24 hours for another request (createPoll); use a new key",
    )
    assert list(Poll.objects.values_list("pk", flat=True)) == [first.body["data"]["id"]]
    assert not Endpoint.objects.exists()


def test_keys_are_scoped_per_space_and_never_leak(api, space, make_space):
    mine = post(api, "/v1/polls", date_poll_body("2030-01-02"), "shared-key")
    other_space, other_key = make_space()
    theirs = post(Api(other_key), "/v1/polls", date_poll_body("2030-01-02"), "shared-key")
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs
    assert theirs.body["data"]["id"] != mine.body["data"]["id"]
    assert Poll.objects.get(pk=theirs.body["data"]["id"]).space_id == other_space.id
    # And with another body, the other space is not refused either: it never sees this key.
    assert post(Api(other_key), "/v1/polls", date_poll_body("2030-01-05"), "shared-key2").status_code == 201
    assert post(api, "/v1/polls", date_poll_body("2030-01-02"), "shared-key").body == mine.body


def test_a_failed_request_stores_nothing(api):
    r = post(api, "/v1/polls", date_poll_body("2025-02-29"), "retry-me")
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert not IdempotencyRecord.objects.exists()
    r = post(api, "/v1/polls", {**date_poll_body("2030-01-02"), "title": "badword"}, "retry-me")
    assert r.body["error"]["code"] == "INAPPROPRIATE_CONTENT"
    r = post(api, "/v1/polls", date_poll_body("2030-01-02"), "retry-me")
    assert r.status_code == 201 and "Idempotent-Replayed" not in r
    assert Poll.objects.count() == 1


@pytest.mark.parametrize(
    "key", ["", "a" * 256, "with space", "tab\there", "caf\u00e9"],
)
def test_key_rules(api, key):
    extra = {"HTTP_IDEMPOTENCY_KEY": key, "HTTP_AUTHORIZATION": f"Bearer {api.key}"}
    response = Client().post("/v1/polls", json.dumps(date_poll_body("2030-01-02")), content_type="application/json", **extra)
    body = json.loads(response.content)
    assert response.status_code == 400 and body["error"] == {
        "code": "VALIDATION_ERROR",
        "message": "Idempotency-Key: must be 1-255 printable ASCII characters without spaces",
    }
    assert not Poll.objects.exists()


def test_longest_key_and_every_printable_character(api):
    for key in ("a" * 255, "".join(chr(c) for c in range(0x21, 0x7F))):
        r = post(api, "/v1/polls", date_poll_body("2030-01-02"), key)
        assert r.status_code == 201
        assert post(api, "/v1/polls", date_poll_body("2030-01-02"), key)["Idempotent-Replayed"] == "true"
    assert Poll.objects.count() == 2


def test_after_24_hours_the_key_is_new_and_the_purge_forgets_it(api, clock):
    first = post(api, "/v1/polls", date_poll_body("2030-01-02"), "daily")
    clock.shift(timedelta(hours=23, minutes=59))
    assert post(api, "/v1/polls", date_poll_body("2030-01-02"), "daily").body == first.body
    clock.shift(timedelta(minutes=2))
    second = post(api, "/v1/polls", date_poll_body("2030-01-03"), "daily")  # another body is fine now
    assert second.status_code == 201 and "Idempotent-Replayed" not in second
    assert Poll.objects.count() == 2
    post(api, "/v1/polls", date_poll_body("2030-01-02"), "other")
    clock.shift(timedelta(hours=24, seconds=1))
    post(api, "/v1/polls", date_poll_body("2030-01-04"), "fresh")
    purge_expired()
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["fresh"]
    assert services.purge() == 0


def test_webhook_create_replays_the_same_secret(api):
    first = post(api, "/v1/webhooks", {"url": PUBLIC_URL, "events": ["poll.created"]}, "hook-1")
    again = post(api, "/v1/webhooks", {"events": ["poll.created"], "url": PUBLIC_URL}, "hook-1")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.body == first.body and again.body["data"]["secret"] == Endpoint.objects.get().secret
    r = post(api, "/v1/webhooks", {"url": PUBLIC_URL}, "hook-1")
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert Endpoint.objects.count() == 1


def test_a_replay_counts_no_endpoint_toward_the_limit(api):
    for n in range(5):
        post(api, "/v1/webhooks", {"url": f"{PUBLIC_URL}/{n}"}, f"hook-{n}")
    assert post(api, "/v1/webhooks", {"url": f"{PUBLIC_URL}/0"}, "hook-0").status_code == 201
    r = post(api, "/v1/webhooks", {"url": f"{PUBLIC_URL}/5"}, "hook-5")
    assert r.body["error"]["code"] == "TOO_MANY_WEBHOOKS"


def test_constant_queries(api, settings):
    post(api, "/v1/polls", date_poll_body("2030-01-02"), "warm-up")  # settles the key's last-used bookkeeping
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for n, days in enumerate((["2030-01-02"], ["2030-01-%02d" % d for d in range(1, 29)])):
        with CaptureQueriesContext(connection) as created:
            post(api, "/v1/polls", date_poll_body(*days), f"q{n}")
        with CaptureQueriesContext(connection) as replayed:
            post(api, "/v1/polls", date_poll_body(*days), f"q{n}")
        counts.append((len(created.captured_queries), len(replayed.captured_queries)))
    assert counts[0] == counts[1]
    assert counts[0][1] < counts[0][0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path, body", [
    ("/v1/polls", date_poll_body("2030-01-02")),
    ("/v1/webhooks", {"url": PUBLIC_URL}),
])
def test_concurrent_duplicates_create_one_resource(make_space, tmp_path, settings, path, body):
    space, key = make_space()
    processes, threads = 2, 4
    with shared_database(tmp_path) as database_url:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test", "DATABASE_URL": database_url,
               "REDIS_URL": settings.REDIS_URL}
        request = {"method": "POST", "path": path, "key": key, "headers": {"Idempotency-Key": "same-key"}, "body": body}
        results = [[status, (data.get("data") or {}).get("id") or data, replayed]
                   for status, data, replayed in hammer(env, processes, threads, request)]
    model = Poll if path == "/v1/polls" else Endpoint
    [created] = model.objects.filter(space=space)
    assert sorted(results, key=lambda r: r[2] or "") == sorted(
        [[201, created.pk, None]] + [[201, created.pk, "true"]] * (processes * threads - 1), key=lambda r: r[2] or ""
    )


@pytest.mark.parametrize("path,body", [("/v1/polls", {"title": "", "kind": "date"}), ("/v1/webhooks", {"url": 7})])
def test_a_bad_body_is_refused_before_the_idempotency_record_is_touched(api, path, body, request_overhead,
                                                                         django_assert_num_queries):
    """Validation runs first, outside the idempotency transaction: a refused body reads and
    writes no record (on SQLite it never takes the write lock)."""
    with django_assert_num_queries(request_overhead):
        response = post(api, path, body, "bad-body")
    assert response.body["error"]["code"] == "VALIDATION_ERROR"
    assert not IdempotencyRecord.objects.exists()
