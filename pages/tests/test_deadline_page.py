"""The deadline on the pages: the organizer sets it in the poll's zone (UTC without one), the
invite page shows it, the sweep closes the poll at it, reopening clears it."""

from datetime import UTC, datetime

import pytest
import time_machine
from django.test import Client

from pages.tests.conftest import act, events, poll_row, sign_in
from polls import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def time_poll(make_poll, organizer_email, mailoutbox):
    poll = make_poll(kind="time", timeZone="Europe/Berlin", duration=60,
                     options=[{"startTime": "2031-06-02T09:00:00"}, {"startTime": "2031-06-02T10:00:00"}])
    client = Client(enforce_csrf_checks=True)
    sign_in(client, poll, organizer_email, mailoutbox)
    return client, poll


def test_set_in_the_polls_zone_shown_on_the_invite_page_and_closed_by_the_sweep(time_poll):
    client, poll = time_poll
    assert act(client, poll, action="deadline", closes_at="2031-05-30T18:00").status_code == 302
    assert poll_row(poll).closes_at == datetime(2031, 5, 30, 16, 0, tzinfo=UTC)  # CEST
    assert events(poll)[-1][0] == "poll.updated"
    manage = client.get(f"/poll/{poll['id']}").content.decode()
    assert "Closes automatically on <strong>Friday 30 May 2031, 18:00</strong> (Europe/Berlin)" in manage
    assert 'value="2031-05-30T18:00"' in manage
    invite = Client().get(f"/invite/{poll['id']}").content.decode()
    assert "Answers close on Friday 30 May 2031, 18:00 (Europe/Berlin)." in invite
    with time_machine.travel(datetime(2031, 5, 30, 16, 0, 30, tzinfo=UTC), tick=False):
        assert services.close_past_polls() == [poll["id"]]
    assert events(poll)[-1] == ("poll.closed", events(poll)[-1][1]) and events(poll)[-1][1]["reason"] == "auto"
    invite = Client().get(f"/invite/{poll['id']}").content.decode()
    assert "Answers close on" not in invite and "This poll is closed" in invite
    assert act(client, poll, action="reopen").status_code == 302
    assert poll_row(poll).closes_at is None


def test_a_date_poll_reads_it_in_utc_and_it_can_be_removed(signed_in):
    client, poll = signed_in
    assert act(client, poll, action="deadline", closes_at="2030-04-30T12:30").status_code == 302
    assert poll_row(poll).closes_at == datetime(2030, 4, 30, 12, 30, tzinfo=UTC)
    assert "(UTC)" in client.get(f"/poll/{poll['id']}").content.decode()
    response = act(client, poll, action="clear-deadline")
    assert response.status_code == 302 and response["Location"].endswith("done=deadline-cleared")
    assert poll_row(poll).closes_at is None


@pytest.mark.parametrize(("value", "message"), [
    ("", "Deadline: give a date and a time"), ("tomorrow", "Deadline: give a date and a time"),
    ("2031-05-30T18:00+02:00", "Deadline: give a date and a time"), ("2001-01-01T10:00", "must be in the future"),
])
def test_a_bad_deadline_is_refused_and_changes_nothing(signed_in, value, message):
    client, poll = signed_in
    before = len(events(poll))
    response = act(client, poll, action="deadline", closes_at=value)
    assert response.status_code == 409 and message in response.content.decode()
    assert poll_row(poll).closes_at is None and len(events(poll)) == before
