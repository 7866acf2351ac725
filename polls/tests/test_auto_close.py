"""Auto-close with a controlled clock: date, time, floating and reopened polls; once."""

import json
from datetime import UTC, date, datetime, timedelta

import time_machine
from django.core.management import call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tasks import run_job
from polls import services
from polls.models import Poll
from polls.services.creation import OptionValues
from polls.spans import option_span
from polls.tests.factories import date_poll_body, make_poll, option_ids, time_poll_body
from webhooks.models import Event


def at(*args):
    return time_machine.travel(datetime(*args, tzinfo=UTC), tick=False)


def sweep() -> list[str]:
    return services.close_past_polls()


def closes(poll) -> list[str]:
    return [e.data["reason"] for e in Event.objects.filter(poll_id=poll.pk, type="poll.closed").order_by("created_at")]


def status(poll) -> str:
    return Poll.objects.get(pk=poll.pk).status


def test_a_date_poll_closes_once_its_last_day_is_over_everywhere(space):
    poll = make_poll(space, date_poll_body("2030-01-12", "2030-01-10"))
    with at(2030, 1, 13, 11, 59, 59):  # 2030-01-12 is still going on somewhere (UTC-12)
        assert sweep() == []
    with at(2030, 1, 13, 12, 0, 0):
        assert sweep() == [poll.pk]
        closed_at = datetime.now(UTC)
    fresh = Poll.objects.get(pk=poll.pk)
    assert fresh.status == "closed" and fresh.updated_at == closed_at
    assert closes(poll) == ["auto"]
    with at(2030, 2, 1):
        assert sweep() == []  # once
    assert closes(poll) == ["auto"]


def test_a_time_poll_closes_when_its_last_option_has_ended(space):
    poll = make_poll(space, time_poll_body("2030-03-01T10:00:00Z", "2030-03-01T08:00:00Z", duration=60))
    with at(2030, 3, 1, 10, 59, 59):
        assert sweep() == []
    with at(2030, 3, 1, 11, 0, 0):
        assert sweep() == [poll.pk]
    assert closes(poll) == ["auto"]


def test_a_floating_time_poll_gets_twelve_hours_of_grace(space):
    poll = make_poll(space, time_poll_body("2030-03-01T10:00:00", duration=60, time_zone=None))
    with at(2030, 3, 1, 22, 59, 59):
        assert sweep() == []
    with at(2030, 3, 1, 23, 0, 0):
        assert sweep() == [poll.pk]
    assert status(poll) == "closed"


def test_a_poll_reopened_after_its_options_passed_stays_open_until_its_options_change(space):
    poll = make_poll(space, date_poll_body("2030-01-10"))
    with at(2030, 1, 20):
        assert sweep() == [poll.pk]
        services.reopen_poll(poll=poll)
    with at(2030, 2, 1):
        assert sweep() == []
    assert status(poll) == "open"
    with at(2030, 2, 1):  # a new future option: auto-close applies again, from its end
        services.update_poll(poll=poll, options=[
            {"id": option_ids(poll)[0], "date": date(2030, 1, 10)}, {"date": date(2030, 2, 5)}])
    with at(2030, 2, 6, 11, 59):
        assert sweep() == []
    with at(2030, 2, 6, 12, 0):
        assert sweep() == [poll.pk]
    assert closes(poll) == ["auto", "auto"]


def test_changing_the_options_of_a_reopened_poll_to_past_ones_closes_it_at_the_next_sweep(space):
    poll = make_poll(space, date_poll_body("2030-01-10"))
    with at(2030, 1, 20):
        sweep()
        services.reopen_poll(poll=poll)
        assert sweep() == []
        services.update_poll(poll=poll, options=[{"date": date(2030, 1, 11)}])
        assert sweep() == [poll.pk]


def test_a_poll_reopened_before_its_options_passed_closes_when_they_pass(space):
    poll = make_poll(space, date_poll_body("2030-01-10"))
    with at(2030, 1, 5):
        services.close_poll(poll=poll)
        services.reopen_poll(poll=poll)
    with at(2030, 1, 11, 12):
        assert sweep() == [poll.pk]
    assert closes(poll) == ["manual", "auto"]


def test_only_open_live_polls_are_closed(space):
    body = date_poll_body("2030-01-10")
    polls = {state: make_poll(space, body, status=state) for state in ("closed", "scheduled", "canceled")}
    deleted = make_poll(space, body)
    services.delete_poll(poll=deleted)
    recorded = Event.objects.count()
    with at(2030, 6, 1):
        assert sweep() == []
    assert {state: status(poll) for state, poll in polls.items()} == {s: s for s in polls}
    assert Poll.objects.get(pk=deleted.pk).status == "open"
    assert Event.objects.count() == recorded


def test_the_periodic_job_and_the_command_run_the_same_sweep(space, capsys):
    first = make_poll(space, date_poll_body("2030-01-10"))
    second = make_poll(space, date_poll_body("2030-01-20"))
    with at(2030, 1, 15):
        run_job("polls.close-past")  # as Celery beat or the embedded loop runs it
    assert (status(first), status(second)) == ("closed", "open")
    with at(2030, 1, 25):
        call_command("polls", "close-past", "--json")
    assert json.loads(capsys.readouterr().out) == {"closed": [second.pk]}
    assert closes(second) == ["auto"]


def test_past_at_is_set_when_the_poll_is_created(space):
    poll = make_poll(space, time_poll_body("2030-03-01T10:00:00", duration=30, time_zone="Europe/Berlin"))
    assert poll.past_at == datetime(2030, 3, 1, 9, 30, tzinfo=UTC)  # 10:00 CET is 09:00Z
    poll = make_poll(space, date_poll_body("2030-03-01"))
    assert poll.past_at == datetime(2030, 3, 1, tzinfo=UTC) + timedelta(days=1, hours=12)


_DAYS = st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31))
_STARTS = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC))
_OPTIONS = st.one_of(
    st.lists(_DAYS.map(lambda day: OptionValues(day, None, None)), max_size=12),
    st.lists(st.builds(OptionValues, st.none(), _STARTS, st.integers(5, 1440)), max_size=12),
)


@settings(max_examples=500, deadline=None)
@given(options=_OPTIONS, time_zone=st.sampled_from([None, "Europe/Berlin"]))
def test_past_at_is_the_end_of_the_option_that_ends_last(options, time_zone):
    """options_past_at looks at the latest day and the latest start per duration only: the
    same instant as the end of every option's span, grace included, taken at its latest."""
    kind = Poll.Kind.DATE if options and options[0].date else Poll.Kind.TIME
    floating = kind == Poll.Kind.TIME and not time_zone
    ends = [
        span.end + timedelta(hours=12) if span.all_day or floating else span.end
        for span in (option_span(*option) for option in options)
    ]
    assert services.options_past_at(kind=kind, time_zone=time_zone, options=options) == max(ends, default=None)
