"""Closed, scheduled and canceled polls on the invite page over HTTP: read-only, the
decided time and its .ics, and no .ics otherwise."""

import re

import pytest

from pages.tests.conftest import answer, poll_row
from pages.tests.test_invite import edit_token, events, text
from polls import services as poll_services

pytestmark = pytest.mark.django_db


def test_a_closed_poll_is_read_only(make_poll, client):
    poll = make_poll(disableComments=False)
    token = edit_token(answer(client, poll, {poll["options"][0]["id"]: "yes"}))
    poll_services.close_poll(poll=poll_row(poll))
    body = text(client.get(f"/invite/{poll['id']}"))
    assert "This poll is closed" in body and 'type="radio"' not in body and "<textarea" not in body
    for data in ({"name": "Bo"}, {"action": "update", "name": "Ada 2"}, {"action": "delete"}):
        assert client.post(f"/invite/{poll['id']}", data).status_code == 409
    assert client.post(f"/invite/{poll['id']}/edit/{token}", {"action": "delete"}).status_code == 409
    assert client.post(f"/invite/{poll['id']}/comments", {"name": "Bo", "text": "hi"}).status_code == 409
    assert events(poll)[-1] == "poll.closed" and poll_row(poll).participants.get().name == "Ada"


def test_a_scheduled_poll_shows_the_time_and_an_ics(make_poll, client):
    poll = make_poll(kind="time", timeZone="Europe/Berlin", duration=90, title="Kick-off, part 1; go",
                     location="Room 4", options=[{"startTime": "2030-06-03T09:00:00"}])
    poll_services.schedule_poll(poll=poll_row(poll), option_id=poll["options"][0]["id"])
    body = text(client.get(f"/invite/{poll['id']}"))
    assert "It’s decided" in body and "Monday 3 June 2030, 09:00–10:30" in body and 'type="radio"' not in body
    ics = client.get(f"/invite/{poll['id']}/event.ics")
    assert ics.status_code == 200 and ics["Content-Type"] == "text/calendar; charset=utf-8"
    assert ics["Content-Disposition"] == f'attachment; filename="{poll["id"]}.ics"'
    content = ics.content.decode()
    assert "DTSTART:20300603T070000Z\r\nDTEND:20300603T083000Z\r\n" in content
    assert "SUMMARY:Kick-off\\, part 1\\; go\r\n" in content and "LOCATION:Room 4\r\n" in content
    assert content.startswith("BEGIN:VCALENDAR\r\n") and content.endswith("END:VCALENDAR\r\n")


def test_a_scheduled_date_is_an_all_day_event(make_poll, client):
    poll = make_poll()
    poll_services.schedule_poll(poll=poll_row(poll), option_id=poll["options"][1]["id"])
    content = client.get(f"/invite/{poll['id']}/event.ics").content.decode()
    assert "DTSTART;VALUE=DATE:20300503\r\nDTEND;VALUE=DATE:20300504\r\n" in content



def test_the_ics_escapes_every_line_break_and_drops_control_characters(make_poll, client):
    """Values stored before the API refused control characters still make one content line each."""
    from polls.models import Poll

    poll = make_poll()
    poll_services.schedule_poll(poll=poll_row(poll), option_id=poll["options"][0]["id"])
    Poll.objects.filter(pk=poll["id"]).update(
        title="A\u2028B\u2029C\x85D\x0bE\x0cF", location="Room\x01 4\x1b\x7f\x9b",
        description="one\r\ntwo\rthree\nfour\tfive\x1csix")
    content = client.get(f"/invite/{poll['id']}/event.ics").content.decode()
    lines = content.split("\r\n")
    assert "SUMMARY:A\\nB\\nC\\nD\\nE\\nF" in lines and "LOCATION:Room 4" in lines
    assert "DESCRIPTION:one\\ntwo\\nthree\\nfour\tfive\\nsix" in lines
    assert not re.search("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]", content.replace("\r\n", ""))

def test_no_ics_unless_scheduled(make_poll, client):
    poll = make_poll()
    assert client.get(f"/invite/{poll['id']}/event.ics").status_code == 404
    poll_services.schedule_poll(poll=poll_row(poll), option_id=poll["options"][0]["id"])
    poll_services.cancel_poll(poll=poll_row(poll))
    assert client.get(f"/invite/{poll['id']}/event.ics").status_code == 404
    assert "called off" in text(client.get(f"/invite/{poll['id']}"))
