"""`services.create_poll` called directly with typed arguments, as the back office and
`manage.py` would: it guards its own rules, whatever the caller checked before."""

import re
from datetime import UTC, date, datetime, time

import pytest

from core.errors import ServiceError
from polls import services
from polls.generators import Generator
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
    ({"kind": "time", "slots": [TimeSlot(datetime(2030, 1, 1, 9)), TimeSlot(datetime(2030, 1, 1, 10), 10)],
      "duration": 30}, "options[1]: the duration must be 15-1440 minutes"),
    ({"kind": "time", "slots": [TimeSlot(datetime(2030, 1, 1, 9), True)]}, "options[0]: the duration must be 15-1440"),
    ({"kind": "time", "slots": [TimeSlot(datetime(2030, 1, 1, 9))]},
     "duration: required because options[0] has no duration of its own"),
    ({"kind": "time", "slots": [TimeSlot(datetime(2030, 1, 1, 9))], "time_zone": "Mars/Olympus"}, "timeZone:"),
    ({"kind": "date", "dates": [date(2030, 1, 1)], "title": " "}, "title: required"),
    ({"kind": "date", "dates": [date(2030, 1, 1)], "title": "Plan\r\nBcc: x@example.com"},
     "title: must not contain control characters or line breaks"),
    ({"kind": "date", "dates": [date(2030, 1, 1)], "location": "Room\x854"},
     "location: must not contain control characters or line breaks"),
    ({"kind": "date", "dates": [date(2030, 1, 1)], "description": "one\x0btwo"},
     "description: must not contain control characters other than line breaks and tabs"),
])
def test_a_refusal_stores_nothing(space, arguments, message):
    with pytest.raises(ServiceError, match=re.escape(message)):
        services.create_poll(space=space, **{"title": "Plan", **arguments})
    assert not Poll.objects.exists() and not Option.objects.exists() and not Event.objects.exists()


def generator(start_date=date(2030, 6, 3), end_date=date(2030, 6, 7), days=("mon",), start=time(9), end=time(11),
              interval=30) -> Generator:
    return Generator(start_date=start_date, end_date=end_date, days=days, start=start, end=end, interval=interval)


@pytest.mark.parametrize("generators, message", [
    ([generator()] * 11, "generators: at most 10; got 11"),
    ([generator(end_date=date(2030, 6, 2))], "generators[0].endDate: must not be before startDate"),
    ([generator(), generator(end_date=date(2031, 6, 3))], "generators[1].endDate: the range must be fewer than 366 days"),
    ([generator(end=time(9))], "generators[0].to: must be later than from"),
    ([generator(end=time(9, 15))], "generators[0].to: the daily window (15 min) is shorter than duration (30 min)"),
    ([generator(days=("sun",), end_date=date(2030, 6, 4))], "generators[0].days: the date range contains none of these days"),
    ([generator(interval=5)], "generators[0].interval: must be 15-1440 minutes"),
])
def test_the_generator_rules_hold_for_every_caller(space, generators, message):
    """The limits the API's input checks are the service's own (polls/rules.py): the back
    office or a command calling create_poll cannot bypass them."""
    with pytest.raises(ServiceError, match=re.escape(message)):
        services.create_poll(space=space, title="Plan", kind="time", duration=30, generators=generators)
    assert not Poll.objects.exists() and not Option.objects.exists()
