"""The lifecycle services: every row of the table, every refused transition, repeats, one
event per change with the right data, soft delete, restore and purge."""

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.errors import ServiceError
from core.tasks import run_job
from polls import services
from polls.models import Option, Participant, Poll, Vote
from polls.tests.factories import date_poll_body, make_poll, option_ids, respond, time_poll_body
from webhooks.models import Event

ALL_STATUSES = ["open", "closed", "scheduled", "canceled"]


def events(poll) -> list[Event]:
    return list(Event.objects.filter(poll_id=poll.pk).order_by("created_at", "id"))


def setup_poll(space, status: str, body=None) -> Poll:
    """A poll in `status` (a scheduled or canceled one at its first option), with its
    creation event already recorded."""
    poll = make_poll(space, body)
    if status in ("scheduled", "canceled"):
        Poll.objects.filter(pk=poll.pk).update(status=status, scheduled_option_id=option_ids(poll)[0])
    else:
        Poll.objects.filter(pk=poll.pk).update(status=status)
    return Poll.objects.get(pk=poll.pk)


def run(action: str, poll: Poll):
    if action == "schedule":
        return services.schedule_poll(poll=poll, option_id=option_ids(poll)[0])
    return getattr(services, f"{action}_poll")(poll=poll)


def assert_one_new_event(poll, before: int, type: str, extra: dict) -> Event:
    recorded = events(poll)
    assert len(recorded) == before + 1
    event = recorded[-1]
    assert (event.type, event.space_id, event.poll_id, event.participant_id) == (type, poll.space_id, poll.pk, None)
    assert event.data == {"poll": {"id": poll.pk}, **extra}
    fresh = Poll.objects.get(pk=poll.pk)
    assert event.created_at == fresh.updated_at  # createdAt is the time of the change
    assert re.fullmatch(r"[a-z0-9]{20,30}", event.id)
    body = json.loads(event.body)
    assert body == {"version": "2026-09-20", "id": event.id, "type": type,
                    "createdAt": body["createdAt"], "data": event.data}
    return event


ROWS = [
    ("close", "open", "closed", "poll.closed", {"reason": "manual"}),
    ("reopen", "closed", "open", "poll.reopened", {}),
    ("reopen", "scheduled", "open", "poll.reopened", {}),
    ("reopen", "canceled", "open", "poll.reopened", {}),
    ("schedule", "open", "scheduled", "poll.scheduled",
     {"event": {"start": "2030-01-01T00:00:00.000Z", "end": "2030-01-02T00:00:00.000Z", "allDay": True}}),
    ("schedule", "closed", "scheduled", "poll.scheduled",
     {"event": {"start": "2030-01-01T00:00:00.000Z", "end": "2030-01-02T00:00:00.000Z", "allDay": True}}),
    ("cancel", "scheduled", "canceled", "poll.canceled", {}),
]


@pytest.mark.parametrize("action, start, end, type, extra", ROWS)
def test_each_row_of_the_lifecycle_table(space, action, start, end, type, extra):
    poll = setup_poll(space, start)
    before, updated_at = len(events(poll)), poll.updated_at
    result = run(action, poll)
    assert result.status == end
    fresh = Poll.objects.get(pk=poll.pk)
    assert fresh.status == end and fresh.updated_at > updated_at
    assert_one_new_event(poll, before, type, extra)
    if end == "open":
        assert fresh.scheduled_option_id is None
    if end == "scheduled":
        assert fresh.scheduled_option_id == option_ids(poll)[0]


@pytest.mark.parametrize("start", ALL_STATUSES)
def test_delete_from_any_state(space, api, start):
    poll = setup_poll(space, start)
    before = len(events(poll))
    services.delete_poll(poll=poll)
    assert Poll.objects.get(pk=poll.pk).deleted_at is not None
    assert_one_new_event(poll, before, "poll.deleted", {})
    assert api.get(f"/v1/polls/{poll.pk}").body["error"]["code"] == "POLL_NOT_FOUND"


REFUSED = [
    ("close", "scheduled"), ("close", "canceled"),
    ("schedule", "canceled"),
    ("cancel", "open"), ("cancel", "closed"),
]


@pytest.mark.parametrize("action, start", REFUSED)
def test_forbidden_transitions_are_refused_and_change_nothing(space, action, start):
    poll = setup_poll(space, start)
    before = len(events(poll))
    with pytest.raises(ServiceError, match=f"cannot {action} poll {poll.pk}: it is {start}"):
        run(action, poll)
    fresh = Poll.objects.get(pk=poll.pk)
    assert (fresh.status, fresh.updated_at) == (start, poll.updated_at)
    assert len(events(poll)) == before


@pytest.mark.parametrize("action, start", [("close", "closed"), ("reopen", "open"), ("cancel", "canceled"),
                                           ("schedule", "scheduled"), ("delete", "deleted"), ("restore", "open")])
def test_repeating_an_action_whose_target_holds_emits_nothing(space, action, start):
    poll = setup_poll(space, "open" if start == "deleted" else start)
    if start == "deleted":
        services.delete_poll(poll=poll)
        poll = Poll.objects.get(pk=poll.pk)
    before = len(events(poll))
    run(action, poll)
    fresh = Poll.objects.get(pk=poll.pk)
    assert (fresh.status, fresh.updated_at, fresh.deleted_at) == (poll.status, poll.updated_at, poll.deleted_at)
    assert len(events(poll)) == before


def test_close_reopen_close_gives_three_events(space):
    poll = make_poll(space)
    services.close_poll(poll=poll)
    services.reopen_poll(poll=poll)
    services.close_poll(poll=poll)
    assert [(e.type, e.data.get("reason")) for e in events(poll)] == [
        ("poll.created", None), ("poll.closed", "manual"), ("poll.reopened", None), ("poll.closed", "manual"),
    ]


def test_schedule_refuses_a_different_option_while_scheduled_and_options_of_other_polls(space):
    poll = make_poll(space)
    other = make_poll(space)
    first, second, _ = option_ids(poll)
    with pytest.raises(ServiceError, match="is not an option of poll"):
        services.schedule_poll(poll=poll, option_id=option_ids(other)[0])
    services.schedule_poll(poll=poll, option_id=first)
    before = len(events(poll))
    with pytest.raises(ServiceError, match="already scheduled at another option"):
        services.schedule_poll(poll=poll, option_id=second)
    assert Poll.objects.get(pk=poll.pk).scheduled_option_id == first
    assert len(events(poll)) == before


def test_scheduling_a_time_option_carries_its_span(space):
    poll = make_poll(space, time_poll_body("2030-06-01T10:00:00Z", duration=90))
    before = len(events(poll))
    services.schedule_poll(poll=poll, option_id=option_ids(poll)[0])
    assert_one_new_event(poll, before, "poll.scheduled", {
        "event": {"start": "2030-06-01T10:00:00.000Z", "end": "2030-06-01T11:30:00.000Z", "allDay": False}
    })


@pytest.mark.parametrize("action", ["close", "reopen", "schedule", "cancel"])
def test_a_deleted_poll_is_refused(space, action):
    poll = make_poll(space)
    services.delete_poll(poll=poll)
    before = len(events(poll))
    with pytest.raises(ServiceError, match="does not exist or has been deleted"):
        run(action, poll)
    assert len(events(poll)) == before


def test_creating_and_deleting_through_the_api_records_one_event_each(api):
    response = api.post("/v1/polls", {"title": "Dinner", "kind": "date", "options": [{"date": "2030-01-01"}]})
    poll = Poll.objects.get(pk=response.body["data"]["id"])
    [created] = events(poll)
    assert (created.type, created.data, created.space_id) == ("poll.created", {"poll": {"id": poll.pk}}, poll.space_id)
    assert created.created_at == poll.created_at
    api.delete(f"/v1/polls/{poll.pk}")
    assert_one_new_event(poll, 1, "poll.deleted", {})
    assert api.delete(f"/v1/polls/{poll.pk}").status_code == 404
    assert len(events(poll)) == 2


def test_a_refused_creation_records_nothing(api):
    response = api.post("/v1/polls", {"title": "badword", "kind": "date", "options": [{"date": "2030-01-01"}]})
    assert response.body["error"]["code"] == "INAPPROPRIATE_CONTENT"
    assert not Event.objects.exists()


def test_restore_within_the_purge_period(space, api):
    poll = make_poll(space)
    with time_machine.travel(datetime(2030, 1, 1, tzinfo=UTC), tick=False):
        services.delete_poll(poll=poll)
    with time_machine.travel(datetime(2030, 1, 30, 23, 59, tzinfo=UTC), tick=False):
        before = len(events(poll))
        services.restore_poll(poll=poll)
    assert Poll.objects.get(pk=poll.pk).deleted_at is None
    assert_one_new_event(poll, before, "poll.restored", {})
    assert api.get(f"/v1/polls/{poll.pk}").status_code == 200


def test_no_restore_once_the_purge_period_is_over(space):
    poll = make_poll(space)
    with time_machine.travel(datetime(2030, 1, 1, tzinfo=UTC), tick=False):
        services.delete_poll(poll=poll)
    before = len(events(poll))
    with time_machine.travel(datetime(2030, 1, 31, tzinfo=UTC), tick=False):
        with pytest.raises(ServiceError, match="more than 30 days ago"):
            services.restore_poll(poll=poll)
    assert Poll.objects.get(pk=poll.pk).deleted_at is not None
    assert len(events(poll)) == before


def test_the_purge_job_removes_polls_deleted_more_than_30_days_ago(space):
    old, recent, live = make_poll(space), make_poll(space), make_poll(space)
    respond(old, "yes", "no", "ifNeedBe")
    with time_machine.travel(datetime(2030, 1, 1, tzinfo=UTC), tick=False):
        services.delete_poll(poll=old)
    with time_machine.travel(datetime(2030, 1, 2, tzinfo=UTC), tick=False):
        services.delete_poll(poll=recent)
    recorded = Event.objects.count()
    with time_machine.travel(datetime(2030, 1, 31, 12, tzinfo=UTC), tick=False):
        run_job("polls.purge-deleted")  # as Celery beat or the embedded loop runs it
    assert set(Poll.objects.values_list("pk", flat=True)) == {recent.pk, live.pk}
    assert not Option.objects.filter(poll_id=old.pk).exists()
    assert not Participant.objects.filter(poll_id=old.pk).exists()
    assert not Vote.objects.filter(option__poll_id=old.pk).exists()
    assert Event.objects.count() == recorded  # purging records nothing


def test_purge_command(space):
    poll = make_poll(space)
    services.delete_poll(poll=poll)
    Poll.objects.filter(pk=poll.pk).update(deleted_at=datetime(2020, 1, 1, tzinfo=UTC))
    call_command("polls", "purge-deleted")
    assert not Poll.objects.filter(pk=poll.pk).exists()


# --- Editing details, settings and options -----------------------------------------------------


def test_editing_details_and_settings_records_one_poll_updated(space, api):
    poll = make_poll(space)
    before = len(events(poll))
    services.update_poll(poll=poll, details={
        "title": "  Team lunch ", "description": "", "location": "Canteen", "require_email": True,
        "conferencing": {"provider": "custom", "label": "Jitsi", "uri": "https://meet.example.com/x"},
    })
    assert_one_new_event(poll, before, "poll.updated", {})
    data = api.get(f"/v1/polls/{poll.pk}").body["data"]
    assert (data["title"], data["description"], data["location"], data["requireEmail"]) == (
        "Team lunch", None, "Canteen", True)
    assert data["conferencing"] == {"provider": "custom", "label": "Jitsi", "uri": "https://meet.example.com/x"}
    assert data["updatedAt"] == json.loads(events(poll)[-1].body)["createdAt"]


def test_an_edit_that_changes_nothing_records_nothing(space):
    poll = make_poll(space)
    before = len(events(poll))
    services.update_poll(poll=poll, details={"title": poll.title, "hide_scores": poll.hide_scores},
                         options=[{"id": pk, "date": o.date} for pk, o in ((o.pk, o) for o in poll.options.all())])
    assert Poll.objects.get(pk=poll.pk).updated_at == poll.updated_at
    assert len(events(poll)) == before


@pytest.mark.parametrize("details, message", [
    ({"title": "  "}, "title: required"),
    ({"title": "x" * 256}, "title: at most 255 characters"),
    ({"description": "x" * 1001}, "description: at most 1000 characters"),
    ({"hide_scores": "yes"}, "hide_scores: must be true or false"),
    ({"kind": "time"}, "kind: cannot be changed"),
    ({"conferencing": {"provider": "skype"}}, "conferencing: provider must be one of"),
    ({"conferencing": {"provider": "zoom", "uri": "https://x.example"}}, "conferencing: uri not allowed"),
    ({"conferencing": {"provider": "custom"}}, "conferencing: a custom provider needs a label"),
    ({"conferencing": {"provider": "custom", "label": "X", "uri": "ftp://x"}}, "conferencing: uri must be"),
])
def test_bad_details_are_refused_and_change_nothing(space, details, message):
    poll = make_poll(space)
    before = len(events(poll))
    with pytest.raises(ServiceError, match=re.escape(message)):
        services.update_poll(poll=poll, details={"location": "Changed", **details})
    fresh = Poll.objects.get(pk=poll.pk)
    assert (fresh.location, fresh.updated_at) == (None, poll.updated_at)
    assert len(events(poll)) == before


def test_replacing_options_keeps_changes_adds_and_removes_with_their_votes(space, api):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02", "2030-01-03"))
    first, second, third = option_ids(poll)
    respond(poll, "yes", "yes", "yes")
    before = len(events(poll))
    services.update_poll(poll=poll, options=[
        {"id": first, "date": datetime(2030, 2, 1).date()},  # moved, votes kept
        {"id": third, "date": datetime(2030, 1, 3).date()},  # unchanged
        {"date": datetime(2030, 3, 1).date()},  # new
    ])  # the second is removed
    assert_one_new_event(poll, before, "poll.updated", {})
    data = api.get(f"/v1/polls/{poll.pk}/results").body["data"]
    assert [(o["date"], o["votes"][0]["count"]) for o in data["options"]] == [
        ("2030-01-03", 1), ("2030-02-01", 1), ("2030-03-01", 0)]
    assert not Vote.objects.filter(option_id=second).exists()
    assert Poll.objects.get(pk=poll.pk).past_at == datetime(2030, 3, 2, 12, tzinfo=UTC)


def test_replacing_options_costs_the_same_queries_for_3_or_30_options(space):
    def queries_to_replace(count: int) -> int:
        days = [(datetime(2030, 1, 1) + timedelta(days=n)).date().isoformat() for n in range(3 * count)]
        poll = make_poll(space, date_poll_body(*days[: 2 * count]))
        ids = option_ids(poll)
        moved = [{"id": pk, "date": datetime(2031, 1, 1).date() + timedelta(days=n)} for n, pk in enumerate(ids[:count])]
        added = [{"date": datetime(2032, 1, 1).date() + timedelta(days=n)} for n in range(count)]
        with CaptureQueriesContext(connection) as queries:
            services.update_poll(poll=poll, options=moved + added)  # the other `count` are removed
        assert Option.objects.filter(poll=poll).count() == 2 * count
        return len(queries)

    assert queries_to_replace(3) == queries_to_replace(30)


@pytest.mark.parametrize("options, message", [
    ([], "needs at least one option"),
    ([{"date": datetime(2030, 1, 1).date()}] * 2, "2030-01-01 is listed twice"),
    ([{"start_time": datetime(2030, 1, 1, tzinfo=UTC), "duration": 30}], "a date poll's option is a date only"),
    ([{"id": "nosuchoption0000000000", "date": datetime(2030, 1, 1).date()}], "not an option of poll"),
    ([{"date": datetime(2030, 1, 1).date() + timedelta(days=n)} for n in range(101)], "at most 100 options; 101 given"),
])
def test_bad_options_are_refused_and_change_nothing(space, options, message):
    poll = make_poll(space)
    ids = option_ids(poll)
    with pytest.raises(ServiceError, match=re.escape(message)):
        services.update_poll(poll=poll, details={"title": "Changed"}, options=options)
    assert option_ids(poll) == ids
    assert Poll.objects.get(pk=poll.pk).title == poll.title


def test_time_options_need_an_aware_start_and_a_duration_in_range(space):
    poll = make_poll(space, time_poll_body("2030-06-01T10:00:00Z"))
    for option, message in [
        ({"start_time": datetime(2030, 1, 1, 9), "duration": 30}, "needs a start time with a time zone"),
        ({"start_time": datetime(2030, 1, 1, 9, tzinfo=UTC), "duration": 10}, "duration: 15-1440 minutes"),
        ({"date": datetime(2030, 1, 1).date()}, "needs a start time with a time zone"),
    ]:
        with pytest.raises(ServiceError, match=re.escape(message)):
            services.update_poll(poll=poll, options=[option])


def test_the_option_a_poll_is_scheduled_at_cannot_be_removed(space):
    poll = make_poll(space)
    first, second, third = option_ids(poll)
    services.schedule_poll(poll=poll, option_id=first)
    with pytest.raises(ServiceError, match="scheduled at cannot be removed"):
        services.update_poll(poll=poll, options=[{"id": second, "date": datetime(2030, 1, 2).date()}])
    assert option_ids(poll) == [first, second, third]
