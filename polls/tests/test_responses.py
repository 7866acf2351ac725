"""Responses: create, update and delete a participant through the services."""

import re

import pytest

from core.errors import ServiceError
from polls import services
from polls.models import Participant, Poll, Vote
from polls.tests.factories import date_poll_body, make_poll, option_ids, respond, stored_vote
from webhooks.models import Event


def events(poll, type=None):
    found = Event.objects.filter(poll_id=poll.pk).order_by("created_at", "id")
    return list(found.filter(type=type) if type else found)


def votes_of(participant) -> dict:
    return dict(Vote.objects.filter(participant=participant).values_list("option_id", "type"))


def assert_participant_event(poll, participant_id, type, count_before):
    recorded = events(poll)
    assert len(recorded) == count_before + 1
    event = recorded[-1]
    assert (event.type, event.participant_id, event.space_id) == (type, participant_id, poll.space_id)
    assert event.data == {"poll": {"id": poll.pk}, "participant": {"id": participant_id}}
    assert event.created_at == Poll.objects.get(pk=poll.pk).updated_at  # updatedAt follows responses


def test_a_response_is_stored_with_its_votes_and_recorded(space, api):
    poll = make_poll(space)
    first, second, third = option_ids(poll)
    before = len(events(poll))
    participant = services.create_response(
        poll=poll, name="  Ann ", email=" ann@example.com ", votes={first: "yes", second: "ifNeedBe", third: "no"}
    )
    assert (participant.name, participant.email) == ("Ann", "ann@example.com")
    assert votes_of(participant) == {first: "yes", second: "ifNeedBe", third: "no"}
    assert_participant_event(poll, participant.pk, "poll.participant.created", before)
    data = api.get(f"/v1/polls/{poll.pk}").body["data"]
    assert data["participantCount"] == 1
    assert data["updatedAt"] != poll.updated_at


@pytest.mark.parametrize("status", ["closed", "scheduled", "canceled"])
def test_only_open_polls_accept_new_responses(space, status):
    poll = make_poll(space, status=status)
    before = len(events(poll))
    with pytest.raises(ServiceError, match=f"is {status}: only an open poll accepts new responses"):
        respond(poll, "yes")
    assert not Participant.objects.exists() and len(events(poll)) == before


@pytest.mark.parametrize("fields, votes, message", [
    ({"name": " "}, {}, "name: 1-255 characters required"),
    ({"name": "x" * 256}, {}, "name: 1-255 characters required"),
    ({"email": "not-an-address"}, {}, "email: not a valid e-mail address"),
    ({}, {0: "maybe"}, "'maybe' (option"),
    ({}, {0: ""}, "is not a vote"),
    ({}, {"nosuchoption": "yes"}, "'nosuchoption' is not an option of poll"),
])
def test_bad_responses_are_refused_and_store_nothing(space, fields, votes, message):
    poll = make_poll(space)
    ids = option_ids(poll)
    before = len(events(poll))
    votes = {ids[key] if isinstance(key, int) else key: value for key, value in votes.items()}
    with pytest.raises(ServiceError, match=re.escape(message)):
        services.create_response(poll=poll, **{"name": "Ann", **fields}, votes=votes)
    assert not Participant.objects.exists() and not Vote.objects.exists()
    assert len(events(poll)) == before
    assert Poll.objects.get(pk=poll.pk).updated_at == poll.updated_at


def test_every_problem_is_named_at_once(space):
    poll = make_poll(space, require_email=True)
    with pytest.raises(ServiceError) as refused:
        services.create_response(poll=poll, name="", votes={option_ids(poll)[0]: "nope"})
    assert [part.split(":")[0] for part in str(refused.value).split("; ")] == ["name", "email", "votes"]


def test_votes_must_reference_options_of_that_poll(space):
    poll, other = make_poll(space), make_poll(space)
    with pytest.raises(ServiceError, match="is not an option of poll"):
        services.create_response(poll=poll, name="Ann", votes={option_ids(other)[0]: "yes"})
    assert not Participant.objects.exists()


def test_require_email_is_enforced(space):
    poll = make_poll(space, require_email=True)
    with pytest.raises(ServiceError, match="email: this poll requires an e-mail address"):
        respond(poll, "yes")
    participant = respond(poll, "yes", email="ann@example.com")
    with pytest.raises(ServiceError, match="requires an e-mail address"):
        services.update_response(participant=participant, email="")
    assert Participant.objects.get(pk=participant.pk).email == "ann@example.com"


def test_if_need_be_only_when_tentative_votes_are_allowed(space):
    poll = make_poll(space, allow_tentative_votes=False)
    with pytest.raises(ServiceError, match="the poll does not allow tentative votes"):
        respond(poll, "ifNeedBe")
    participant = respond(poll, "yes", "no")
    with pytest.raises(ServiceError, match="does not allow tentative votes"):
        services.update_response(participant=participant, votes={option_ids(poll)[0]: "ifNeedBe"})
    assert votes_of(participant) == dict(zip(option_ids(poll), ["yes", "no"]))


def test_update_changes_name_email_and_votes_and_records_once(space):
    poll = make_poll(space)
    first, second, third = option_ids(poll)
    participant = respond(poll, "yes", "no", None, name="Ann")
    before = len(events(poll))
    services.update_response(participant=participant, name="Ann B.", email="ann@example.com",
                             votes={first: None, second: "ifNeedBe", third: "yes"})
    stored = Participant.objects.get(pk=participant.pk)
    assert (stored.name, stored.email) == ("Ann B.", "ann@example.com")
    assert votes_of(participant) == {second: "ifNeedBe", third: "yes"}
    assert_participant_event(poll, participant.pk, "poll.participant.updated", before)
    assert stored.updated_at == Poll.objects.get(pk=poll.pk).updated_at

    services.update_response(participant=participant, email="")  # removes the address
    assert Participant.objects.get(pk=participant.pk).email is None


def test_an_update_that_changes_nothing_records_nothing(space):
    poll = make_poll(space)
    participant = respond(poll, "yes", name="Ann", email="ann@example.com")
    before, updated_at = len(events(poll)), Poll.objects.get(pk=poll.pk).updated_at
    services.update_response(participant=participant, name="Ann", email="ann@example.com",
                             votes={option_ids(poll)[0]: "yes", option_ids(poll)[1]: None})
    assert len(events(poll)) == before
    assert Poll.objects.get(pk=poll.pk).updated_at == updated_at


def test_older_vote_types_survive_an_update_that_does_not_touch_them(space):
    poll = make_poll(space)
    first, second, _ = option_ids(poll)
    participant = respond(poll, "yes", name="Ann")
    stored_vote(participant, second, "legacyMaybe")
    services.update_response(participant=participant, name="Anna", votes={first: "no", second: "legacyMaybe"})
    assert votes_of(participant) == {first: "no", second: "legacyMaybe"}
    with pytest.raises(ServiceError, match="'otherLegacy' .* is not a vote"):
        services.update_response(participant=participant, votes={second: "otherLegacy"})


def test_responses_of_a_closed_poll_can_still_be_corrected_and_removed(space):
    poll = make_poll(space)
    participant = respond(poll, "yes")
    services.close_poll(poll=poll)
    services.update_response(participant=participant, votes={option_ids(poll)[0]: "no"})
    assert votes_of(participant) == {option_ids(poll)[0]: "no"}
    services.delete_response(participant=participant)
    assert not Participant.objects.exists()


def test_delete_removes_the_response_and_records_it(space, api):
    poll = make_poll(space)
    participant, other = respond(poll, "yes"), respond(poll, "no", name="Bob")
    participant_id = participant.pk
    before = len(events(poll))
    services.delete_response(participant=participant)
    assert_participant_event(poll, participant_id, "poll.participant.deleted", before)
    assert not Vote.objects.filter(participant_id=participant_id).exists()
    assert api.get(f"/v1/polls/{poll.pk}").body["data"]["participantCount"] == 1
    with pytest.raises(ServiceError, match=f"participant {participant_id} does not exist"):
        services.delete_response(participant=Participant(pk=participant_id, poll=poll))
    assert len(events(poll)) == before + 1
    assert Participant.objects.get().pk == other.pk


def test_responses_of_a_deleted_poll_are_refused(space):
    poll = make_poll(space)
    participant = respond(poll, "yes")
    services.delete_poll(poll=poll)
    for action in (
        lambda: respond(poll, "yes"),
        lambda: services.update_response(participant=participant, name="X"),
        lambda: services.delete_response(participant=participant),
    ):
        with pytest.raises(ServiceError, match="does not exist or has been deleted"):
            action()
    assert Participant.objects.get().name == "Ann"


def test_date_poll_body_defaults(space):
    """The factories' poll: three dates, tentative votes on, e-mail optional."""
    poll = make_poll(space, date_poll_body("2030-01-01"))
    assert (poll.kind, poll.allow_tentative_votes, poll.require_email) == ("date", True, False)


def test_names_and_comments_with_control_characters_are_refused_by_the_services(space):
    """The rule holds for every caller (the back office, commands), not only the API and the pages."""
    poll = make_poll(space, disable_comments=False)
    with pytest.raises(ServiceError, match="name: must not contain control characters or line breaks"):
        services.create_response(poll=poll, name="Ann\u2028Bob", votes={})
    for name, text, message in [("Ann\nB", "Hi", "name: must not contain control characters or line breaks"),
                                ("Ann", "Hi\x1b[2J", "text: must not contain control characters other than line")]:
        with pytest.raises(ServiceError, match=re.escape(message)):
            services.add_comment(poll=poll, name=name, text=text)
    assert not Participant.objects.filter(poll=poll).exists() and not poll.comments.exists()
    assert services.add_comment(poll=poll, name="Ann", text="Hi\r\n\tthere").text == "Hi\r\n\tthere"
