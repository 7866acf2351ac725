"""POST /v1/polls: what a created poll holds, through HTTP. Refusals:
test_api_create_refusals.py."""

import re
from datetime import date, datetime, timedelta

import pytest

from polls.models import Option, Poll
from spaces import services as space_services

INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def date_poll(**extra):
    return {"title": "Team dinner", "kind": "date", "options": [{"date": "2026-12-04"}], **extra}


def time_poll(**extra):
    return {"title": "Call", "kind": "time", "duration": 30, "options": [{"startTime": "2026-12-04T09:00:00Z"}], **extra}


def starts(response):
    return [(o["startTime"], o["duration"]) for o in response.body["data"]["options"]]


# --- Success -------------------------------------------------------------------------------


def test_date_poll_is_created_with_every_field_and_defaults(api, space):
    r = api.post("/v1/polls", date_poll(options=[{"date": "2026-12-05"}, {"date": "2026-12-04"}, {"date": "2026-12-05"}]))
    assert r.status_code == 201
    poll = r.body["data"]
    assert re.fullmatch(r"[A-Za-z0-9]{12}", poll["id"])
    assert [o["date"] for o in poll["options"]] == ["2026-12-04", "2026-12-05"]  # deduplicated, sorted
    assert all(re.fullmatch(r"[a-z0-9]{20,30}", o["id"]) for o in poll["options"])
    assert poll["title"] == "Team dinner" and poll["kind"] == "date" and poll["status"] == "open"
    assert poll["description"] is None and poll["location"] is None and poll["timeZone"] is None
    assert poll["conferencing"] == {"provider": "none"}
    assert (poll["requireEmail"], poll["hideParticipants"], poll["hideScores"], poll["disableComments"], poll["allowTentativeVotes"]) == (
        False, False, False, True, True,
    )
    assert poll["participantCount"] == 0
    assert INSTANT.match(poll["createdAt"]) and poll["createdAt"] == poll["updatedAt"]
    owner = space.owner
    assert poll["organizer"] == {"id": owner.id, "name": owner.name, "email": owner.email, "image": None}
    assert poll["adminUrl"] == f"http://localhost:8000/poll/{poll['id']}"
    assert poll["inviteUrl"] == f"http://localhost:8000/invite/{poll['id']}"
    assert Poll.objects.get(pk=poll["id"]).space == space
    assert Option.objects.filter(poll_id=poll["id"]).count() == 2


def test_texts_are_trimmed_and_settings_stored(api):
    body = date_poll(
        title="  Dinner  ", description="  Bring food ", location=" Berlin ",
        requireEmail=True, hideParticipants=True, hideScores=True, disableComments=False, allowTentativeVotes=False,
    )
    poll = api.post("/v1/polls", body).body["data"]
    assert (poll["title"], poll["description"], poll["location"]) == ("Dinner", "Bring food", "Berlin")
    assert (poll["requireEmail"], poll["hideParticipants"], poll["hideScores"], poll["disableComments"], poll["allowTentativeVotes"]) == (
        True, True, True, False, False,
    )
    assert api.get(f"/v1/polls/{poll['id']}").body["data"] == poll


def test_empty_description_and_location_are_null(api):
    poll = api.post("/v1/polls", date_poll(description="   ", location="")).body["data"]
    assert poll["description"] is None and poll["location"] is None


def test_organizer_is_a_member_matched_case_insensitively(api, space):
    space_services.add_member(space=space, email="Ann@Example.com", name="Ann")
    poll = api.post("/v1/polls", date_poll(organizer={"email": "ann@EXAMPLE.com"})).body["data"]
    assert poll["organizer"]["email"] == "Ann@Example.com" and poll["organizer"]["name"] == "Ann"


def test_organizer_image_is_a_cdn_url(api, space):
    member = space_services.add_member(space=space, email="pic@example.com").user
    member.image = "avatars/pic.png"
    member.save()
    poll = api.post("/v1/polls", date_poll(organizer={"email": "pic@example.com"})).body["data"]
    assert poll["organizer"]["image"] == "http://localhost:8000/cdn/avatars/pic.png"


def test_time_options_offsets_wall_clock_and_floating(api):
    body = time_poll(
        timeZone="Europe/Berlin",
        options=[
            {"startTime": "2026-12-04T09:00:00+02:00"},  # instant with an offset
            {"startTime": "2026-12-04T09:00:00Z", "duration": 60},  # instant, own duration
            {"startTime": "2026-12-04T09:00:00"},  # wall clock in Berlin (UTC+1 in December)
            {"startTime": "2026-12-04T12:00:30.999"},  # seconds kept, fractions dropped
        ],
    )
    r = api.post("/v1/polls", body)
    assert r.status_code == 201
    assert starts(r) == [
        ("2026-12-04T07:00:00.000Z", 30),
        ("2026-12-04T08:00:00.000Z", 30),
        ("2026-12-04T09:00:00.000Z", 60),
        ("2026-12-04T11:00:30.000Z", 30),
    ]
    assert r.body["data"]["timeZone"] == "Europe/Berlin"


def test_floating_times_without_time_zone_keep_the_wall_clock(api):
    r = api.post("/v1/polls", time_poll(options=[{"startTime": "2026-12-04T09:00"}]))
    assert starts(r) == [("2026-12-04T09:00:00.000Z", 30)]
    assert r.body["data"]["timeZone"] is None


def test_options_sort_by_start_then_duration_and_duplicates_go(api):
    body = time_poll(options=[
        {"startTime": "2026-12-04T10:00:00Z", "duration": 60},
        {"startTime": "2026-12-04T10:00:00Z", "duration": 30},
        {"startTime": "2026-12-04T09:00:00Z"},
        {"startTime": "2026-12-04T11:00:00+01:00", "duration": 30},  # same instant as 10:00Z/30
    ])
    assert starts(api.post("/v1/polls", body)) == [
        ("2026-12-04T09:00:00.000Z", 30), ("2026-12-04T10:00:00.000Z", 30), ("2026-12-04T10:00:00.000Z", 60),
    ]


def test_legacy_time_zone_names_become_canonical(api):
    r = api.post("/v1/polls", time_poll(timeZone="Asia/Calcutta"))
    assert r.body["data"]["timeZone"] == "Asia/Kolkata"


def test_generator_expands_listed_days_and_merges_with_options(api):
    body = {
        "title": "Standup", "kind": "time", "timeZone": "Europe/Berlin", "duration": 30,
        "options": [{"startTime": "2026-12-07T09:00:00"}, {"startTime": "2026-12-20T15:00:00"}],
        "generators": [{"startDate": "2026-12-07", "endDate": "2026-12-13", "days": ["mon", "wed"], "from": "09:00", "to": "10:30", "interval": 45}],
    }
    r = api.post("/v1/polls", body)
    assert r.status_code == 201
    assert starts(r) == [
        ("2026-12-07T08:00:00.000Z", 30),  # Monday 09:00 (also an explicit option: kept once)
        ("2026-12-07T08:45:00.000Z", 30),
        ("2026-12-09T08:00:00.000Z", 30),  # Wednesday
        ("2026-12-09T08:45:00.000Z", 30),
        ("2026-12-20T14:00:00.000Z", 30),
    ]


def test_generator_interval_defaults_to_duration_and_slots_end_by_to(api):
    body = {"title": "x", "kind": "time", "duration": 60,
            "generators": [{"startDate": "2026-12-07", "endDate": "2026-12-07", "from": "09:00", "to": "11:30"}]}
    assert starts(api.post("/v1/polls", body)) == [("2026-12-07T09:00:00.000Z", 60), ("2026-12-07T10:00:00.000Z", 60)]


@pytest.mark.parametrize(
    "zone, day, window, expected",
    [
        # Spring forward in New York (02:00 -> 03:00): 02:30 does not exist, moves forward by
        # the gap to 03:30 EDT; slots step in real minutes from the window start.
        ("America/New_York", "2026-03-08", ("02:30", "04:00"), ["07:30"]),
        ("America/New_York", "2026-03-08", ("01:00", "04:00"), ["06:00", "06:30", "07:00", "07:30"]),
        # Fall back (02:00 -> 01:00): 01:30 is ambiguous and takes its first occurrence (EDT).
        ("America/New_York", "2026-11-01", ("01:30", "02:00"), ["05:30", "06:00", "06:30"]),
        ("Europe/Berlin", "2026-03-29", ("01:00", "04:00"), ["00:00", "00:30", "01:00", "01:30"]),
    ],
)
def test_generator_daylight_saving_rules(api, zone, day, window, expected):
    body = {"title": "x", "kind": "time", "timeZone": zone, "duration": 30,
            "generators": [{"startDate": day, "endDate": day, "from": window[0], "to": window[1]}]}
    r = api.post("/v1/polls", body)
    assert r.status_code == 201, r.body
    assert [s[11:16] for s, _ in starts(r)] == expected


def test_wall_clock_option_in_a_gap_moves_forward(api):
    body = time_poll(timeZone="America/New_York", options=[{"startTime": "2026-03-08T02:30:00"}, {"startTime": "2026-11-01T01:30:00"}])
    # 02:30 does not exist: 03:30 EDT = 07:30Z. 01:30 is ambiguous: first (EDT) = 05:30Z.
    assert starts(api.post("/v1/polls", body)) == [("2026-03-08T07:30:00.000Z", 30), ("2026-11-01T05:30:00.000Z", 30)]


def test_one_hundred_options_are_allowed_and_duplicates_do_not_count(api):
    days = [(date(2027, 1, 1) + timedelta(days=i)).isoformat() for i in range(100)]
    r = api.post("/v1/polls", date_poll(options=[{"date": d} for d in days + days[:5]]))
    assert r.status_code == 201 and len(r.body["data"]["options"]) == 100


def test_request_to_a_foreign_time_zone_has_no_effect_on_date_options(api):
    # Date options never pass through a time zone: the date comes back as sent.
    poll = api.post("/v1/polls", date_poll(options=[{"date": "2026-03-29"}])).body["data"]
    assert poll["options"][0]["date"] == "2026-03-29"


def test_created_at_is_now(api):
    before = datetime.now().astimezone()
    created = datetime.fromisoformat(api.post("/v1/polls", date_poll()).body["data"]["createdAt"])
    assert before - timedelta(seconds=1) <= created <= datetime.now().astimezone() + timedelta(seconds=1)


def test_creation_queries_do_not_grow_with_options(api, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries(n_options):
        body = {"title": "x", "kind": "time", "duration": 15,
                "options": [{"startTime": f"2027-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"} for i in range(n_options)]}
        with CaptureQueriesContext(connection) as captured:
            r = api.post("/v1/polls", body)
        assert r.status_code == 201 and len(r.body["data"]["options"]) == n_options
        return len(captured.captured_queries)

    queries(1)  # the key's last-used time is written once a minute: settle it first
    assert queries(1) == queries(4) == queries(100)
