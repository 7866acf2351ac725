"""Events record when a change happened: a change that waited for the poll's lock is stamped after the wait."""

from contextlib import contextmanager
from datetime import timedelta

import time_machine
from django.db import connection
from django.utils import timezone

from polls import services
from polls.models import Poll
from polls.tests.factories import make_poll
from webhooks.models import Event


@contextmanager
def statements_on_the_poll_wait(seconds: float):
    """Every SQL statement that reads or writes the polls table takes `seconds` on the
    (stopped) clock, as one does while another transaction holds the poll's row.
    Yields the list of instants at which such statements returned."""
    returned = []
    with time_machine.travel(timezone.now(), tick=False) as clock:

        def wait_then_run(execute, sql, params, many, context):
            result = execute(sql, params, many, context)
            if '"polls_poll"' in sql:
                clock.shift(timedelta(seconds=seconds))
                returned.append(timezone.now())
            return result

        with connection.execute_wrapper(wait_then_run):
            yield returned


def test_a_delete_that_waits_for_the_poll_is_recorded_when_it_happens(space):
    """`createdAt` is when the change happened, not when the request came in: a delete that
    queues behind another change of the poll (its lock) takes the time once it holds the
    poll, so its event never predates the changes it waited for."""
    poll = make_poll(space)
    with statements_on_the_poll_wait(5) as returned:
        services.delete_poll(poll=poll)
    deleted = Event.objects.get(poll_id=poll.pk, type="poll.deleted")
    assert deleted.created_at >= returned[0]  # read after the first statement on the poll
    stored = Poll.objects.get(pk=poll.pk)
    assert stored.deleted_at == stored.updated_at == deleted.created_at
