"""`services.create_poll` called directly with typed arguments, as the back office and
`manage.py` would: it guards its own rules, whatever the caller checked before."""

import re
from datetime import UTC, date, datetime

import pytest

from core.errors import ServiceError
from polls import services
from polls.models import Option, Poll
from polls.rules import TimeSlot
from webhooks.models import Event


def test_typed_arguments_make_the_poll_with_the_model_defaults(space):
    poll, options = services.create_poll(
        space=space, title="  Review  ", kind=Poll.Kind.TIME, time_zone="Europe/Berlin", duration=30,
        slots=[TimeSlot(datetime(2030, 6, 1, 14, tzinfo=UTC)), TimeSlot(datetime(2030, 6, 1, 9), 60)],
        hide_scores=True,
    )
    poll.refresh_from_db()
    assert (poll.title, poll.time_zone, poll.hide_scores, poll.disable_comments, poll.allow_tentative_votes) == (
        "Review", "Europe/Berlin", True, True, True)
    assert [(option.start_time.hour, option.duration) for option in options] == [(7, 60), (14, 30)]
    assert Event.objects.filter(poll_id=poll.pk, type="poll.created").count() == 1


@pytest.mark.parametrize("arguments, message", [
    ({"kind": "date", "dates": [date(2030, 1, 1)], "hide_everything": True}, "hide_everything: not a setting of a poll"),
    ({"kind": "date", "dates": [date(2030, 1, 1)], "hide_scores": "yes"}, "hide_scores: must be true or false"),
    ({"kind": "week", "dates": [date(2030, 1, 1)]}, "kind: must be one of date, time"),
    ({"kind": "date", "dates": []}, "options: a poll needs at least one option"),
    ({"kind": "date", "dates": [date(2030, 1, 1)], "duration": 30}, "a date poll has dates only"),
    ({"kind": "time", "dates": [date(2030, 1, 1)]}, "a time poll has time slots, not dates"),
    ({"kind": "time", "slots": [TimeSlot(datetime(2030, 1, 1, 9))], "duration": 1441},
     "options[0]: the duration must be 15-1440 minutes"),
    ({"kind": "time", "slots": [TimeSlot(datetime(2030, 1, 1, 9))], "time_zone": "Mars/Olympus"}, "timeZone:"),
    ({"kind": "date", "dates": [date(2030, 1, 1)], "title": " "}, "title: required"),
])
def test_a_refusal_stores_nothing(space, arguments, message):
    with pytest.raises(ServiceError, match=re.escape(message)):
        services.create_poll(space=space, **{"title": "Plan", **arguments})
    assert not Poll.objects.exists() and not Option.objects.exists() and not Event.objects.exists()
