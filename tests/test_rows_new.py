"""`core.rows.new` builds the instance the model's own constructor builds: every attribute,
the state (adding, database, the related objects cached), and what the constructor does to
a related object; and hands anything it does not handle to the constructor."""

from datetime import UTC, date, datetime

import pytest
import time_machine
from django.db.models.signals import post_init

from core import rows
from polls.models import Option, Participant, Poll
from spaces.models import Space
from webhooks.models import Event

AT = datetime(2031, 3, 4, 5, 6, 7, tzinfo=UTC)


def state_of(obj) -> dict:
    """Everything an instance holds: its attributes (without the random id when the test
    compares two draws) and its state."""
    values = {key: value for key, value in obj.__dict__.items() if key != "_state"}
    return {
        "values": values,
        "order": list(values),
        "adding": obj._state.adding,
        "db": obj._state.db,
        "cached": {name: id(value) for name, value in obj._state.__dict__.get("fields_cache", {}).items()},
    }


def same(model, **values):
    """`new` and the constructor on the same values, at the same instant, with the same id
    drawn: every part of both instances equal."""
    with time_machine.travel(AT, tick=False):
        ours, theirs = rows.new(model, id="fixed-id", **values), model(id="fixed-id", **values)
    assert type(ours) is model
    assert state_of(ours) == state_of(theirs)
    return ours


@pytest.mark.django_db
def test_new_builds_what_the_constructor_builds(space):
    poll = same(Poll, space=space, organizer=space.owner, title="T", kind="time", time_zone="Europe/Berlin",
                hide_scores=True, created_at=AT, updated_at=AT, past_at=None)
    assert poll.space is space and poll.organizer is space.owner  # cached: no query
    # Defaults: called per instance (the id, the JSON field's dict, now) or given as they are.
    bare = same(Poll, space=space, organizer=space.owner, title="T", kind="date")
    assert bare.status == Poll.Status.OPEN and bare.created_at == AT and bare.conferencing == {"provider": "none"}
    assert rows.new(Poll, space=space, title="x").conferencing is not rows.new(Poll, space=space, title="y").conferencing
    assert rows.new(Option, date=date(2031, 1, 1)).id != rows.new(Option, date=date(2031, 1, 1)).id
    same(Option, poll=poll, start_time=AT, duration=30)
    same(Option, poll_id="by-attname", date=date(2031, 1, 2))
    same(Event, space_id=space.pk, type="poll.created", poll_id=poll.pk, participant_id=None, data={"a": [1]},
         created_at=AT)
    same(Participant, poll=poll, name="Ann", email=None)


@pytest.mark.django_db
def test_new_sets_where_both_sides_will_be_written_as_the_descriptor_does(space):
    for build in (rows.new, lambda model, **values: model(**values)):
        unsaved = Space(name="Not saved yet")
        assert unsaved._state.db is None
        poll = build(Poll, space=unsaved, title="T")
        assert poll._state.db == "default" and unsaved._state.db == "default"
        option = build(Option, poll=build(Poll, space=space, title="T"))
        assert option._state.db == "default"


@pytest.mark.django_db
def test_anything_else_goes_to_the_constructor(space):
    with pytest.raises(TypeError):
        rows.new(Option, colour="red")  # not a field: the constructor's own error
    with pytest.raises(ValueError):
        rows.new(Option, poll=space)  # not a poll: the descriptor's own error
    assert rows.new(Option, poll=None).poll_id is None

    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=Option)
    try:
        option = rows.new(Option, date=date(2031, 1, 1))
    finally:
        post_init.disconnect(receiver, sender=Option)
    assert seen == [option]  # the constructor ran, and sent its signal


@pytest.mark.django_db
def test_new_many_builds_what_new_builds_row_by_row(space):
    poll = rows.new(Poll, space=space, organizer=space.owner, title="T", kind="time")
    given = [
        {"id": "a", "start_time": AT, "duration": 30},
        {"id": "b", "date": date(2031, 1, 2)},
        {"start_time": AT},  # its id drawn, as new draws it
        {"id": "e", "poll_id": "another"},  # the key common gives by instance: new refuses it too
    ]
    with time_machine.travel(AT, tick=False):
        many = rows.new_many(Option, given, poll=poll)
        one_by_one = [rows.new(Option, poll=poll, **row) for row in given]
    for ours, theirs in zip(many, one_by_one, strict=True):
        assert type(ours) is Option
        if "id" not in given[many.index(ours)]:  # drawn: different, and the rest the same
            assert ours.id != theirs.id
            ours.id = theirs.id = "drawn"
        assert state_of(ours) == state_of(theirs)
    assert [obj.id for obj in many] == ["a", "b", "drawn", "e"]
    assert many[0].poll is poll and many[1].poll is poll
    assert many[0]._state.fields_cache is not many[1]._state.fields_cache
    with pytest.raises(TypeError, match="multiple values for keyword argument 'poll'"):
        rows.new_many(Option, [{"id": "d", "poll": poll}], poll=poll)  # as new(..., **common, **row)


@pytest.mark.django_db
def test_new_many_goes_to_the_constructor_where_new_would(space):
    poll = rows.new(Poll, space=space, title="T", kind="time")
    received = []

    def receiver(sender, instance, **kwargs):
        received.append(instance)

    post_init.connect(receiver, sender=Option)
    try:
        made = rows.new_many(Option, [{"id": "x", "start_time": AT}], poll=poll)
    finally:
        post_init.disconnect(receiver, sender=Option)
    assert received == made and made[0].poll is poll
