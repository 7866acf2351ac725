"""POST /v1/polls: every refusal of the spec and decisions, through HTTP; each names the
field and stores nothing."""

import re
from datetime import date, datetime, timedelta

import pytest

from polls.models import Option, Poll
from polls.tests.test_api_create import date_poll, time_poll


def refused(api, body, status, code, *fragments):
    r = api.post("/v1/polls", body)
    assert (r.status_code, r.body["error"]["code"]) == (status, code), r.body
    for fragment in fragments:
        assert fragment in r.body["error"]["message"], (fragment, r.body["error"]["message"])
    assert Poll.objects.count() == 0 and Option.objects.count() == 0
    return r.body["error"]["message"]


def test_too_many_options_names_the_count(api):
    days = [(date(2027, 1, 1) + timedelta(days=i)).isoformat() for i in range(101)]
    refused(api, date_poll(options=[{"date": d} for d in days]), 400, "TOO_MANY_OPTIONS", "101", "100")


def test_too_many_generated_options(api):
    body = {"title": "x", "kind": "time", "duration": 15,
            "generators": [{"startDate": "2027-01-01", "endDate": "2027-12-31", "from": "00:00", "to": "23:59"}]}
    refused(api, body, 400, "TOO_MANY_OPTIONS", "100")


def test_ten_year_long_generators_are_refused_with_their_count(api):
    """Counted as integers, refused before any option is built (bench/generators.py)."""
    body = {"title": "x", "kind": "time", "duration": 15, "timeZone": "Europe/Berlin",
            "generators": [{"startDate": f"2027-01-{n + 1:02d}", "endDate": f"2027-12-{n + 20:02d}",
                            "from": "00:00", "to": "23:59"} for n in range(10)]}
    message = refused(api, body, 400, "TOO_MANY_OPTIONS")
    assert message == ("options: a poll may have at most 100 options; "
                       "this one has 34485 after removing duplicates")  # 363 days x 95 slots


def quarter_hours(day: str, count: int) -> dict:
    """A generator of `count` (< 96) quarter-hour slots from midnight on `day`."""
    end = datetime(2027, 1, 1) + timedelta(minutes=15 * count)
    return {"startDate": day, "endDate": day, "from": "00:00", "to": f"{end:%H:%M}"}


def test_duplicates_across_generators_and_options_count_once(api):
    """100 distinct slots made of overlapping generators and explicit options that repeat
    generated slots: accepted; one more distinct slot: refused."""
    body = {"title": "x", "kind": "time", "duration": 15,
            "generators": [quarter_hours("2027-03-01", 40), quarter_hours("2027-03-01", 40), quarter_hours("2027-03-02", 60)],
            "options": [{"startTime": "2027-03-01T00:00:00Z"}, {"startTime": "2027-03-02T00:15:00Z"}]}
    r = api.post("/v1/polls", body)
    assert r.status_code == 201, r.body
    assert len(r.body["data"]["options"]) == 100
    Poll.objects.all().delete()
    body["options"].append({"startTime": "2027-03-03T00:00:00Z"})
    refused(api, body, 400, "TOO_MANY_OPTIONS", "this one has 101 after")


def test_explicit_options_with_another_duration_count_toward_the_limit(api):
    body = {"title": "x", "kind": "time", "duration": 15,
            "generators": [quarter_hours("2027-03-01", 95)],
            "options": [{"startTime": f"2027-03-05T0{n}:00:00Z", "duration": 60} for n in range(6)]}
    refused(api, body, 400, "TOO_MANY_OPTIONS", "this one has 101 after")
    body["options"].pop()
    assert api.post("/v1/polls", body).status_code == 201


def test_organizer_not_member(api, make_space):
    other, _ = make_space()
    refused(api, date_poll(organizer={"email": other.owner.email}), 400, "ORGANIZER_NOT_MEMBER", "organizer.email")


@pytest.mark.parametrize("field", ["title", "description", "location"])
def test_inappropriate_content(api, field):
    refused(api, date_poll(**{field: "what a BadWord here"}), 400, "INAPPROPRIATE_CONTENT", f"{field}:")


VALIDATION_CASES = [
    # (body, fragments of the message)
    ({}, ["title: required", "kind: required"]),
    ({"title": "x", "kind": "month", "options": []}, ["kind: must be one of: date, time"]),
    (date_poll(title=""), ["title: must not be empty"]),
    (date_poll(title="   "), ["title: must not be empty"]),
    (date_poll(title="x" * 256), ["title: must be at most 255 characters"]),
    (date_poll(description="x" * 1001), ["description: must be at most 1000 characters"]),
    (date_poll(location="x" * 256), ["location: must be at most 255 characters"]),
    (date_poll(title=5), ["title: must be a string"]),
    (date_poll(title=None), ["title: must not be null"]),
    (date_poll(title="a\u0000b"), ["title: must not contain NUL characters"]),
    (date_poll(title="\ud800"), ["title: must be valid Unicode text"]),
    (date_poll(requireEmail="true"), ["requireEmail: must be a boolean"]),
    (date_poll(hideScores=1), ["hideScores: must be a boolean"]),
    (time_poll(duration="30"), ["duration: must be an integer"]),
    (time_poll(duration=30.0), ["duration: must be an integer"]),
    (time_poll(duration=True), ["duration: must be an integer"]),
    (time_poll(duration=14), ["duration: must be at least 15"]),
    (time_poll(duration=1441), ["duration: must be at most 1440"]),
    (date_poll(options=[]), ["options: must have at least 1 items"]),
    (date_poll(options={"date": "2026-12-01"}), ["options: must be an array"]),
    (date_poll(options=["2026-12-01"]), ["options[0]: must be an object"]),
    (date_poll(options=[{"date": "2025-02-29"}]), ["options[0].date: must be a date YYYY-MM-DD"]),
    (date_poll(options=[{"date": "2026-12-1"}]), ["options[0].date: must be a date YYYY-MM-DD"]),
    (date_poll(options=[{"date": "2026-12-01"}, {"date": "2026-12-02", "x": 1}]), ["options[1].x: unknown field"]),
    (date_poll(options=[{"startTime": "2026-12-01T09:00:00Z"}]), ["options[0].date: required", "options[0].startTime: unknown field"]),
    (date_poll(timeZone="Europe/Berlin"), ["timeZone: unknown field"]),
    (date_poll(duration=30), ["duration: unknown field"]),
    (date_poll(generators=[]), ["generators: unknown field"]),
    (date_poll(conferencing={"provider": "zoom"}), ["conferencing: unknown field"]),
    *[(date_poll(**{name: value}), [f"{name}: unknown field"]) for name, value in [
        ("id", "abc"), ("status", "open"), ("createdAt", "2026-01-01T00:00:00Z"), ("updatedAt", "x"),
        ("participantCount", 0), ("spaceId", "s"), ("adminUrl", "u"), ("timezone", "Europe/Berlin"),
    ]],
    (date_poll(organizer={"email": "a@example.com", "name": "A"}), ["organizer.name: unknown field"]),
    (date_poll(organizer={"email": "not-an-email"}), ["organizer.email: must be an e-mail address"]),
    (date_poll(organizer="a@example.com"), ["organizer: must be an object"]),
    ({"title": "x", "kind": "time"}, ["options: required (give options, generators or both)"]),
    (time_poll(duration=None), ["duration: must not be null"]),
    ({"title": "x", "kind": "time", "options": [{"startTime": "2026-12-04T09:00:00Z", "duration": 30}, {"startTime": "2026-12-04T10:00:00Z"}]},
     ["duration: required because options[1] has no duration"]),
    (time_poll(options=[{"startTime": "2026-12-04 09:00"}]), ["options[0].startTime: must be an RFC 3339 date-time"]),
    (time_poll(options=[{"startTime": "2026-13-04T09:00:00Z"}]), ["options[0].startTime: must be an RFC 3339 date-time"]),
    (time_poll(options=[{"startTime": "2026-12-04T09:00:00+24:00"}]), ["options[0].startTime: must be an RFC 3339 date-time"]),
    (time_poll(options=[{"startTime": 1700000000}]), ["options[0].startTime: must be an RFC 3339 date-time"]),
    (time_poll(timeZone="Mars/Olympus"), ["timeZone: unknown time zone"]),
    (time_poll(timeZone="UTC"), ["timeZone: fixed-offset zones are not accepted (omit timeZone for floating times)"]),
    (time_poll(timeZone="Etc/GMT+2"), ["timeZone: fixed-offset zones are not accepted"]),
    (time_poll(timeZone="GMT"), ["timeZone: fixed-offset zones are not accepted"]),
    (time_poll(timeZone=""), ["timeZone: must not be empty"]),
]

GEN = {"startDate": "2026-12-07", "endDate": "2026-12-11", "from": "09:00", "to": "12:00"}


def gen_poll(**gen):
    return {"title": "x", "kind": "time", "duration": 60, "generators": [{**GEN, **gen}]}


VALIDATION_CASES += [
    ({"title": "x", "kind": "time", "generators": [GEN]}, ["duration: required when generators are given"]),
    (gen_poll(to="09:00"), ["generators[0].to: must be later than from"]),
    (gen_poll(to="08:00"), ["generators[0].to: must be later than from"]),
    (gen_poll(to="09:30"), ["generators[0].to: the daily window (30 min) is shorter than duration (60 min)"]),
    (gen_poll(startDate="2026-12-08", endDate="2026-12-12", days=["mon"]), ["generators[0].days: the date range contains none of these days"]),
    (gen_poll(endDate="2026-12-06"), ["generators[0].endDate: must not be before startDate"]),
    (gen_poll(endDate="2027-12-07"), ["generators[0].endDate: the range must be fewer than 366 days"]),
    (gen_poll(days=["mon", "funday"]), ["generators[0].days[1]: must be one of: mon, tue, wed, thu, fri, sat, sun"]),
    (gen_poll(days=["mon", "tue", "mon"]), ["generators[0].days[2]: repeated"]),
    (gen_poll(days=[]), ["generators[0].days: must have at least 1 items"]),
    (gen_poll(**{"from": "09:00:00"}), ["generators[0].from: must be a time HH:MM (00:00-23:59)"]),
    (gen_poll(to="24:00"), ["generators[0].to: must be a time HH:MM (00:00-23:59)"]),
    (gen_poll(interval=10), ["generators[0].interval: must be at least 15"]),
    (gen_poll(interval="60"), ["generators[0].interval: must be an integer"]),
    (gen_poll(foo=1), ["generators[0].foo: unknown field"]),
    ({"title": "x", "kind": "time", "duration": 60, "generators": [GEN] * 11}, ["generators: must have at most 10 items"]),
]


@pytest.mark.parametrize("body, fragments", VALIDATION_CASES)
def test_validation_errors_name_each_field(api, body, fragments):
    message = refused(api, body, 400, "VALIDATION_ERROR", *fragments)
    assert all(re.match(r"^[\w\[\].]+: ", part) for part in message.split("; ")), message



# C0 (with NUL's own message apart), DEL, C1, and the line and paragraph separators.
CONTROL_CHARACTERS = ["\n", "\r", "\t", "\x01", "\x0b", "\x1b", "\x1f", "\x7f", "\x85", "\x9f", "\u2028", "\u2029"]


@pytest.mark.parametrize("character", CONTROL_CHARACTERS)
@pytest.mark.parametrize("field", ["title", "location"])
def test_one_line_texts_refuse_control_characters(api, field, character):
    body = date_poll(**{field: f"Team{character}dinner"})
    refused(api, body, 400, "VALIDATION_ERROR", f"{field}: must not contain control characters or line breaks")


@pytest.mark.parametrize("character", ["\x01", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\x9f"])
def test_a_description_refuses_control_characters_but_line_breaks_and_tabs(api, character):
    refused(api, date_poll(description=f"Bring{character}food"), 400, "VALIDATION_ERROR",
            "description: must not contain control characters other than line breaks and tabs")


def test_a_description_keeps_its_line_breaks_and_tabs(api):
    text = "Bring:\n\t- food\r\n\t- drinks\u2028and more"
    r = api.post("/v1/polls", date_poll(description=text, title="Team\u00a0dinner é 🍝", location="Room 4"))
    assert r.status_code == 201, r.body
    assert r.body["data"]["description"] == text and r.body["data"]["title"] == "Team\u00a0dinner é 🍝"

def test_every_offending_field_is_named(api):
    body = {"title": "", "kind": "date", "options": [{"date": "x"}, {"date": "2026-12-01", "y": 2}], "hideScores": "no", "spaceId": "s"}
    message = refused(api, body, 400, "VALIDATION_ERROR")
    assert message.split("; ") == [
        "title: must not be empty",
        "hideScores: must be a boolean",
        "options[0].date: must be a date YYYY-MM-DD",
        "options[1].y: unknown field",
        "spaceId: unknown field",
    ]


def test_unknown_kind_still_checks_shared_fields(api):
    message = refused(api, {"title": 7, "options": [{"date": "2026-12-01"}], "bogus": True}, 400, "VALIDATION_ERROR")
    assert message.split("; ") == ["title: must be a string", "kind: required", "bogus: unknown field"]


@pytest.mark.parametrize("kind", [{}, [], ["date"], 1, None, True])
def test_kind_of_the_wrong_type(api, kind):
    refused(api, date_poll(kind=kind), 400, "VALIDATION_ERROR", "kind: ")


@pytest.mark.parametrize("query", ["limit=5", "limit=5&cursor=x", "x"])
def test_a_query_string_is_refused_and_an_empty_one_is_none(api, query):
    r = api.post(f"/v1/polls?{query}", date_poll())
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR"), r.body
    assert r.body["error"]["message"] == "; ".join(f"{name.split('=')[0]}: unknown field" for name in query.split("&"))
    assert Poll.objects.count() == 0
    for empty in ("/v1/polls?", "/v1/polls?&"):
        assert api.post(empty, date_poll()).status_code == 201
