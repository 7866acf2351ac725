"""Changing the options on the organizer page: added in the poll's zone, removed with their
votes (tallies exact, other answers kept), one `poll.updated` per save, the API's parsers'
messages; participants who answered before are told on the invite page."""

from datetime import UTC, datetime

import pytest
from django.test import Client

from pages.tests.conftest import act, answer, events, poll_row, sign_in
from polls.models import Tally, Vote

pytestmark = pytest.mark.django_db


def results(api, poll: dict) -> list[tuple[str, list[int]]]:
    body = api.get(f"/v1/polls/{poll['id']}/results").body["data"]
    return [(o.get("date") or o["startTime"], [v["count"] for v in o["votes"]]) for o in body["options"]]


def test_add_and_remove_dates(signed_in, api):
    client, poll = signed_in
    first, second = (o["id"] for o in poll["options"])
    guest = Client()
    answer(guest, poll, {first: "yes", second: "ifNeedBe"}, name="Ada")
    answer(Client(), poll, {first: "no"}, name="Bob")
    before = len(events(poll))
    response = act(client, poll, action="options", remove=[first], add_date=["2030-05-01", "2030-05-03", "2030-05-01", ""])
    assert response.status_code == 302 and response["Location"].endswith("done=options")
    assert [kind for kind, _ in events(poll)[before:]] == ["poll.updated"]  # once per save
    assert results(api, poll) == [("2030-05-01", [0, 0, 0]), ("2030-05-03", [0, 1, 0])]
    assert not Vote.objects.filter(option_id=first).exists() and not Tally.objects.filter(option_id=first).exists()
    assert api.get(f"/v1/polls/{poll['id']}").body["data"]["participantCount"] == 2  # both stay
    invite = guest.get(f"/invite/{poll['id']}").content.decode()
    assert "The options changed since your answer." in invite
    assert "The options changed" not in Client().get(f"/invite/{poll['id']}").content.decode()  # not answered
    assert act(client, poll, action="options").status_code == 302  # nothing changed: no event
    assert len(events(poll)) == before + 1


def test_times_in_the_polls_zone(make_poll, organizer_email, mailoutbox, api):
    poll = make_poll(kind="time", timeZone="Europe/Berlin", duration=45, options=[{"startTime": "2031-06-02T09:00:00"}])
    client = Client(enforce_csrf_checks=True)
    sign_in(client, poll, organizer_email, mailoutbox)
    page = client.get(f"/poll/{poll['id']}").content.decode()
    assert 'name="add_duration" min="15" max="1440" step="5" value="45"' in page and "Add times (Europe/Berlin)" in page
    response = act(client, poll, action="options", add_day=["2031-06-03", ""], add_time=["14:30", ""],
                   add_duration=["90", "45"])
    assert response.status_code == 302
    options = [(o.start_time, o.duration) for o in poll_row(poll).options.all()]
    assert options == [(datetime(2031, 6, 2, 7, 0, tzinfo=UTC), 45), (datetime(2031, 6, 3, 12, 30, tzinfo=UTC), 90)]


@pytest.mark.parametrize(("data", "message"), [
    ({"add_date": ["2030-02-30"]}, "New option 2030-02-30: not a date (YYYY-MM-DD)"),
    ({"add_date": ["soon"]}, "not a date (YYYY-MM-DD)"),
    ({"remove": ["nope"]}, "options: nope not an option of poll"),
    ({"remove": "both"}, "A poll needs at least one option."),
])
def test_bad_changes_are_refused_and_change_nothing(signed_in, data, message):
    client, poll = signed_in
    if data.get("remove") == "both":
        data = {"remove": [o["id"] for o in poll["options"]]}
    before = (len(events(poll)), list(poll_row(poll).options.values_list("pk", flat=True)))
    response = act(client, poll, action="options", **data)
    assert response.status_code == 409 and message in response.content.decode()
    assert (len(events(poll)), list(poll_row(poll).options.values_list("pk", flat=True))) == before


def test_the_limit_and_the_durations_of_the_api(signed_in, settings, make_poll, organizer_email, mailoutbox):
    client, poll = signed_in
    settings.MAX_POLL_OPTIONS = 3
    response = act(client, poll, action="options", add_date=["2030-06-01", "2030-06-02"])
    assert response.status_code == 409 and "at most 3 options; these changes would make 4" in response.content.decode()
    timed = make_poll(kind="time", duration=30, options=[{"startTime": "2031-06-02T09:00:00Z"}])
    sign_in(client, timed, organizer_email, mailoutbox)
    response = act(client, timed, action="options", add_day=["2031-06-03"], add_time=["25:00"], add_duration=["30"])
    assert response.status_code == 409 and "not a time (HH:MM, 00:00 to 23:59)" in response.content.decode()
    response = act(client, timed, action="options", add_day=["2031-06-03"], add_time=["10:00"], add_duration=["5"])
    assert response.status_code == 409 and "A new option lasts 15 to 1440 minutes." in response.content.decode()


def test_the_scheduled_option_stays(signed_in):
    client, poll = signed_in
    first = poll["options"][0]["id"]
    act(client, poll, action="schedule", option=first, confirmed="yes")
    response = act(client, poll, action="options", remove=[first])
    assert response.status_code == 409 and "cannot be removed" in response.content.decode()
