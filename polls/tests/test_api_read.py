"""GET /v1/polls, GET and DELETE /v1/polls/{pollId}: shapes, isolation, paging, queries."""

import pytest
import time_machine
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

import core.maintenance
from polls.models import Poll


def create(api, title="Poll", kind="date", n_options=1):
    if kind == "date":
        body = {"title": title, "kind": kind, "options": [{"date": f"2027-01-{i + 1:02d}"} for i in range(n_options)]}
    else:
        body = {"title": title, "kind": kind, "duration": 30,
                "options": [{"startTime": f"2027-01-01T{i // 4:02d}:{i % 4 * 15:02d}:00Z"} for i in range(n_options)]}
    r = api.post("/v1/polls", body)
    assert r.status_code == 201
    return r.body["data"]


def test_get_returns_the_created_poll(api):
    poll = create(api, kind="time", n_options=3)
    r = api.get(f"/v1/polls/{poll['id']}")
    assert r.status_code == 200 and r.body == {"data": poll}


@pytest.mark.parametrize("poll_id", ["AAAAAAAAAAAA", "short", "x" * 13, "caf%C3%A9", "a.b", "%20"])
def test_get_unknown_poll(api, poll_id):
    r = api.get(f"/v1/polls/{poll_id}")
    assert (r.status_code, r.body["error"]["code"]) == (404, "POLL_NOT_FOUND")


def test_polls_of_another_space_do_not_exist(api, make_space):
    from conftest import Api

    _, other_key = make_space()
    other = Api(other_key)
    poll = create(other)
    for response in (api.get(f"/v1/polls/{poll['id']}"), api.delete(f"/v1/polls/{poll['id']}")):
        assert (response.status_code, response.body["error"]["code"]) == (404, "POLL_NOT_FOUND")
    assert api.get("/v1/polls").body["data"] == []
    assert other.get(f"/v1/polls/{poll['id']}").status_code == 200  # untouched


def test_delete_then_not_found_everywhere(api):
    poll = create(api)
    r = api.delete(f"/v1/polls/{poll['id']}")
    assert r.status_code == 200 and r.body == {"data": {"id": poll["id"], "deleted": True}}
    assert api.get(f"/v1/polls/{poll['id']}").body["error"]["code"] == "POLL_NOT_FOUND"
    assert api.delete(f"/v1/polls/{poll['id']}").body["error"]["code"] == "POLL_NOT_FOUND"
    assert api.get("/v1/polls").body["data"] == []
    assert Poll.objects.get(pk=poll["id"]).deleted_at is not None  # soft: staff still see it


def test_list_is_newest_first_and_pages_by_cursor(api):
    ids = []
    with time_machine.travel("2027-01-01T00:00:00Z", tick=False) as clock:
        for i in range(5):
            ids.append(create(api, title=f"P{i}")["id"])
            clock.shift(1 if i != 2 else 0)  # two polls share a createdAt: the id breaks the tie
    expected = [p.pk for p in Poll.objects.order_by("-created_at", "-id")]
    seen, cursor = [], None
    while True:
        r = api.get("/v1/polls?limit=2" + (f"&cursor={cursor}" if cursor else ""))
        assert r.status_code == 200 and len(r.body["data"]) <= 2
        seen += [p["id"] for p in r.body["data"]]
        cursor = r.body["nextCursor"]
        if cursor is None:
            break
    assert seen == expected and sorted(seen) == sorted(ids)
    assert len(api.get("/v1/polls").body["data"]) == 5  # default page size 20


def test_paging_is_stable_while_polls_come_and_go(api):
    polls = [create(api, title=f"P{i}")["id"] for i in range(4)]
    first = api.get("/v1/polls?limit=2").body
    assert [p["id"] for p in first["data"]] == polls[::-1][:2]
    create(api, title="newer")  # appears before the first page: not in the next one
    api.delete(f"/v1/polls/{polls[3]}")  # already seen: nothing shifts
    second = api.get(f"/v1/polls?limit=2&cursor={first['nextCursor']}").body
    assert [p["id"] for p in second["data"]] == [polls[1], polls[0]]
    assert second["nextCursor"] is None


def test_list_filters_by_status(api):
    open_poll = create(api)
    closed = create(api)
    Poll.objects.filter(pk=closed["id"]).update(status="closed")
    assert [p["id"] for p in api.get("/v1/polls?status=open").body["data"]] == [open_poll["id"]]
    assert [p["id"] for p in api.get("/v1/polls?status=closed").body["data"]] == [closed["id"]]
    assert api.get("/v1/polls?status=canceled").body == {"data": [], "nextCursor": None}


@pytest.mark.parametrize(
    "query, message",
    [
        ("limit=0", "limit: must be at least 1"),
        ("limit=101", "limit: must be at most 100"),
        ("limit=abc", "limit: must be an integer"),
        ("limit=1.5", "limit: must be an integer"),
        ("limit=", "limit: must be an integer"),
        ("limit=1&limit=2", "limit: given more than once"),
        ("status=deleted", "status: must be one of: open, closed, scheduled, canceled"),
        ("page=2", "page: unknown field"),
        ("cursor=abc", "cursor: not a cursor issued by this service for this list"),
    ],
)
def test_list_query_is_strict(api, query, message):
    r = api.get(f"/v1/polls?{query}")
    assert (r.status_code, r.body["error"]["code"], r.body["error"]["message"]) == (400, "VALIDATION_ERROR", message)


def test_a_query_asked_again_is_validated_the_same(api):
    # Valid query strings are kept per process (core.api.paging.page_query): the same
    # answer again, an invalid one refused every time, and one list's query not another's.
    first = create(api, title="Kept query one")
    second = create(api, title="Kept query two")
    for _ in range(2):
        assert [p["id"] for p in api.get("/v1/polls?limit=1").body["data"]] == [second["id"]]
        assert api.get("/v1/polls?limit=0").body["error"]["message"] == "limit: must be at least 1"
        assert api.get("/v1/webhooks?status=open").body["error"]["message"] == "status: unknown field"
        assert [p["id"] for p in api.get("/v1/polls?status=open").body["data"]] == [second["id"], first["id"]]


def test_cursor_of_another_space_or_tampered_is_refused(api, make_space):
    from conftest import Api

    _, other_key = make_space()
    other = Api(other_key)
    for i in range(3):
        create(other)
    cursor = other.get("/v1/polls?limit=1").body["nextCursor"]
    assert api.get(f"/v1/polls?cursor={cursor}").body["error"]["code"] == "VALIDATION_ERROR"
    assert other.get(f"/v1/polls?cursor={cursor[:-2]}xx").body["error"]["code"] == "VALIDATION_ERROR"
    assert other.get(f"/v1/polls?cursor={cursor}").status_code == 200


def _queries(request) -> int:
    core.maintenance._cached = None  # count the maintenance check every time
    with CaptureQueriesContext(connection) as ctx:
        request()
    return len(ctx.captured_queries)


def test_queries_do_not_grow_with_polls_or_options(api):
    create(api, kind="time", n_options=1)
    poll = create(api, kind="time", n_options=1)
    api.get("/v1/polls")  # last-used time of the key written: steady state from here
    # Before the endpoint: the maintenance switch, the key, and the limiter (the embedded
    # store on PostgreSQL only: on SQLite its statement runs on the counters' own database,
    # ratelimit.sqlite_counters); "-" cannot be a poll id, so that request's endpoint costs nothing.
    overhead = _queries(lambda: api.get("/v1/polls/-"))
    assert overhead == (2 if settings.REDIS_URL or connection.vendor == "sqlite" else 3)
    # The endpoint: the polls with their participant count and options, then their organizers
    # (a poll: with its organizer).
    assert _queries(lambda: api.get("/v1/polls")) == overhead + 2
    assert _queries(lambda: api.get(f"/v1/polls/{poll['id']}")) == overhead + 1
    for _ in range(20):
        create(api, kind="time", n_options=40)
    big = create(api, kind="time", n_options=80)
    assert _queries(lambda: api.get(f"/v1/polls/{big['id']}")) == overhead + 1
    assert _queries(lambda: api.get("/v1/polls?status=open")) == overhead + 2
    assert _queries(lambda: api.get("/v1/polls")) == overhead + 2
    cursor = api.get("/v1/polls?limit=5").body["nextCursor"]
    assert _queries(lambda: api.get(f"/v1/polls?limit=5&cursor={cursor}")) == overhead + 2


def test_a_changed_poll_is_seen_at_once(api, settings):
    """Any change the answer shows is seen at once: options, settings, responses, the
    organizer, deletion."""
    from datetime import date

    from polls import services
    from spaces.models import User

    poll = create(api, kind="date")
    path = f"/v1/polls/{poll['id']}"
    assert api.get(path).body["data"] == api.get("/v1/polls").body["data"][0]
    record = Poll.objects.get(pk=poll["id"])
    services.update_poll(poll=record, options=[{"id": poll["options"][0]["id"], "date": date(2027, 1, 1)},
                                               {"date": date(2031, 1, 1)}])
    assert [option.get("date") for option in api.get(path).body["data"]["options"]][-1] == "2031-01-01"
    assert api.get("/v1/polls").body["data"][0]["options"] == api.get(path).body["data"]["options"]
    services.update_poll(poll=record, details={"title": "Renamed"})
    assert api.get(path).body["data"]["title"] == "Renamed"
    services.create_response(poll=Poll.objects.get(pk=poll["id"]), name="Ann")
    assert api.get(path).body["data"]["participantCount"] == 1
    organizer = User.objects.get(pk=record.organizer_id)
    organizer.name = "New name"
    organizer.save(update_fields=["name"])
    assert api.get(path).body["data"]["organizer"]["name"] == "New name"
    assert api.get("/v1/polls").body["data"][0]["organizer"]["name"] == "New name"
    settings.APP_URL = "https://app.example.net"
    assert api.get(path).body["data"]["inviteUrl"] == f"https://app.example.net/invite/{poll['id']}"
    api.delete(path)
    assert api.get(path).status_code == 404 and api.get("/v1/polls").body["data"] == []


def test_too_many_query_parameters(api):
    query = "&".join(f"a{i}=1" for i in range(1200))
    r = api.get(f"/v1/polls?{query}")
    assert (r.status_code, r.body["error"]["code"], r.body["error"]["message"]) == (400, "VALIDATION_ERROR", "query: too many parameters")


def _rows_shown(poll_id: str) -> list[dict]:
    """The options of a poll as its option rows say, in display order."""
    from polls.models import Option

    return [{"id": o.id, "date": o.date.isoformat()} if o.date else
            {"id": o.id, "startTime": o.start_time.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "duration": o.duration}
            for o in Option.objects.filter(poll_id=poll_id).order_by("date", "start_time", "duration")]


def test_the_options_shown_are_the_option_rows_after_every_change(api, space):
    """`Poll.shown_options`, written with the options: what a poll and the list show is what
    the option rows hold, after creation, every kind of change, a copy and the migration's fill."""
    from datetime import UTC, datetime
    from importlib import import_module

    from django.apps import apps

    from polls import services

    date_poll, time_poll = create(api, kind="date", n_options=3), create(api, kind="time", n_options=4)

    def shown(poll_id):
        one = api.get(f"/v1/polls/{poll_id}").body["data"]["options"]
        assert one == next(p for p in api.get("/v1/polls").body["data"] if p["id"] == poll_id)["options"]
        assert one == _rows_shown(poll_id)
        return one

    assert [o["date"] for o in shown(date_poll["id"])] == ["2027-01-01", "2027-01-02", "2027-01-03"]
    first, second, *_ = time_poll["options"]
    record = Poll.objects.get(pk=time_poll["id"])
    # Kept (one moved after the others), changed in duration, removed, added before the rest.
    services.update_poll(poll=record, options=[
        {"id": first["id"], "start_time": datetime(2027, 1, 2, 9, tzinfo=UTC), "duration": 30},
        {"id": second["id"], "start_time": datetime(2027, 1, 1, 0, 15, tzinfo=UTC), "duration": 45},
        {"start_time": datetime(2026, 12, 31, 8, tzinfo=UTC), "duration": 30},
    ])
    options = shown(time_poll["id"])
    assert [(o["startTime"], o["duration"]) for o in options] == [
        ("2026-12-31T08:00:00.000Z", 30), ("2027-01-01T00:15:00.000Z", 45), ("2027-01-02T09:00:00.000Z", 30)]
    assert [o["id"] for o in options][1:] == [second["id"], first["id"]]
    copy, _ = services.duplicate_poll(poll=Poll.objects.get(pk=time_poll["id"]))
    assert [(o["startTime"], o["duration"]) for o in shown(copy.pk)] == [(o["startTime"], o["duration"]) for o in options]
    Poll.objects.update(shown_options=[])  # the migration fills every poll from its rows
    import_module("polls.migrations.0016_options_as_shown").fill(apps, None)
    for poll_id in (date_poll["id"], time_poll["id"], copy.pk):
        shown(poll_id)
