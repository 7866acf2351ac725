"""`core.rows.insert`, the hand-written INSERT of the write hot paths, stores exactly what
`bulk_create` stores, on every backend, and splits what exceeds the backend's parameter limit."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from django.db import connection

from core import rows
from polls.models import Option, Poll, Vote
from webhooks.models import Event


def _poll(space, **values) -> Poll:
    return Poll(space=space, organizer=space.owner, kind="time", **values)


def _stored(model, pk) -> dict:
    """The row as the database keeps it (SQLite's text of a timestamp, not a datetime that
    compares equal whatever its offset), but its id."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {connection.ops.quote_name(model._meta.db_table)} WHERE id = %s", [pk])
        values = dict(zip([column[0] for column in cursor.description], cursor.fetchone(), strict=True))
    values.pop("id")
    return values


@pytest.mark.django_db
def test_insert_stores_what_bulk_create_stores(space):
    at = datetime(2031, 3, 4, 5, 6, 7, tzinfo=UTC)
    variants = [
        {"title": "Plain", "created_at": at, "updated_at": at},
        {"title": "Ünïcode ☃", "description": "", "location": None, "time_zone": "Europe/Berlin",
         "conferencing": {"url": "https://meet.example/x", "n": [1, None, True]}, "status": "closed",
         "require_email": True, "hide_scores": True, "disable_comments": False, "created_at": at,
         "updated_at": at, "past_at": at, "deleted_at": at},
        # Another offset (the same instant stored in UTC) and microseconds.
        {"title": "Offset", "created_at": datetime(2031, 3, 4, 7, 6, 7, 123456, tzinfo=timezone(timedelta(hours=2))),
         "updated_at": at, "past_at": None},
    ]
    for values in variants:
        ours, theirs = _poll(space, **values), _poll(space, **values)
        rows.insert([ours])
        Poll.objects.bulk_create([theirs])
        assert not ours._state.adding and ours._state.db == connection.alias
        assert _stored(Poll, ours.pk) == _stored(Poll, theirs.pk)

    poll = Poll.objects.filter(title="Plain").first()
    options = [Option(poll=poll, date=date(2031, 1, 2)), Option(poll=poll, start_time=at, duration=45)]
    twins = [Option(poll=poll, date=date(2031, 1, 2)), Option(poll=poll, start_time=at, duration=45)]
    rows.insert(options)
    Option.objects.bulk_create(twins)
    for ours, theirs in zip(options, twins):
        assert _stored(Option, ours.pk) == _stored(Option, theirs.pk)

    event = Event(space=space, type="poll.created", poll_id=poll.pk, data={"poll": {"id": poll.pk}}, body="{}")
    twin = Event(space=space, type="poll.created", poll_id=poll.pk, data={"poll": {"id": poll.pk}}, body="{}",
                 created_at=event.created_at)
    rows.insert([event])
    Event.objects.bulk_create([twin])
    assert _stored(Event, event.pk) == _stored(Event, twin.pk)


@pytest.mark.django_db
def test_insert_splits_at_the_parameter_limit(space):
    poll = _poll(space, title="Many")
    rows.insert([poll])
    limit = connection.features.max_query_params or rows._MAX_PARAMETERS
    count = limit // 5 * 2 + 7  # Option has 5 columns: three statements
    options = [Option(poll=poll, duration=n + 1, start_time=datetime(2031, 1, 1, tzinfo=UTC)) for n in range(count)]
    rows.insert(options)
    assert sorted(Option.objects.filter(poll=poll).values_list("duration", flat=True)) == list(range(1, count + 1))


def test_insert_refuses_ids_made_by_the_database():
    with pytest.raises(ValueError, match="Vote"):
        rows.insert([Vote(participant_id="p", option_id="o", type="yes")])
