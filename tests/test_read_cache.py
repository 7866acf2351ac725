"""Cached reads of API keys (spaces.keycache, core.versions): with Redis as the rate-limit
store, a key a process served lately, with its poll's row, costs no query while the version
tokens checked in the limiter's round trip are unchanged; every change made through the
models and services is seen by the very next request, and every request is counted once."""

import re
import time
from pathlib import Path

import pytest
import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core import versions
from polls import services
from polls.models import Participant, Poll
from spaces import services as space_services
from spaces.models import ApiKey, User

REDIS_URL = "redis://127.0.0.1:6379/2"  # the rate-limit tests' database (ratelimit/tests/conftest.py)


@pytest.fixture(autouse=True)
def redis_store(settings):
    settings.REDIS_URL = REDIS_URL
    settings.READ_CACHE_SECONDS = 60
    settings.RATELIMIT_PER_MINUTE = 1000


def read(api, path: str, method: str = "GET", body=None):
    """The response and the number of queries it made."""
    with CaptureQueriesContext(connection) as captured:
        response = api.request(method, path, body)
    return response, len(captured.captured_queries)


def warm(api, path: str) -> dict:
    """Serve `path` until the key and the poll come from the cache: the first request reads
    them (and keeps them without tokens), the second reads the tokens and then the rows, the
    third needs no query."""
    for _ in range(3):
        response, queries = read(api, path)
    assert queries == 0, "not served from the cache"
    return response.body


def create_poll(api) -> str:
    created = api.post("/v1/polls", {"title": "Cached", "kind": "date",
                                     "options": [{"date": "2030-01-01"}, {"date": "2030-01-02"}]})
    assert created.status_code == 201
    return created.body["data"]["id"]


def remaining(response) -> int:
    return int(response["RateLimit-Remaining"])


def test_a_key_read_again_costs_no_query_and_every_request_is_counted_once(api):
    path = f"/v1/polls/{create_poll(api)}"
    served = [read(api, path) for _ in range(5)]
    assert [queries for _, queries in served][2:] == [0, 0, 0]
    assert all(queries >= 1 for _, queries in served[:2])  # the rows, then the tokens and the rows
    assert len({response.content for response, _ in served}) == 1
    counts = [remaining(response) for response, _ in served]
    assert counts == list(range(counts[0], counts[0] - 5, -1))


def key_read(call) -> bool:
    """Whether `call()` read an API key from the database."""
    with CaptureQueriesContext(connection) as captured:
        call()
    return any(ApiKey._meta.db_table in query["sql"] for query in captured.captured_queries)


def test_a_create_and_a_delete_use_the_cached_key(api):
    def create():
        assert api.post("/v1/polls", {"title": "x", "kind": "date", "options": [{"date": "2030-01-01"}]}).status_code == 201

    assert [key_read(create) for _ in range(3)] == [True, True, False]
    poll_id = create_poll(api)
    assert [key_read(lambda: api.delete(f"/v1/polls/{poll_id}")) for _ in range(3)] == [True, True, False]
    assert api.get(f"/v1/polls/{poll_id}").body["error"]["code"] == "POLL_NOT_FOUND"


def test_every_change_of_a_poll_is_seen_by_the_next_request(api, space):
    poll_id = create_poll(api)
    path = f"/v1/polls/{poll_id}"

    def poll() -> Poll:
        return Poll.objects.get(pk=poll_id)

    def after(change, check) -> None:
        warm(api, path)
        change()
        check(api.get(path).body["data"])

    first = warm(api, path)["data"]["options"][0]["id"]
    after(lambda: services.update_poll(poll=poll(), details={"title": "Renamed"}),
          lambda data: data["title"] == "Renamed" or pytest.fail(data["title"]))
    after(lambda: services.create_response(poll=poll(), name="Ann", votes={first: "yes"}),
          lambda data: data["participantCount"] == 1 or pytest.fail(data))
    ann = Participant.objects.get(poll_id=poll_id)
    after(lambda: services.delete_response(participant=ann),
          lambda data: data["participantCount"] == 0 or pytest.fail(data))
    after(lambda: services.close_poll(poll=poll()), lambda data: data["status"] == "closed" or pytest.fail(data))
    after(lambda: services.reopen_poll(poll=poll()), lambda data: data["status"] == "open" or pytest.fail(data))

    def rename_organizer():
        organizer = User.objects.get(pk=poll().organizer_id)
        organizer.name = "Someone else"
        organizer.save()

    after(rename_organizer, lambda data: data["organizer"]["name"] == "Someone else" or pytest.fail(data))
    from datetime import date

    after(lambda: services.update_poll(poll=poll(), options=[{"date": date(2031, 1, 1)}]),
          lambda data: [o["date"] for o in data["options"]] == ["2031-01-01"] or pytest.fail(data))
    warm(api, path)
    services.delete_poll(poll=poll())
    assert api.get(path).body["error"]["code"] == "POLL_NOT_FOUND"


def test_a_revoked_key_a_ban_and_a_lapsed_subscription_are_seen_at_once(make_space):
    from conftest import Api

    space, raw = make_space()
    api = Api(raw)
    path = f"/v1/polls/{create_poll(api)}"
    key = ApiKey.objects.get(space=space)
    other, other_raw = space_services.create_key(space=space, name="other")
    warm(api, path)
    before = remaining(api.get(path))
    space_services.revoke_key(key=key)
    refused = api.get(path)
    assert refused.status_code == 401 and "RateLimit-Remaining" not in refused
    assert remaining(Api(other_raw).get(path)) == before - 1  # the refused request was not counted

    api = Api(other_raw)
    warm(api, path)
    space_services.set_plan(space=space, pro=False)
    assert api.get(path).body["error"]["code"] == "SPACE_NOT_PRO"
    space_services.set_plan(space=space, pro=True)
    warm(api, path)
    space_services.set_banned(user=space.owner, banned=True)
    assert api.get(path).status_code == 401


def test_a_create_with_a_key_revoked_since_it_was_cached_is_refused_whatever_its_body(make_space):
    # A create reads the limiter's answer, and with it the news of the change, after
    # validating its body (core.api.views.ApiView.counted_late): the key's error comes first.
    from conftest import Api

    space, raw = make_space()
    api = Api(raw)
    warm(api, f"/v1/polls/{create_poll(api)}")
    assert api.post("/v1/polls", {"title": "Cached", "kind": "date", "options": [{"date": "2030-01-01"}]}).status_code == 201
    space_services.revoke_key(key=ApiKey.objects.get(space=space))
    for body in ({"title": "", "kind": "date", "options": []}, {"title": "Late", "kind": "date", "options": [{"date": "2030-01-01"}]}):
        refused = api.post("/v1/polls", body)
        assert (refused.status_code, refused.body["error"]["code"]) == (401, "UNAUTHORIZED")
        assert "RateLimit-Remaining" not in refused
    assert Poll.objects.filter(space=space).count() == 2


def test_a_key_that_expires_is_refused_from_that_moment(api, space, time_machine):
    from datetime import timedelta

    from django.utils import timezone

    path = f"/v1/polls/{create_poll(api)}"
    key = ApiKey.objects.get(space=space)
    key.expires_at = timezone.now() + timedelta(minutes=5)
    key.save()
    warm(api, path)
    time_machine.move_to(key.expires_at + timedelta(seconds=1))
    assert api.get(path).status_code == 401


def test_an_endpoint_enabled_or_disabled_is_seen_by_the_next_create(api, space, settings):
    from webhooks.models import Event
    from webhooks.services.endpoints import create_endpoint, disable_endpoint

    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True

    def fanned_out() -> bool:
        created = api.post("/v1/polls", {"title": "x", "kind": "date", "options": [{"date": "2030-01-01"}]})
        return Event.objects.get(poll_id=created.body["data"]["id"]).dispatched_at is not None

    assert [key_read(fanned_out) for _ in range(3)] == [True, True, False]
    assert fanned_out()  # no endpoint: recorded as fanned out already
    endpoint, _ = create_endpoint(space=space, url="http://127.0.0.1:9/hook")
    assert not fanned_out()  # waits for its fan-out
    disable_endpoint(endpoint=endpoint)
    assert fanned_out()


def test_a_change_behind_the_models_back_is_seen_within_read_cache_seconds(api, settings):
    settings.READ_CACHE_SECONDS = 0.3
    poll_id = create_poll(api)
    path = f"/v1/polls/{poll_id}"
    warm(api, path)
    Poll.objects.filter(pk=poll_id).update(title="Behind its back")  # no version bumped
    assert api.get(path).body["data"]["title"] == "Cached"
    time.sleep(0.35)
    assert api.get(path).body["data"]["title"] == "Behind its back"


def test_tokens_that_redis_lost_are_not_trusted(api, space):
    poll_id = create_poll(api)
    path = f"/v1/polls/{poll_id}"
    warm(api, path)
    client = redis.Redis.from_url(REDIS_URL)
    # As after a restart without persistence (the owner created the key and organizes the poll).
    client.delete(versions.space(space.pk), versions.user(space.owner_id), versions.poll(poll_id))
    Poll.objects.filter(pk=poll_id).update(title="After the restart")
    response, queries = read(api, path)
    assert queries >= 1 and response.body["data"]["title"] == "After the restart"
    assert warm(api, path)["data"]["title"] == "After the restart"
    client.close()


def test_off_without_redis_or_with_read_cache_seconds_0(api, settings):
    path = f"/v1/polls/{create_poll(api)}"
    settings.READ_CACHE_SECONDS = 0
    assert all(read(api, path)[1] >= 1 for _ in range(3))
    settings.READ_CACHE_SECONDS = 60
    settings.REDIS_URL = ""
    assert all(read(api, path)[1] >= 1 for _ in range(3))


def test_a_bump_redis_cannot_take_is_logged_and_counted(db, client, settings, caplog):
    from ratelimit.tests.conftest import closed_port_url
    from tests.test_metrics import scrape, value

    settings.REDIS_URL = closed_port_url()
    before = value(scrape(client), "service_version_bump_errors_total")
    versions.bump(versions.poll("somepoll"))  # in the test's transaction: now (and at a commit that never comes)
    assert value(scrape(client), "service_version_bump_errors_total") == before + 1
    assert "version tokens not bumped" in caplog.text


COVERED = ("Poll", "ApiKey", "Space", "Subscription", "User", "Endpoint")  # what the tokens cover (core.versions)
WRITE = re.compile(rf"\b({'|'.join(COVERED)})\.objects\b.*\.(update|bulk_update|delete)\(")


def test_every_queryset_write_of_what_the_tokens_cover_bumps_them_or_says_why_not():
    """Saves and deletions of single instances bump by themselves (core.versions.bump_on_save);
    a `QuerySet.update()`, `bulk_update()` or `delete()` of those models does not send the
    signals, so each is followed by `versions.bump` within a few lines, or marked
    `# no version bump: <why>` (a column no cached read shows)."""
    root = Path(__file__).resolve().parent.parent
    unmarked = []
    for path in root.glob("*/**/*.py"):
        relative = path.relative_to(root)
        if relative.parts[0] in (".venv", "bench", "tests") or "tests" in relative.parts or "migrations" in relative.parts:
            continue
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if WRITE.search(line) and "# no version bump: " not in line:
                if not any("versions.bump(" in later for later in lines[number:number + 5]):
                    unmarked.append(f"{relative}:{number + 1}: {line.strip()}")
    assert unmarked == []


def test_a_key_reading_many_polls_records_its_use_once_a_minute(api, space, time_machine):
    from datetime import timedelta

    paths = [f"/v1/polls/{create_poll(api)}" for _ in range(4)]
    for path in paths:
        warm(api, path)

    def key_writes() -> int:
        with CaptureQueriesContext(connection) as captured:
            for path in paths:
                assert api.get(path).status_code == 200
        return sum(query["sql"].startswith("UPDATE") and ApiKey._meta.db_table in query["sql"]
                   for query in captured.captured_queries)

    assert key_writes() == 0
    time_machine.move_to(ApiKey.objects.get(space=space).last_used_at + timedelta(seconds=61))
    assert key_writes() == 1
    assert key_writes() == 0


def test_a_change_in_one_gunicorn_worker_is_seen_by_the_other_at_once(tmp_path):
    """Served as shipped (config/gunicorn.py: two worker processes) with Redis: each worker
    reads a poll until it serves it from its cache; a delete answered by either is seen by
    every request after it, whichever worker takes it."""
    import json

    from tests.test_web_server import exchange, served

    with served(tmp_path, REDIS_URL=REDIS_URL) as (port, key):

        def call(method: str, path: str, body: bytes = b"") -> tuple[int, dict]:
            request = (f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n"
                       f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
            status, _, content = exchange(port, request)
            return status, json.loads(content)

        body = json.dumps({"title": "Served", "kind": "date", "options": [{"date": "2030-01-01"}]}).encode()
        for _ in range(5):
            status, created = call("POST", "/v1/polls", body)
            assert status == 201
            path = f"/v1/polls/{created['data']['id']}"
            assert {call("GET", path)[0] for _ in range(20)} == {200}  # a new connection each: both workers
            assert call("DELETE", path)[0] == 200
            assert [call("GET", path)[0] for _ in range(20)] == [404] * 20


def test_a_change_in_one_space_leaves_the_cached_reads_of_another(api, space, make_space):
    """Tokens name the rows read (a space, its owner and key creator, a poll and its
    organizer): revoking another space's key, banning another user or changing another poll
    makes no request of this space read the database again."""
    path = f"/v1/polls/{create_poll(api)}"
    warm(api, path)
    other, _ = make_space()
    space_services.revoke_key(key=ApiKey.objects.get(space=other))
    space_services.set_banned(user=other.owner, banned=True)
    services.update_poll(poll=Poll.objects.create(space=other, organizer=other.owner, title="Other", kind="date"),
                         details={"title": "Still other"})
    assert read(api, path)[1] == 0
    space_services.set_plan(space=space, pro=True)  # this space's own change: read again
    assert read(api, path)[1] >= 1
