"""`duplicate_poll`: a new poll in the same space with the same details, settings, time zone
and options, none of the participants or comments (`poll.created`)."""

import pytest

from core.errors import ServiceError
from polls import services
from polls.models import Comment, Option, Poll
from polls.tests.factories import make_poll, respond, time_poll_body
from spaces import services as space_services
from spaces.models import Membership
from webhooks.models import Event

pytestmark = pytest.mark.django_db

COPIED = ("space_id", "organizer_id", "title", "description", "location", "conferencing", "time_zone", "kind",
          "require_email", "hide_participants", "hide_scores", "disable_comments", "allow_tentative_votes")


def spans(poll) -> list[tuple]:
    return list(Option.objects.filter(poll=poll).values_list("date", "start_time", "duration"))


@pytest.mark.parametrize("body", [
    time_poll_body("2030-03-01T10:00:00", "2030-03-01T08:00:00", duration=45, description="Bring notes",
                   location="Room 4", requireEmail=True, hideScores=True, disableComments=False,
                   allowTentativeVotes=False),
    time_poll_body("2030-03-01T10:00:00", time_zone=None),  # floating times
    None,  # a date poll
], ids=["time", "floating", "date"])
def test_a_copy_has_the_details_settings_and_options_and_nothing_else(space, body):
    poll = make_poll(space, body)
    services.update_poll(poll=poll, details={"conferencing": {"provider": "custom", "label": "Jitsi",
                                                              "uri": "https://meet.example.com/x"}})
    poll = Poll.objects.get(pk=poll.pk)
    respond(poll, "yes", name="Ann", email="ann@example.com")
    if not poll.disable_comments:
        services.add_comment(poll=poll, name="Ann", text="Hi")
    copy, options = services.duplicate_poll(poll=poll)
    copy = Poll.objects.get(pk=copy.pk)
    assert copy.pk != poll.pk
    assert [getattr(copy, name) for name in COPIED] == [getattr(poll, name) for name in COPIED]
    assert spans(copy) == spans(poll) and [o.pk for o in options] == list(copy.options.values_list("pk", flat=True))
    assert (copy.participant_count, copy.participants.count(), Comment.objects.filter(poll=copy).count()) == (0, 0, 0)
    assert (copy.status, copy.past_at) == (Poll.Status.OPEN, poll.past_at)
    assert list(Event.objects.filter(poll_id=copy.pk).values_list("type", flat=True)) == ["poll.created"]


def test_a_new_title_and_the_owner_when_the_organizer_left(space):
    space_services.add_member(space=space, email="colleague@example.com", name="Colleague")
    poll = make_poll(space, time_poll_body("2030-03-01T10:00:00", organizer={"email": "colleague@example.com"}))
    assert poll.organizer.email == "colleague@example.com"
    Membership.objects.filter(space=space, user__email="colleague@example.com").delete()
    copy, _ = services.duplicate_poll(poll=poll, title="  Second round ")
    assert (copy.title, copy.organizer_id) == ("Second round", space.owner_id)
    with pytest.raises(ServiceError, match="title: required"):
        services.duplicate_poll(poll=poll, title=" ")
