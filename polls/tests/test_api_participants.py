"""GET /v1/polls/{pollId}/participants and /participants/{participantId}: availability spans."""

from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from polls import services
from polls.models import Participant, Vote
from polls.tests.factories import date_poll_body, make_poll, option_ids, respond, stored_vote, time_poll_body


def participants(api, poll) -> list[dict]:
    response = api.get(f"/v1/polls/{poll.pk}/participants")
    assert response.status_code == 200, response.body
    return response.body["data"]


def participant(api, poll, participant_id) -> dict:
    response = api.get(f"/v1/polls/{poll.pk}/participants/{participant_id}")
    assert response.status_code == 200, response.body
    return response.body["data"]


def error_code(response) -> str:
    assert response.status_code == 404
    return response.body["error"]["code"]


def span(start, end, all_day=False, modifiers=()):
    return {"start": start, "end": end, "allDay": all_day, "modifiers": list(modifiers)}


def test_date_options_are_all_day_spans_and_only_yes_and_if_need_be_count(api, space):
    poll = make_poll(space, date_poll_body("2030-01-31", "2030-02-01", "2030-02-02", "2030-02-03"))
    ann = respond(poll, "ifNeedBe", "yes", "no", None, name="Ann", email="ann@example.com")
    expected = {
        "id": ann.pk,
        "name": "Ann",
        "email": "ann@example.com",
        "createdAt": ann.created_at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ann.created_at.microsecond // 1000:03d}Z",
        "availability": [
            span("2030-01-31T00:00:00.000Z", "2030-02-01T00:00:00.000Z", True, ["ifNeedBe"]),
            span("2030-02-01T00:00:00.000Z", "2030-02-02T00:00:00.000Z", True),
        ],
    }
    assert participants(api, poll) == [expected]
    assert participant(api, poll, ann.pk) == expected


def test_time_options_span_start_to_end_ordered_by_start_and_not_merged(api, space):
    # Back-to-back slots and one of another length at the same start: three separate spans.
    body = time_poll_body(time_zone=None, duration=30)
    body["options"] = [
        {"startTime": "2030-05-06T09:30:00Z"},
        {"startTime": "2030-05-06T09:00:00Z"},
        {"startTime": "2030-05-06T09:00:00Z", "duration": 90},
        {"startTime": "2030-05-06T08:00:00Z"},
    ]
    poll = make_poll(space, body)
    # Display order: 08:00, 09:00 (30), 09:00 (90), 09:30.
    bob = respond(poll, "no", "yes", "ifNeedBe", "yes", name="Bob")
    assert participant(api, poll, bob.pk)["availability"] == [
        span("2030-05-06T09:00:00.000Z", "2030-05-06T09:30:00.000Z"),
        span("2030-05-06T09:00:00.000Z", "2030-05-06T10:30:00.000Z", modifiers=["ifNeedBe"]),
        span("2030-05-06T09:30:00.000Z", "2030-05-06T10:00:00.000Z"),
    ]


def test_wall_clock_options_are_returned_as_utc_instants(api, space):
    poll = make_poll(space, time_poll_body("2030-07-01T09:00:00", duration=45, time_zone="America/New_York"))
    carl = respond(poll, "yes", name="Carl")
    assert participant(api, poll, carl.pk)["availability"] == [
        span("2030-07-01T13:00:00.000Z", "2030-07-01T13:45:00.000Z")
    ]


@pytest.mark.parametrize(
    "vote, spans",
    [
        ("yes", [span("2030-01-01T00:00:00.000Z", "2030-01-02T00:00:00.000Z", True)]),
        ("ifNeedBe", [span("2030-01-01T00:00:00.000Z", "2030-01-02T00:00:00.000Z", True, ["ifNeedBe"])]),
        ("no", []),
        (None, []),
        # A type of older data whose meaning the service does not know: no span, since
        # nothing says the participant can make it (see docs/lifecycle.md).
        ("maybeLater", []),
    ],
)
def test_each_vote_gives_its_span_or_none(api, space, vote, spans):
    poll = make_poll(space, date_poll_body("2030-01-01"))
    dora = respond(poll, vote if vote in ("yes", "ifNeedBe", "no") else None, name="Dora")
    if vote == "maybeLater":
        stored_vote(dora, option_ids(poll)[0], vote)
    assert participant(api, poll, dora.pk)["availability"] == spans
    assert [p["id"] for p in participants(api, poll)] == [dora.pk]  # listed whatever the vote


def test_participants_are_listed_oldest_first_then_by_id(api, space):
    poll = make_poll(space, date_poll_body("2030-01-01"))
    with time_machine.travel(datetime(2026, 5, 1, 12, 0, tzinfo=UTC), tick=False):
        late = respond(poll, "yes", name="Late")
    with time_machine.travel(datetime(2026, 4, 1, 12, 0, tzinfo=UTC), tick=False):
        early = [respond(poll, "no", name=f"Early {n}") for n in range(3)]  # same createdAt
    listed = participants(api, poll)
    assert [p["id"] for p in listed] == sorted(p.pk for p in early) + [late.pk]
    assert listed[-1]["createdAt"] == "2026-05-01T12:00:00.000Z"
    assert {p["createdAt"] for p in listed[:3]} == {"2026-04-01T12:00:00.000Z"}


@pytest.mark.parametrize(
    "at, text",
    [
        (datetime(2026, 5, 1, 12, 0, tzinfo=UTC), "2026-05-01T12:00:00.000Z"),  # no microseconds stored
        (datetime(2026, 5, 1, 12, 0, 7, 123999, tzinfo=UTC), "2026-05-01T12:00:07.123Z"),  # cut, not rounded
        (datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "2026-12-31T23:59:59.999Z"),
        (datetime(2026, 1, 2, 3, 4, 5, 1000, tzinfo=UTC), "2026-01-02T03:04:05.001Z"),
    ],
)
def test_created_at_in_the_list_is_the_instant_the_participant_shows(api, space, at, text):
    """The list's `createdAt` and the single participant's: the same text."""
    poll = make_poll(space, date_poll_body("2030-01-01"))
    with time_machine.travel(at, tick=False):
        ann = respond(poll, "yes", name="Ann")
    assert [p["createdAt"] for p in participants(api, poll)] == [text]
    assert participant(api, poll, ann.pk)["createdAt"] == text


def test_an_empty_poll_has_an_empty_list(api, space):
    assert participants(api, make_poll(space)) == []


def test_poll_not_found_comes_before_participant_not_found(api, space, make_space):
    poll = make_poll(space)
    other_poll = make_poll(space)
    ann = respond(poll, "yes")
    stranger = respond(other_poll, "yes", name="Stranger")
    foreign_space, _ = make_space()
    foreign_poll = make_poll(foreign_space)
    foreigner = respond(foreign_poll, "yes", name="Foreigner")

    for poll_id in ("NoSuchPoll12", foreign_poll.pk, "bad id!"):
        assert error_code(api.get(f"/v1/polls/{poll_id}/participants/{ann.pk}")) == "POLL_NOT_FOUND"
        assert error_code(api.get(f"/v1/polls/{poll_id}/participants")) == "POLL_NOT_FOUND"
    for participant_id in ("nosuchparticipant000000", stranger.pk, foreigner.pk):
        assert error_code(api.get(f"/v1/polls/{poll.pk}/participants/{participant_id}")) == "PARTICIPANT_NOT_FOUND"
    assert [p["id"] for p in participants(api, poll)] == [ann.pk]  # nobody of other polls

    services.delete_response(participant=ann)
    assert error_code(api.get(f"/v1/polls/{poll.pk}/participants/{ann.pk}")) == "PARTICIPANT_NOT_FOUND"
    services.delete_poll(poll=other_poll)
    assert error_code(api.get(f"/v1/polls/{other_poll.pk}/participants/{stranger.pk}")) == "POLL_NOT_FOUND"
    assert error_code(api.get(f"/v1/polls/{other_poll.pk}/participants")) == "POLL_NOT_FOUND"


def test_a_participant_id_that_cannot_be_one_needs_no_query(api, space, request_overhead, django_assert_num_queries):
    poll = make_poll(space)
    with django_assert_num_queries(request_overhead + 1):  # the poll only
        response = api.get(f"/v1/polls/{poll.pk}/participants/NOT-AN-ID")
    assert error_code(response) == "PARTICIPANT_NOT_FOUND"


@pytest.mark.parametrize("count", [1, 30])
def test_constant_queries_however_many_participants(api, space, request_overhead, django_assert_num_queries, count):
    poll = make_poll(space, date_poll_body(*(f"2030-01-{day:02d}" for day in range(1, 6))))
    for n in range(count):
        respond(poll, "yes", "ifNeedBe", "no", None, "yes", name=f"P{n}")
    # The poll, its options and its participants with their answers.
    with django_assert_num_queries(request_overhead + 3):
        listed = participants(api, poll)
    assert len(listed) == count
    assert all(len(p["availability"]) == 3 for p in listed)
    with django_assert_num_queries(request_overhead + 4):  # ... the participant, their votes
        assert participant(api, poll, listed[-1]["id"])["availability"] == listed[-1]["availability"]


def test_changes_show_at_once(api, space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    eve = respond(poll, "yes", "no", name="Eve")
    first, second = option_ids(poll)
    services.update_response(participant=eve, name="Eve B.", email="eve@example.com", votes={first: None, second: "yes"})
    data = participant(api, poll, eve.pk)
    assert (data["name"], data["email"]) == ("Eve B.", "eve@example.com")
    assert data["availability"] == [span("2030-01-02T00:00:00.000Z", "2030-01-03T00:00:00.000Z", True)]
    assert Participant.objects.filter(poll=poll).count() == 1


def test_answers_naming_an_option_no_longer_there_still_list(api, space):
    """`Participant.answers` written behind the services' back (until `manage.py polls
    recount`): the list shows the options that exist, never an error."""
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    first, second = option_ids(poll)
    ann = respond(poll, "yes", "ifNeedBe", name="Ann")
    # Out of order, naming options that are not the poll's (polls.answers): the second's
    # ifNeedBe and the first's yes remain.
    # `first` with its last character changed (never `first` itself: ids are random).
    near = first[:-1] + ("y" if first.endswith("x") else "x")
    Participant.objects.filter(pk=ann.pk).update(answers=f"gone,{second}+,{near},gone+,{first}")
    listed = participants(api, poll)
    assert [p["availability"] for p in listed] == [participant(api, poll, ann.pk)["availability"]]
    assert len(listed[0]["availability"]) == 2


def test_the_list_follows_options_added_before_others_rescheduled_and_removed(api, space):
    """Answers name options by id (polls.answers): no change of options writes them again,
    and the list always agrees with each participant's own answer (read from the votes)."""
    poll = make_poll(space, date_poll_body("2030-01-02", "2030-01-04", "2030-01-06"))
    first, second, third = option_ids(poll)
    ann = respond(poll, "yes", "ifNeedBe", "no", name="Ann")
    bob = respond(poll, None, "yes", "ifNeedBe", name="Bob")

    def listed() -> list[list[str]]:
        data = participants(api, poll)
        assert [p["availability"] for p in data] == [participant(api, poll, pk)["availability"] for pk in (ann.pk, bob.pk)]
        assert services.recount_tallies(poll=poll) == 0
        return [[s["start"][:10] + ("?" if s["modifiers"] else "") for s in p["availability"]] for p in data]

    def options(*days: tuple[str | None, int]) -> None:
        services.update_poll(poll=poll, options=[{"date": date(2030, 1, day), **({"id": pk} if pk else {})}
                                                 for pk, day in days])

    assert listed() == [["2030-01-02", "2030-01-04?"], ["2030-01-04", "2030-01-06?"]]
    options((None, 1), (first, 2), (second, 4), (third, 6))  # one before every other
    assert listed() == [["2030-01-02", "2030-01-04?"], ["2030-01-04", "2030-01-06?"]]
    new = option_ids(poll)[0]
    services.update_response(participant=bob, votes={new: "yes"})
    assert listed() == [["2030-01-02", "2030-01-04?"], ["2030-01-01", "2030-01-04", "2030-01-06?"]]
    options((new, 1), (first, 8), (second, 4), (third, 6))  # the first moved past the others
    assert listed() == [["2030-01-04?", "2030-01-08"], ["2030-01-01", "2030-01-04", "2030-01-06?"]]
    options((new, 1), (first, 8), (third, 6))  # one removed
    assert listed() == [["2030-01-08"], ["2030-01-01", "2030-01-06?"]]
    # Nothing is written again (no UPDATE of the participants).
    with CaptureQueriesContext(connection) as queries:
        options((new, 1), (first, 8), (third, 6), (None, 9))
    assert [q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT")]  # the option, the event
    assert not [q["sql"] for q in queries.captured_queries if "polls_participant" in q["sql"]]
    assert listed() == [["2030-01-08"], ["2030-01-01", "2030-01-06?"]]


def test_a_poll_of_more_options_than_one_byte_names_lists_every_answer(api, space, settings):
    """Every answer of a poll of many options is listed."""
    settings.MAX_POLL_OPTIONS = 130
    days = [(date(2030, 1, 1) + timedelta(days=n)).isoformat() for n in range(130)]
    poll = make_poll(space, date_poll_body(*days))
    votes = [None] * 130
    votes[0], votes[103], votes[104], votes[129] = "yes", "ifNeedBe", "yes", "ifNeedBe"
    ann = respond(poll, *votes, name="Ann")
    listed = participants(api, poll)
    assert [p["availability"] for p in listed] == [participant(api, poll, ann.pk)["availability"]]
    assert [(s["start"][:10], s["modifiers"]) for s in listed[0]["availability"]] == [
        (days[0], []), (days[103], ["ifNeedBe"]), (days[104], []), (days[129], ["ifNeedBe"])]
