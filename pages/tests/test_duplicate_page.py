"""“Duplicate this poll” on the organizer page: a new poll in the same space, `poll.created`,
and the organizer lands signed in on its page."""

import pytest
from django.test import Client

from pages.tests.conftest import act, answer, poll_row
from polls.models import Poll
from webhooks.models import Event

pytestmark = pytest.mark.django_db


def test_duplicate_opens_the_new_polls_page_signed_in(signed_in, api):
    client, poll = signed_in
    answer(Client(), poll, {poll["options"][0]["id"]: "yes"}, name="Ada")
    response = act(client, poll, action="duplicate", title="Team lunch, again")
    assert response.status_code == 302
    copy_id = response["Location"].split("/poll/", 1)[1].split("?", 1)[0]
    assert copy_id != poll["id"] and response["Location"].endswith("?done=duplicated")
    page = client.get(response["Location"]).content.decode()
    assert "Signed in as" in page and "This is the new poll" in page and "Team lunch, again" in page
    copy = api.get(f"/v1/polls/{copy_id}").body["data"]
    assert copy["title"] == "Team lunch, again" and copy["participantCount"] == 0
    assert [o["date"] for o in copy["options"]] == [o["date"] for o in poll["options"]]
    assert {k: v for k, v in copy.items() if k not in ("id", "title", "options", "inviteUrl", "adminUrl", "createdAt",
                                                     "updatedAt")} == {
        k: v for k, v in poll.items() if k not in ("id", "title", "options", "inviteUrl", "adminUrl", "createdAt",
                                                    "updatedAt")} | {"participantCount": 0}
    assert list(Event.objects.filter(poll_id=copy_id).values_list("type", flat=True)) == ["poll.created"]
    assert poll_row(poll).participant_count == 1  # the original is untouched


def test_a_bad_title_is_refused_and_nothing_is_made(signed_in):
    client, poll = signed_in
    before = Poll.objects.count()
    response = act(client, poll, action="duplicate", title="")
    assert response.status_code == 409 and "title: required" in response.content.decode()
    assert Poll.objects.count() == before
    assert Client().post(f"/poll/{poll['id']}/act", {"action": "duplicate"}).status_code == 403
