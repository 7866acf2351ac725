"""The cases of the private API's own tests (Rallly's `api/private/[...route]/route.test.ts`)
that apply here, through HTTP against the real database: every response is checked against
the private API's OpenAPI document (conftest.PrivateApi)."""

from datetime import date, timedelta

import pytest
from django.utils import timezone

from polls.models import Poll
from polls.tests.factories import make_poll, respond
from privateapi.tests.conftest import PrivateApi
from spaces import services as space_services
from spaces.models import ApiKey

DATES = {"title": "Team offsite", "dates": ["2030-01-15", "2030-01-16", "2030-01-17"]}
SLOTS = {"title": "Team sync", "slots": {"duration": 30, "timezone": "Europe/London",
                                         "times": ["2030-01-15T09:00:00Z", "2030-01-15T10:00:00Z"]}}


def issues_at(response, *path) -> list[dict]:
    assert response.status_code == 400 and response.body["success"] is False, response.body
    return [item for item in response.body["error"] if item["path"][:len(path)] == list(path)]


# --- Authentication and the Pro check ----------------------------------------------------------


def test_no_authorization_header_is_401_in_plain_text(private_anon, db):
    response = private_anon.post("/api/private/polls", DATES)
    assert (response.status_code, response.body) == (401, "Unauthorized")
    assert response["WWW-Authenticate"] == 'Bearer realm=""'
    assert Poll.objects.count() == 0


@pytest.mark.parametrize("path", ["/api/private/polls", "/api/private/polls/abc", "/api/private/polls/abc/results",
                                  "/api/private/polls/abc/participants"])
def test_every_endpoint_needs_a_key(private_anon, path, db):
    assert private_anon.get(path).status_code == 401


def test_an_invalid_key_is_401(private_anon, db):
    response = private_anon.post("/api/private/polls", DATES, key="sk_invalid0_" + "x" * 32)
    assert (response.status_code, response.body) == (401, "Unauthorized")
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'


def test_a_header_that_is_not_bearer_is_400_in_plain_text(private_anon, db):
    response = private_anon.post("/api/private/polls", DATES, key=None, headers={"Authorization": "Basic abc"})
    assert (response.status_code, response.body) == (400, "Bad Request")


@pytest.mark.parametrize("change", ["revoked", "expired"])
def test_a_revoked_or_expired_key_is_401(private, space_and_key, change):
    key = ApiKey.objects.get(space=space_and_key[0])
    if change == "revoked":
        space_services.revoke_key(key=key)
    else:
        ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert private.post("/api/private/polls", DATES).status_code == 401


def test_a_space_without_pro_is_403(make_space):
    _, key = make_space(pro=False)
    response = PrivateApi(key).post("/api/private/polls", DATES)
    assert (response.status_code, response.body["error"]["code"]) == (403, "SPACE_NOT_PRO")
    assert Poll.objects.count() == 0


def test_a_pro_space_creates_with_200_and_the_key_is_marked_used(private, space_and_key):
    assert private.post("/api/private/polls", DATES).status_code == 200
    assert ApiKey.objects.get(space=space_and_key[0]).last_used_at is not None


# --- Create with dates ----------------------------------------------------------------------


def test_a_date_poll_has_all_day_options_at_midnight_utc(private, space):
    response = private.post("/api/private/polls", DATES)
    assert response.status_code == 200
    data = response.body["data"]
    assert [(o["startTime"], o["duration"]) for o in data["options"]] == [
        ("2030-01-15T00:00:00.000Z", 0), ("2030-01-16T00:00:00.000Z", 0), ("2030-01-17T00:00:00.000Z", 0)]
    assert data["adminUrl"].endswith(f"/poll/{data['id']}") and data["inviteUrl"].endswith(f"/invite/{data['id']}")
    assert (data["timezone"], data["status"], data["user"]["name"]) == (None, "open", space.owner.name)
    poll = Poll.objects.get(pk=data["id"])
    assert (poll.kind, poll.space_id, poll.title) == ("date", space.pk, "Team offsite")


def test_location_and_description_are_saved(private):
    data = private.post("/api/private/polls", {**DATES, "location": " Room A ", "description": "Bring snacks"}).body["data"]
    assert (data["location"], data["description"]) == ("Room A", "Bring snacks")


def test_more_than_100_dates_is_too_many_options(private):
    dates = [(date(2030, 1, 1) + timedelta(days=n)).isoformat() for n in range(101)]
    response = private.post("/api/private/polls", {"title": "Many", "dates": dates})
    assert (response.status_code, response.body["error"]["code"]) == (400, "TOO_MANY_OPTIONS")
    assert Poll.objects.count() == 0


def test_duplicate_dates_are_refused(private):
    response = private.post("/api/private/polls", {"title": "x", "dates": ["2030-01-15", "2030-01-16", "2030-01-15", "2030-01-17"]})
    assert (response.status_code, response.body["error"]["code"]) == (400, "DUPLICATE_DATES")
    assert "Duplicate dates found" in response.body["error"]["message"] and "1 duplicate date." in response.body["error"]["message"]


def test_an_organizer_who_is_not_a_member_is_refused(private):
    response = private.post("/api/private/polls", {**DATES, "organizer": {"email": "stranger@example.com"}})
    assert (response.status_code, response.body["error"]["code"]) == (400, "ORGANIZER_NOT_MEMBER")


def test_titles_and_locations_are_one_line_and_descriptions_may_have_several(private):
    for field, value in [("title", "Team\nsync"), ("title", "Tab\there"), ("location", "Room\r\nB"), ("title", "x\u2028y")]:
        response = private.post("/api/private/polls", {**DATES, field: value})
        assert [item["path"] for item in issues_at(response)] == [[field]], (field, value)
    assert Poll.objects.count() == 0
    data = private.post("/api/private/polls", {**DATES, "description": "Line one\nLine two\tend"}).body["data"]
    assert data["description"] == "Line one\nLine two\tend"


def test_unknown_fields_and_space_id_are_ignored(private, space):
    response = private.post("/api/private/polls", {**DATES, "spaceId": "space\n123", "kind": "weird", "extra": [1]})
    assert response.status_code == 200
    assert Poll.objects.get(pk=response.body["data"]["id"]).space_id == space.pk


# --- Create with slots ----------------------------------------------------------------------


def test_a_time_poll_from_explicit_times(private):
    data = private.post("/api/private/polls", SLOTS).body["data"]
    assert data["timezone"] == "Europe/London"
    assert [(o["startTime"], o["duration"]) for o in data["options"]] == [
        ("2030-01-15T09:00:00.000Z", 30), ("2030-01-15T10:00:00.000Z", 30)]


def test_times_without_an_offset_are_wall_clock_in_the_timezone_or_floating(private):
    summer = {"title": "x", "slots": {"duration": 60, "timezone": "Europe/London", "times": ["2030-07-01T09:00:00"]}}
    assert private.post("/api/private/polls", summer).body["data"]["options"][0]["startTime"] == "2030-07-01T08:00:00.000Z"
    floating = {"title": "x", "slots": {"duration": 60, "times": ["2030-07-01T09:00:00"]}}
    data = private.post("/api/private/polls", floating).body["data"]
    assert (data["timezone"], data["options"][0]["startTime"]) == (None, "2030-07-01T09:00:00.000Z")


def test_an_invalid_timezone_is_refused(private):
    body = {"title": "x", "slots": {"duration": 30, "timezone": "Invalid/Timezone", "times": ["2030-01-15T09:00:00Z"]}}
    assert issues_at(private.post("/api/private/polls", body), "slots", "timezone")


def test_a_slot_generator_expands_into_slots(private):
    body = {"title": "Weekly standup", "slots": {"duration": 30, "timezone": "Europe/London", "times": [
        {"startDate": "2030-01-21", "endDate": "2030-01-23", "days": ["mon", "tue", "wed"],
         "startTime": "09:00", "endTime": "10:00"}]}}
    starts = [o["startTime"] for o in private.post("/api/private/polls", body).body["data"]["options"]]
    assert starts == [f"2030-01-{day}T{time}:00.000Z" for day in (21, 22, 23) for time in ("09:00", "09:30")]


def test_times_and_generators_mix_and_duplicates_count_once(private):
    body = {"title": "x", "slots": {"duration": 60, "times": [
        "2030-01-21T09:00:00Z",
        {"startDate": "2030-01-21", "endDate": "2030-01-21", "days": ["mon"], "startTime": "09:00", "endTime": "11:00",
         "interval": 60}]}}
    starts = [o["startTime"] for o in private.post("/api/private/polls", body).body["data"]["options"]]
    assert starts == ["2030-01-21T09:00:00.000Z", "2030-01-21T10:00:00.000Z"]


def test_a_generator_that_makes_no_slot_is_no_options_generated(private):
    body = {"title": "x", "slots": {"duration": 60, "times": [
        {"startDate": "2030-01-21", "endDate": "2030-01-21", "days": ["sun"], "startTime": "09:00", "endTime": "11:00"}]}}
    response = private.post("/api/private/polls", body)
    assert (response.status_code, response.body["error"]["code"]) == (400, "NO_OPTIONS_GENERATED")
    assert Poll.objects.count() == 0


def test_too_many_generated_slots_is_too_many_options(private):
    body = {"title": "x", "slots": {"duration": 15, "times": [
        {"startDate": "2030-01-01", "endDate": "2030-01-10", "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
         "startTime": "09:00", "endTime": "12:00"}]}}
    response = private.post("/api/private/polls", body)
    assert (response.status_code, response.body["error"]["code"]) == (400, "TOO_MANY_OPTIONS")


@pytest.mark.parametrize("start, end", [("2030-01-01", "2031-06-01"), ("2030-06-01", "2030-01-01"),
                                        ("2030-01-01", (date(2030, 1, 1) + timedelta(days=366)).isoformat())])
def test_a_generator_range_that_is_too_long_or_reversed_is_refused_at_end_date(private, start, end):
    body = {"title": "Way too long", "slots": {"duration": 30, "timezone": "Europe/London", "times": [
        {"startDate": start, "endDate": end, "days": ["sun"], "startTime": "09:00", "endTime": "09:30"}]}}
    [found] = issues_at(private.post("/api/private/polls", body), "slots", "times", 0, "endDate")
    if start < end:
        assert "366" in found["message"]
    assert Poll.objects.count() == 0


# --- Validation -----------------------------------------------------------------------------


@pytest.mark.parametrize("body, path", [
    ({"title": "x"}, []),
    ({**DATES, "slots": SLOTS["slots"]}, []),
    ({"dates": ["2030-01-15"]}, ["title"]),
    ({"title": "x", "dates": []}, ["dates"]),
    ({"title": "   ", "dates": ["2030-01-15"]}, ["title"]),
    ({"title": "x", "dates": ["2030-02-30"]}, ["dates", 0]),
    ({"title": "x", "requireEmail": "yes", "dates": ["2030-01-15"]}, ["requireEmail"]),
    ({"title": "x", "slots": {"duration": 10, "times": ["2030-01-15T09:00:00Z"]}}, ["slots", "duration"]),
    ({"title": "x", "slots": {"duration": 30, "times": [42]}}, ["slots", "times", 0]),
])
def test_invalid_bodies_are_400_with_the_issues_and_the_input(private, body, path):
    response = private.post("/api/private/polls", body)
    assert [item["path"] for item in issues_at(response)] == [path]
    assert response.body["data"] == body
    assert Poll.objects.count() == 0


def test_malformed_json_is_400_in_plain_text(private):
    response = private.post("/api/private/polls", raw=b'{"title": ')
    assert (response.status_code, response.body) == (400, "Malformed JSON in request body")


def test_a_body_that_is_not_json_is_read_as_empty(private):
    response = private.post("/api/private/polls", raw=b"title=x", content_type="application/x-www-form-urlencoded")
    assert [item["path"] for item in issues_at(response)] == [["title"]]
    assert response.body["data"] == {}


# --- Get, list, delete ----------------------------------------------------------------------


def test_get_a_poll(private, space):
    poll = make_poll(space, {"title": "Team sync", "kind": "time", "duration": 30, "timeZone": "Europe/London",
                             "location": "Zoom", "description": "Weekly",
                             "options": [{"startTime": "2030-01-15T09:00:00Z"}, {"startTime": "2030-01-15T10:00:00Z"}]})
    data = private.get(f"/api/private/polls/{poll.id}").body["data"]
    assert {key: data[key] for key in ("id", "title", "description", "location", "timezone", "status")} == {
        "id": poll.id, "title": "Team sync", "description": "Weekly", "location": "Zoom",
        "timezone": "Europe/London", "status": "open"}
    assert data["options"][0] == {"id": data["options"][0]["id"], "startTime": "2030-01-15T09:00:00.000Z", "duration": 30}
    assert data["user"] == {"name": space.owner.name, "image": None}
    assert "participantCount" not in data and "timeZone" not in data and "kind" not in data


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_a_poll_of_another_space_or_none_is_poll_not_found(private, make_space, method):
    other = make_poll(make_space()[0])
    for poll_id in (other.id, "nonexistent", "x" * 40):
        response = private.request(method, f"/api/private/polls/{poll_id}", {"status": "closed"})
        assert (response.status_code, response.body["error"]["code"]) == (404, "POLL_NOT_FOUND")
    assert Poll.objects.get(pk=other.id).status == "open"


def test_list_polls_newest_first_with_participant_counts(private, space):
    older, newer = make_poll(space, title="Older"), make_poll(space, title="Newer")
    respond(newer, "yes", "no", None)
    response = private.get("/api/private/polls")
    assert [(item["id"], item["participantCount"]) for item in response.body["data"]] == [(newer.id, 1), (older.id, 0)]
    assert response.body["nextCursor"] is None
    assert response.body["data"][0]["options"][0]["duration"] == 0


def test_an_empty_list(private):
    assert private.get("/api/private/polls").body == {"data": [], "nextCursor": None}


def test_the_list_filters_by_status_and_pages_with_the_cursor(private, space):
    polls = [make_poll(space, title=f"P{n}") for n in range(3)]
    make_poll(space, title="Closed", status="closed")
    first = private.get("/api/private/polls?status=open&limit=2")
    assert [item["id"] for item in first.body["data"]] == [polls[2].id, polls[1].id]
    second = private.get(f"/api/private/polls?status=open&limit=2&cursor={first.body['nextCursor']}")
    assert ([item["id"] for item in second.body["data"]], second.body["nextCursor"]) == ([polls[0].id], None)
    assert [item["title"] for item in private.get("/api/private/polls?status=closed&unknown=1").body["data"]] == ["Closed"]


@pytest.mark.parametrize("query, path", [("status=finalized", "status"), ("limit=101", "limit"), ("limit=0", "limit"),
                                         ("limit=abc", "limit"), ("limit=1.5", "limit"), ("cursor=forged", "cursor")])
def test_a_bad_list_query_is_400(private, query, path):
    assert [item["path"] for item in issues_at(private.get(f"/api/private/polls?{query}"))] == [[path]]


def test_delete_a_poll_then_it_is_gone(private, space):
    poll = make_poll(space)
    assert private.delete(f"/api/private/polls/{poll.id}").body == {"data": {"id": poll.id, "deleted": True}}
    for method in ("GET", "DELETE"):
        assert private.request(method, f"/api/private/polls/{poll.id}").body["error"]["code"] == "POLL_NOT_FOUND"


# --- Close (PATCH) --------------------------------------------------------------------------


def test_close_an_open_poll_and_again(private, space):
    poll = make_poll(space)
    for _ in range(2):
        response = private.patch(f"/api/private/polls/{poll.id}", {"status": "closed"})
        assert (response.status_code, response.body["data"]["id"], response.body["data"]["status"]) == (200, poll.id, "closed")
    assert Poll.objects.get(pk=poll.id).status == "closed"


@pytest.mark.parametrize("status", ["open", "scheduled", "canceled"])
def test_other_statuses_are_422_and_change_nothing(private, space, status):
    poll = make_poll(space)
    response = private.patch(f"/api/private/polls/{poll.id}", {"status": status})
    assert (response.status_code, response.body["error"]["code"]) == (422, "TRANSITION_NOT_AVAILABLE")
    assert Poll.objects.get(pk=poll.id).status == "open"


def test_a_scheduled_poll_cannot_be_closed(private, space):
    poll = make_poll(space, status="scheduled")
    response = private.patch(f"/api/private/polls/{poll.id}", {"status": "closed"})
    assert (response.status_code, response.body["error"]["code"]) == (422, "TRANSITION_NOT_AVAILABLE")
    assert Poll.objects.get(pk=poll.id).status == "scheduled"


@pytest.mark.parametrize("body", [{"status": "archived"}, {}, {"status": None}])
def test_an_unknown_status_is_400(private, space, body):
    poll = make_poll(space)
    assert [item["path"] for item in issues_at(private.patch(f"/api/private/polls/{poll.id}", body))] == [["status"]]
    assert Poll.objects.get(pk=poll.id).status == "open"


def test_close_needs_a_key(private_anon, space):
    poll = make_poll(space)
    assert private_anon.patch(f"/api/private/polls/{poll.id}", {"status": "closed"}).status_code == 401
    assert Poll.objects.get(pk=poll.id).status == "open"


# --- Results and participants ---------------------------------------------------------------


def test_results_count_votes_and_list_only_the_types_chosen(private, space):
    poll = make_poll(space, {"title": "x", "kind": "time", "duration": 30, "options": [
        {"startTime": "2030-01-15T09:00:00Z"}, {"startTime": "2030-01-15T10:00:00Z"}, {"startTime": "2030-01-15T11:00:00Z"}]})
    for votes in [("yes", "yes", None), ("yes", "no", None), ("yes", "no", None), ("ifNeedBe", None, None), ("no", None, None)]:
        respond(poll, *votes)
    data = private.get(f"/api/private/polls/{poll.id}/results").body["data"]
    assert (data["pollId"], data["status"], data["participantCount"], data["highScore"]) == (poll.id, "open", 5, 4003)
    assert [(o["votes"], o["score"], o["isTopChoice"]) for o in data["options"]] == [
        ([{"type": "yes", "count": 3}, {"type": "ifNeedBe", "count": 1}, {"type": "no", "count": 1}], 4003, True),
        ([{"type": "yes", "count": 1}, {"type": "no", "count": 2}], 1001, False),
        ([], 0, False),
    ]
    assert data["options"][0]["startTime"] == "2030-01-15T09:00:00.000Z" and data["options"][0]["duration"] == 30


def test_results_share_top_choice_and_rank_availability_before_yes(private, space):
    poll = make_poll(space)
    for votes in [("yes", "yes", "yes"), ("yes", "yes", "ifNeedBe"), ("no", "no", "ifNeedBe")]:
        respond(poll, *votes)
    options = private.get(f"/api/private/polls/{poll.id}/results").body["data"]["options"]
    assert [(o["score"], o["isTopChoice"]) for o in options] == [(2002, False), (2002, False), (3001, True)]


def test_results_of_a_closed_poll_say_so(private, space):
    poll = make_poll(space, status="closed")
    assert private.get(f"/api/private/polls/{poll.id}/results").body["data"]["status"] == "closed"


def test_participants_oldest_first_without_availability(private, space):
    poll = make_poll(space)
    ann = respond(poll, "yes", None, None, name="Alice", email="alice@example.com")
    bob = respond(poll, "no", "yes", None, name="Bob")
    data = private.get(f"/api/private/polls/{poll.id}/participants").body["data"]
    assert data["pollId"] == poll.id
    assert [(p["id"], p["name"], p["email"]) for p in data["participants"]] == [
        (ann.id, "Alice", "alice@example.com"), (bob.id, "Bob", None)]
    assert set(data["participants"][0]) == {"id", "name", "email", "createdAt"}


def test_no_participants_is_an_empty_list(private, space):
    poll = make_poll(space)
    assert private.get(f"/api/private/polls/{poll.id}/participants").body["data"] == {"pollId": poll.id, "participants": []}


# --- Routes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("method, path", [("GET", "/api/private/nothing"), ("PUT", "/api/private/polls"),
                                          ("POST", "/api/private/polls/abc"), ("GET", "/api/private"),
                                          ("PATCH", "/api/private/polls/abc/results")])
def test_no_route_is_the_plain_text_404(private, method, path):
    response = private.request(method, path, {})
    assert (response.status_code, response.body) == (404, "404 Not Found")
