"""The limits as clients see them, through HTTP, against the Redis store and the embedded one,
with a stopped clock that the tests move."""

import pytest
from django.db import connection
from django.test import Client

from conftest import Api
from polls.models import Poll
from polls.tests.factories import date_poll_body
from ratelimit import services, sqlite_counters
from ratelimit.limiter import consume
from ratelimit.stores import OVERRIDE_CACHE_SECONDS
from ratelimit.tests.conftest import limit_headers
from spaces import services as space_services

pytestmark = pytest.mark.usefixtures("store")

POLICY = "60;w=60, 5000;w=86400"


def test_the_first_request_opens_both_windows(api, clock):
    clock.shift(17.25)  # windows are not aligned to the clock: they open now
    r = api.get("/v1/polls")
    assert r.status_code == 200
    assert limit_headers(r) == {"Policy": POLICY, "Limit": "60", "Remaining": "59", "Reset": "60"}
    clock.shift(10.5)
    r = api.get("/v1/polls")
    assert limit_headers(r) == {"Policy": POLICY, "Limit": "60", "Remaining": "58", "Reset": "50"}  # 49.5 up


def test_the_61st_request_is_refused_until_the_window_resets(api, clock):
    for n in range(60):
        r = api.get("/v1/polls")
        assert (r.status_code, r["RateLimit-Remaining"]) == (200, str(59 - n))
    clock.shift(20.25)
    r = api.get("/v1/polls")
    assert (r.status_code, r.body["error"]["code"]) == (429, "RATE_LIMIT_EXCEEDED")
    assert r["Retry-After"] == "40"  # 39.75 s, rounded up
    assert limit_headers(r) == {"Policy": POLICY, "Limit": "60", "Remaining": "0", "Reset": "40"}
    clock.shift(39.5)
    r = api.get("/v1/polls")
    assert (r.status_code, r["Retry-After"], r["RateLimit-Reset"]) == (429, "1", "1")
    clock.shift(0.25)  # the window has expired: this request opens a new one
    r = api.get("/v1/polls")
    assert r.status_code == 200
    assert limit_headers(r) == {"Policy": POLICY, "Limit": "60", "Remaining": "59", "Reset": "60"}


def test_a_refused_request_uses_up_no_quota(api, clock, settings):
    settings.RATELIMIT_PER_DAY = 100
    for _ in range(60):
        assert api.get("/v1/polls").status_code == 200
    for _ in range(5):
        assert api.get("/v1/polls").status_code == 429
    clock.shift(60)
    r = api.get("/v1/polls")
    # 61 counted today, not 66: the day window (39/100 left) is now closer to exhaustion.
    assert limit_headers(r) == {"Policy": "60;w=60, 100;w=86400", "Limit": "100", "Remaining": "39", "Reset": "86340"}


def test_the_day_limit_binds_while_the_minute_window_is_open(api, clock, settings):
    settings.RATELIMIT_PER_DAY = 3
    r = api.get("/v1/polls")
    # 59/60 of the minute left, 2/3 of the day: the day is closer to exhaustion.
    assert limit_headers(r) == {"Policy": "60;w=60, 3;w=86400", "Limit": "3", "Remaining": "2", "Reset": "86400"}
    clock.shift(100)
    assert api.get("/v1/polls")["RateLimit-Remaining"] == "1"
    assert api.get("/v1/polls")["RateLimit-Remaining"] == "0"
    clock.shift(10)
    r = api.get("/v1/polls")  # the minute window (2 of 60 used) is open, the day is exhausted
    assert r.status_code == 429
    assert r["Retry-After"] == "86290"
    assert limit_headers(r) == {"Policy": "60;w=60, 3;w=86400", "Limit": "3", "Remaining": "0", "Reset": "86290"}
    clock.shift(86290)
    r = api.get("/v1/polls")
    assert (r.status_code, r["RateLimit-Remaining"], r["RateLimit-Reset"]) == (200, "2", "86400")


def test_the_minute_window_wins_ties(api, clock, settings):
    settings.RATELIMIT_PER_MINUTE, settings.RATELIMIT_PER_DAY = 2, 4
    api.get("/v1/polls")
    clock.shift(60)
    r = api.get("/v1/polls")  # 1/2 of the minute and 2/4 of the day left: a tie
    assert limit_headers(r) == {"Policy": "2;w=60, 4;w=86400", "Limit": "2", "Remaining": "1", "Reset": "60"}


def test_retry_after_is_the_longest_reset_among_exhausted_windows(api, clock, settings):
    settings.RATELIMIT_PER_MINUTE, settings.RATELIMIT_PER_DAY = 10, 10
    for _ in range(10):
        assert api.get("/v1/polls").status_code == 200
    clock.shift(30)
    r = api.get("/v1/polls")
    assert r.status_code == 429
    # Both exhausted: the headers describe the minute (a tie at 0), Retry-After waits for the day.
    assert limit_headers(r) == {"Policy": "10;w=60, 10;w=86400", "Limit": "10", "Remaining": "0", "Reset": "30"}
    assert r["Retry-After"] == "86370"
    clock.shift(30)  # the minute window has reset, the day has not
    r = api.get("/v1/polls")
    assert (r.status_code, r["Retry-After"], r["RateLimit-Limit"], r["RateLimit-Reset"]) == (429, "86340", "10", "86340")


def test_keys_of_one_space_share_its_counters(api, space, clock):
    _, raw = space_services.create_key(space=space, name="second")
    second = Api(raw)
    for n in range(60):
        r = (api, second)[n % 2].get("/v1/polls")
        assert r["RateLimit-Remaining"] == str(59 - n)
    assert api.get("/v1/polls").status_code == 429
    assert second.get("/v1/polls").status_code == 429


def test_spaces_are_independent(api, make_space, clock):
    for _ in range(60):
        api.get("/v1/polls")
    assert api.get("/v1/polls").status_code == 429
    _, other_key = make_space()
    r = Api(other_key).get("/v1/polls")
    assert (r.status_code, r["RateLimit-Remaining"], r["RateLimit-Reset"]) == (200, "59", "60")


def test_errors_of_the_endpoint_carry_the_headers_and_count(api, clock):
    r = api.post("/v1/polls", {"title": "", "kind": "date", "options": []})
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert limit_headers(r) == {"Policy": POLICY, "Limit": "60", "Remaining": "59", "Reset": "60"}
    r = api.get("/v1/polls?limit=0")
    assert (r.status_code, r["RateLimit-Remaining"]) == (400, "58")
    r = api.get("/v1/polls/AAAAAAAAAAAA")
    assert (r.status_code, r.body["error"]["code"]) == (404, "POLL_NOT_FOUND")
    assert limit_headers(r) == {"Policy": POLICY, "Limit": "60", "Remaining": "57", "Reset": "60"}


def test_a_create_past_the_limit_is_refused_whatever_its_body_and_creates_nothing(api, space, clock, settings):
    # A create reads the limiter's answer after validating its body (ApiView.counted_late):
    # the answer still comes first.
    settings.RATELIMIT_PER_MINUTE = 1
    assert api.get("/v1/polls").status_code == 200
    for body in ({"title": "", "kind": "date", "options": []}, date_poll_body("2030-01-02")):
        r = api.post("/v1/polls", body)
        assert (r.status_code, r.body["error"]["code"], r["Retry-After"]) == (429, "RATE_LIMIT_EXCEEDED", "60")
        assert limit_headers(r)["Remaining"] == "0"
    r = api.post("/v1/webhooks", {"url": 7}, headers={"Idempotency-Key": "k"})
    assert (r.status_code, r.body["error"]["code"]) == (429, "RATE_LIMIT_EXCEEDED")
    assert not Poll.objects.filter(space=space).exists()


def test_responses_sent_before_the_limiter_carry_no_headers_and_count_nothing(api, space, make_space, settings, clock):
    revoked, revoked_raw = space_services.create_key(space=space, name="old")
    space_services.revoke_key(key=revoked)
    basic_only = Api(None)
    refused = [
        (Api(None).get("/v1/polls"), 401),
        (Api(revoked_raw).get("/v1/polls"), 401),
        (basic_only.get("/v1/polls", headers={"Authorization": "Basic eDp5"}), 400),
    ]
    settings.MAINTENANCE_MODE = True
    refused.append((api.get("/v1/polls"), 503))
    settings.MAINTENANCE_MODE = False
    non_pro, non_pro_raw = make_space(pro=False)
    refused.append((Api(non_pro_raw).get("/v1/polls"), 403))
    for response, status in refused:
        assert response.status_code == status
        assert limit_headers(response) == {}
    assert refused[3][0]["Retry-After"] == "300"
    assert api.get("/v1/polls")["RateLimit-Remaining"] == "59"
    space_services.set_plan(space=non_pro, pro=True)
    assert Api(non_pro_raw).get("/v1/polls")["RateLimit-Remaining"] == "59"


def test_the_openapi_document_is_not_limited(api, space_and_key, settings, clock):
    settings.RATELIMIT_PER_MINUTE = 1
    assert api.get("/v1/polls").status_code == 200
    assert api.get("/v1/polls").status_code == 429
    client = Client()
    for _ in range(3):
        r = client.get("/v1/openapi", HTTP_AUTHORIZATION=f"Bearer {space_and_key[1]}")
        assert r.status_code == 200
        assert not any(name.lower().startswith("ratelimit-") for name in r.headers)


def test_an_override_applies_from_the_next_request(api, space, clock, django_capture_on_commit_callbacks):
    assert api.get("/v1/polls")["RateLimit-Limit"] == "60"
    with django_capture_on_commit_callbacks(execute=True):
        services.set_override(space=space, per_minute=100, per_day=None)
    r = api.get("/v1/polls")
    assert limit_headers(r) == {"Policy": "100;w=60, 5000;w=86400", "Limit": "100", "Remaining": "98", "Reset": "60"}
    with django_capture_on_commit_callbacks(execute=True):
        services.set_override(space=space, per_minute=None, per_day=3)
    r = api.get("/v1/polls")
    assert limit_headers(r) == {"Policy": "60;w=60, 3;w=86400", "Limit": "3", "Remaining": "0", "Reset": "86400"}
    assert api.get("/v1/polls").status_code == 429
    with django_capture_on_commit_callbacks(execute=True):
        assert services.remove_override(space_id=space.pk) is True
    r = api.get("/v1/polls")
    assert (r.status_code, r["RateLimit-Policy"], r["RateLimit-Remaining"]) == (200, POLICY, "56")


def test_an_override_changed_behind_the_stores_back_applies_within_the_cache_lifetime(api, space, clock):
    api.get("/v1/polls")
    services.set_override(space=space, per_minute=100, per_day=None)  # on-commit never runs here
    clock.shift(OVERRIDE_CACHE_SECONDS)
    assert api.get("/v1/polls")["RateLimit-Policy"] == "100;w=60, 5000;w=86400"


def test_the_limiter_costs_one_statement_on_the_embedded_store_and_no_query_with_redis(
    store, space, clock, settings, django_assert_num_queries, monkeypatch
):
    # On SQLite the embedded store's statement runs on the counters' own database.
    on_counters_file = store == "embedded" and connection.vendor == "sqlite"
    statements = []
    execute = sqlite_counters.execute
    monkeypatch.setattr(sqlite_counters, "execute", lambda *args: statements.append(args) or execute(*args))
    settings.RATELIMIT_PER_MINUTE = 2
    consume(space)  # with Redis, this first request also caches the space's override
    for allowed in (True, False):
        statements.clear()
        with django_assert_num_queries(1 if store == "embedded" and not on_counters_file else 0):
            assert consume(space).allowed is allowed
        assert len(statements) == (1 if on_counters_file else 0)


def test_a_create_view_that_never_reads_the_answer_fails_loudly(space_and_key, clock):
    # A handler in `counted_late` must read the limiter's answer before anything else; one
    # that forgets would act on a request the limiter may refuse: an error, never a 201.
    from django.test.client import RequestFactory
    from rest_framework.response import Response

    from polls.views import PollCollectionView

    class Forgetful(PollCollectionView):
        def post(self, request):
            return Response({"data": "made"}, status=201)

    request = RequestFactory().post("/v1/polls", data=b"{}", content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {space_and_key[1]}")
    with pytest.raises(RuntimeError, match="never read the limiter's answer"):
        Forgetful.as_view()(request)
