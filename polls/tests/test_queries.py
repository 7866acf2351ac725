"""The hand-written poll lookup (polls.queries) gives what the ORM gives."""

import pytest
from django.utils import timezone

from polls import queries, selectors
from polls.models import Poll
from polls.tests.factories import date_poll_body, make_poll, respond, time_poll_body


def columns(instance) -> dict:
    return {name: value for name, value in vars(instance).items() if not name.startswith("_")}


@pytest.mark.parametrize("body", [date_poll_body("2030-01-03", "2030-01-01", "2030-01-02"), time_poll_body("2030-01-02T10:00:00Z", "2030-01-01T09:30:00+01:00", "2030-01-01T12:00:00Z")])
def test_the_poll_with_organizer_count_and_options(space, django_assert_num_queries, body):
    poll = make_poll(space, body)
    respond(poll, *[None] * poll.options.count(), name="Ann")
    respond(poll, name="Bob")
    expected = selectors.live_polls(space).filter(pk=poll.pk).first()
    with django_assert_num_queries(2):
        found = queries.live_poll(space.pk, poll.pk)
        assert columns(found) == columns(expected)
        assert found.participant_count == 2
        assert columns(found.organizer) == columns(expected.organizer)
        assert [columns(o) for o in found.options.all()] == [columns(o) for o in expected.options.all()]
        assert all(option.poll is found for option in found.options.all())


def test_deleted_polls_and_other_spaces_polls_are_not_found(space, make_space):
    poll = make_poll(space)
    other, _ = make_space()
    assert queries.live_poll(other.pk, poll.pk) is None
    Poll.objects.filter(pk=poll.pk).update(deleted_at=timezone.now())
    assert queries.live_poll(space.pk, poll.pk) is None


def test_a_pages_options_in_one_query(space, django_assert_num_queries):
    polls = [make_poll(space, date_poll_body(*days)) for days in (["2030-01-02", "2030-01-01"], ["2030-02-01"])]
    polls.append(make_poll(space, time_poll_body("2030-01-02T10:00:00Z", "2030-01-01T12:00:00Z")))
    expected = {poll.pk: [columns(o) for o in poll.options.all()] for poll in selectors.live_polls(space)}
    page = list(selectors.live_polls(space).prefetch_related(None))
    with django_assert_num_queries(1):
        queries.attach_options(page)
        assert {poll.pk: [columns(o) for o in poll.options.all()] for poll in page} == expected
    queries.attach_options([])  # no poll: no query
