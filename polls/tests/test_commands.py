"""`manage.py polls ...`: every action, with and without --json, and its refusals."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from polls.models import Participant, Poll, Vote
from polls.tests.factories import make_poll, option_ids, respond
from webhooks.models import Event


def polls(*args) -> str:
    out = StringIO()
    call_command("polls", *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def polls_json(*args):
    return json.loads(polls(*args, "--json"))


def refused(*args) -> str:
    with pytest.raises(CommandError) as error:
        polls(*args)
    return str(error.value)


def event_types(poll) -> list[str]:
    return list(Event.objects.filter(poll_id=poll.pk).order_by("created_at", "id").values_list("type", flat=True))


def test_close_reopen_schedule_cancel(space):
    poll = make_poll(space)
    first = option_ids(poll)[0]
    assert polls("close", poll.pk) == f"Poll {poll.pk} closed: open -> closed."
    assert polls("close", poll.pk) == f"Poll {poll.pk} was already closed; nothing changed."
    data = polls_json("reopen", poll.pk)
    assert (data["id"], data["status"], data["spaceId"]) == (poll.pk, "open", space.pk)
    data = polls_json("schedule", poll.pk, "--option", first)
    assert (data["status"], data["scheduledOptionId"]) == ("scheduled", first)
    assert polls("cancel", poll.pk) == f"Poll {poll.pk} canceled: scheduled -> canceled."
    assert event_types(poll) == ["poll.created", "poll.closed", "poll.reopened", "poll.scheduled", "poll.canceled"]


def test_refused_transitions_exit_with_the_reason(space):
    poll = make_poll(space)
    assert refused("cancel", poll.pk) == f"cannot cancel poll {poll.pk}: it is open (allowed only when scheduled)"
    assert "is not an option of poll" in refused("schedule", poll.pk, "--option", "nosuchoption")
    assert "--option" in refused("schedule", poll.pk)
    assert event_types(poll) == ["poll.created"]
    assert Poll.objects.get(pk=poll.pk).status == "open"


@pytest.mark.parametrize("action", ["close", "reopen", "cancel", "delete"])
def test_unknown_poll_ids(db, action):
    assert refused(action, "NoSuchPoll12") == "no poll with id 'NoSuchPoll12'"


def test_delete_and_delete_again(space, api):
    poll = make_poll(space)
    data = polls_json("delete", poll.pk)
    assert data["deletedAt"] is not None
    assert api.get(f"/v1/polls/{poll.pk}").status_code == 404
    assert "was already deleted" in polls("delete", poll.pk)
    assert event_types(poll) == ["poll.created", "poll.deleted"]
    assert refused("close", poll.pk) == f"no poll with id '{poll.pk}'"


def test_respond_prints_the_participant_id(space):
    poll = make_poll(space)
    first, second, third = option_ids(poll)
    participant_id = polls("respond", poll.pk, "--name", "Ann", "--vote", f"{first}=yes", "--vote", f"{second}=ifNeedBe")
    participant = Participant.objects.get(pk=participant_id)
    assert (participant.name, participant.email, participant.poll_id) == ("Ann", None, poll.pk)
    data = polls_json("respond", poll.pk, "--name", "Bob", "--email", "bob@example.com", "--vote", f"{third}=no")
    assert data["name"] == "Bob" and data["email"] == "bob@example.com" and data["votes"] == {third: "no"}
    assert event_types(poll).count("poll.participant.created") == 2


@pytest.mark.parametrize("vote, message", [
    ("nosign", "--vote: expected OPTION_ID=yes|ifNeedBe|no, got 'nosign'"),
    ("=yes", "--vote: expected OPTION_ID=yes|ifNeedBe|no"),
    ("{first}=", "--vote: expected OPTION_ID=yes|ifNeedBe|no"),
    ("{first}=maybe", "votes: 'maybe' (option {first}) is not a vote (use yes, ifNeedBe or no)"),
    ("{first}=YES", "is not a vote"),
    ("nosuchoption=yes", "votes: 'nosuchoption' is not an option of poll"),
])
def test_bad_votes_are_refused(space, vote, message):
    poll = make_poll(space)
    first = option_ids(poll)[0]
    assert message.format(first=first) in refused("respond", poll.pk, "--name", "Ann", "--vote", vote.format(first=first))
    assert not Participant.objects.exists()


def test_respond_refusals(space):
    poll = make_poll(space, require_email=True)
    first = option_ids(poll)[0]
    assert "requires an e-mail address" in refused("respond", poll.pk, "--name", "Ann", "--vote", f"{first}=yes")
    assert "given more than once" in refused(
        "respond", poll.pk, "--name", "Ann", "--email", "a@example.com", "--vote", f"{first}=yes", "--vote", f"{first}=no")
    assert "--vote" in refused("respond", poll.pk, "--name", "Ann")
    assert refused("respond", "NoSuchPoll12", "--name", "Ann", "--vote", "x=yes") == "no poll with id 'NoSuchPoll12'"
    polls("close", poll.pk)
    assert "only an open poll accepts new responses" in refused(
        "respond", poll.pk, "--name", "Ann", "--email", "a@example.com", "--vote", f"{first}=yes")
    assert not Participant.objects.exists()


def test_update_response(space):
    poll = make_poll(space)
    first, second, _ = option_ids(poll)
    participant = respond(poll, "yes", "no", name="Ann")
    data = polls_json("update-response", participant.pk, "--name", "Anna", "--email", "anna@example.com",
                      "--vote", f"{second}=yes")
    assert (data["name"], data["email"], data["votes"]) == ("Anna", "anna@example.com", {first: "yes", second: "yes"})
    assert polls("update-response", participant.pk, "--name", "Anna") == f"Participant {participant.pk}: nothing to change."
    assert polls("update-response", participant.pk, "--email", "") == f"Participant {participant.pk} updated."
    assert Participant.objects.get(pk=participant.pk).email is None
    assert event_types(poll).count("poll.participant.updated") == 2
    assert refused("update-response", "nosuchparticipant", "--name", "X") == "no participant with id 'nosuchparticipant'"
    assert "is not a vote" in refused("update-response", participant.pk, "--vote", f"{first}=perhaps")
    assert dict(Vote.objects.filter(participant=participant).values_list("option_id", "type")) == {
        first: "yes", second: "yes"}


def test_remove_response(space):
    poll = make_poll(space)
    participant = respond(poll, "yes")
    data = polls_json("remove-response", participant.pk)
    assert (data["id"], data["deleted"]) == (participant.pk, True)
    assert not Participant.objects.exists()
    assert refused("remove-response", participant.pk) == f"no participant with id '{participant.pk}'"
    assert event_types(poll)[-1] == "poll.participant.deleted"


def test_purge_deleted_with_nothing_to_purge(space):
    make_poll(space)
    assert polls_json("purge-deleted") == {"purged": []}
    assert polls("close-past") == "Closed 0 poll(s) automatically."
