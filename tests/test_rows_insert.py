"""`core.rows.insert`, the hand-written INSERT of the write hot paths, stores exactly what
`bulk_create` stores, on every backend, and splits what exceeds the backend's parameter limit;
`core.rows.store` stores several models so, all or nothing."""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from django.db import DatabaseError, IntegrityError, connection
from django.test.utils import CaptureQueriesContext

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
        # UTC with microseconds, and a year of fewer than four digits.
        {"title": "Early", "created_at": datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
         "updated_at": datetime(2031, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)},
    ]
    for values in variants:
        ours, theirs = _poll(space, **values), _poll(space, **values)
        rows.insert([ours])
        Poll.objects.bulk_create([theirs])
        assert not ours._state.adding and ours._state.db == connection.alias
        assert _stored(Poll, ours.pk) == _stored(Poll, theirs.pk)
    # Many rows at once (PostgreSQL: an array per column, JSON and NULLs among them).
    ours, theirs = [_poll(space, **values) for values in variants], [_poll(space, **values) for values in variants]
    rows.insert(ours)
    Poll.objects.bulk_create(theirs)
    for mine, other in zip(ours, theirs, strict=True):
        assert _stored(Poll, mine.pk) == _stored(Poll, other.pk)

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


@pytest.mark.django_db
def test_store_stores_several_models_as_insert_does_in_one_statement_on_postgresql(space):
    at = datetime(2031, 3, 4, 5, 6, 7, 123456, tzinfo=timezone(timedelta(hours=2)))
    ours, theirs = _poll(space, title="Stored", created_at=at, updated_at=at), _poll(space, title="Stored", created_at=at, updated_at=at)
    options = [Option(poll=ours, date=date(2031, 1, 2)), Option(poll=ours, start_time=at, duration=45)]
    twins = [Option(poll=theirs, date=date(2031, 1, 2)), Option(poll=theirs, start_time=at, duration=45)]
    event = Event(space=space, type="poll.created", poll_id=ours.pk, data={"poll": {"id": ours.pk}}, body="{}")
    twin = Event(space=space, type="poll.created", poll_id=ours.pk, data={"poll": {"id": ours.pk}}, body="{}",
                 created_at=event.created_at)
    with CaptureQueriesContext(connection) as seen:
        rows.store([ours], options, [event])
    inserts = [query["sql"] for query in seen if "INSERT" in query["sql"]]
    assert len(inserts) == (1 if connection.vendor == "postgresql" else 3), inserts
    rows.insert([theirs])
    rows.insert(twins)
    rows.insert([twin])
    assert all(not obj._state.adding for obj in (ours, *options, event))
    assert _stored(Poll, ours.pk) == _stored(Poll, theirs.pk)
    for mine, other in zip(options, twins, strict=True):
        assert {**_stored(Option, mine.pk), "poll_id": None} == {**_stored(Option, other.pk), "poll_id": None}
        assert _stored(Option, mine.pk)["poll_id"] == ours.pk
    assert _stored(Event, event.pk) == _stored(Event, twin.pk)


@pytest.mark.django_db(transaction=True)
def test_store_stores_all_or_nothing(space):
    """Outside a transaction (as `create_poll` calls it), so that nothing but `store` itself
    can undo the first group."""
    first = _poll(space, title="First")
    taken = Option(poll=first, date=date(2031, 1, 2))
    rows.store([first], [taken])
    second = _poll(space, title="Second")
    clash = Option(poll=second, date=date(2031, 1, 3))
    clash.id = taken.id  # the second group fails: the first must not stay
    event = Event(space=space, type="poll.created", poll_id=second.pk, data={}, body="{}")
    assert not connection.in_atomic_block
    with pytest.raises(IntegrityError):
        rows.store([second], [clash], [event])
    assert not Poll.objects.filter(pk=second.pk).exists() and not Event.objects.filter(pk=event.pk).exists()
    assert Option.objects.get(pk=taken.pk).poll_id == first.pk


@pytest.mark.django_db(transaction=True)
def test_a_value_too_long_for_its_column_fares_as_with_bulk_create(space):
    """PostgreSQL refuses it (SQLite keeps any length), for one row or many: the arrays of
    many rows are cast to the column's type without its length, which would cut the value."""
    def outcome(insert, count: int, title: str):
        polls = [_poll(space, title=title)] + [_poll(space, title="Short") for _ in range(count - 1)]
        try:
            insert(polls)
        except DatabaseError as error:
            return type(error).__name__, Poll.objects.filter(pk__in=[poll.pk for poll in polls]).count()
        return None, sorted(len(title) for title in Poll.objects.filter(pk__in=[p.pk for p in polls]).values_list("title", flat=True))

    too_long = "x" * (Poll._meta.get_field("title").max_length + 1)
    for count in (1, 2):
        expected = outcome(Poll.objects.bulk_create, count, too_long)
        assert outcome(rows.insert, count, too_long) == expected
        assert expected[0] == ("DataError" if connection.vendor == "postgresql" else None)


@pytest.mark.django_db(transaction=True)
def test_many_rows_go_as_json_where_json_carries_every_value_exactly(space):
    """On PostgreSQL, rows of text, integers, days, aware timestamps, NULLs, choices and
    JSONFields' documents of those go as one JSON document (`json_populate_recordset`),
    stored as bulk_create stores them; a value JSON would not carry exactly (here a float in
    a `JSONField`) sends them as an array per column, or one row's VALUES."""
    poll = _poll(space, title="Json")
    rows.insert([poll])
    at = datetime(2031, 3, 4, 5, 6, 7, tzinfo=UTC)
    values = [
        {"date": date(2031, 1, 2)},
        {"start_time": at, "duration": 45},
        {"start_time": datetime(2031, 3, 4, 7, 6, 7, 123456, tzinfo=timezone(timedelta(hours=2))), "duration": 1},
        {"start_time": datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "duration": 2},
        {"date": date(1, 1, 1)},
        {"date": date(9999, 12, 31), "start_time": None, "duration": None},
    ]
    odd_ids = ['quote"s', "back\\slash", "a'b", "{brace}", "☃ \u00e9\t\n", "null"]  # nothing to escape by hand
    ours = [Option(poll=poll, id=f"{odd}-{n}", **value) for n, (odd, value) in enumerate(zip(odd_ids, values, strict=True))]
    theirs = [Option(poll=poll, **value) for value in values]
    with CaptureQueriesContext(connection) as seen:
        rows.insert(ours)
    assert ["json_populate_recordset" in query["sql"] for query in seen if "INSERT" in query["sql"]] == [
        connection.vendor == "postgresql"]
    Option.objects.bulk_create(theirs)
    for mine, other in zip(ours, theirs, strict=True):
        assert Option.objects.filter(pk=mine.pk).exists()
        assert _stored(Option, mine.pk) == _stored(Option, other.pk)

    # One row goes as a document too, a JSONField's dict of text, numbers, booleans, NULLs and
    # lists within it, and a model choice's member as its value.
    document = {"title": "Document", "status": Poll.Status.CLOSED, "created_at": at, "updated_at": at,
                "conferencing": {"url": "https://meet.example/x", "n": [1, None, True, {"k": "☃"}]}}
    documents, twins = [_poll(space, **document)], [_poll(space, **document)]
    with CaptureQueriesContext(connection) as seen:
        rows.insert(documents)
    assert ["json_populate_recordset" in query["sql"] for query in seen if "INSERT" in query["sql"]] == [
        connection.vendor == "postgresql"]
    Poll.objects.bulk_create(twins)
    assert _stored(Poll, documents[0].pk) == _stored(Poll, twins[0].pk)

    # A float (orjson would write NaN as null) sends many rows as arrays, one row as VALUES.
    with CaptureQueriesContext(connection) as seen:
        rows.insert([_poll(space, title="Arrays", conferencing={"rate": 1.5}), _poll(space, title="Too")])
        rows.insert([_poll(space, title="Values", conferencing={"rate": 1.5})])
    inserts = [query["sql"] for query in seen if "INSERT" in query["sql"]]
    assert ["unnest" in sql for sql in inserts] == [connection.vendor == "postgresql", False]
    assert not any("json_populate_recordset" in sql for sql in inserts)

    # What the database or the driver refuses fails as with bulk_create, storing nothing: a
    # value too long for its column (refused as the INSERT's assignment refuses it), and
    # what orjson cannot write (sent as arrays instead).
    def outcome(insert, **values):
        made = [Option(poll=poll, date=date(2031, 5, 6), **values), Option(poll=poll, date=date(2031, 5, 7))]
        try:
            insert(made)
        except Exception as error:  # whichever it is: the two must fail alike
            failed = type(error)
        else:
            failed = None
        stored = Option.objects.filter(poll=poll, date__in=[date(2031, 5, 6), date(2031, 5, 7)])
        count = stored.count()
        stored.delete()
        return failed, count

    for values in ({"id": "x" * 31}, {"duration": 2**70}, {"id": "lone\ud800"}):
        expected = outcome(Option.objects.bulk_create, **values)
        assert outcome(rows.insert, **values) == expected, values
        if connection.vendor == "postgresql":
            assert expected[0] is not None and expected[1] == 0, values


@pytest.mark.django_db
def test_rows_document_is_the_loops_document(space, monkeypatch):
    """On PostgreSQL `_inserts` makes a JSON document of the instances' own `__dict__`s where
    every value is one its loop passes as it is (`_document`): the same rows as the loop's
    document, and the loop's own way wherever a value or an attribute is otherwise. SQLite
    gets neither: its INSERTs carry the values."""
    import json

    at = datetime(2031, 3, 4, 7, 6, 7, 123456, tzinfo=timezone(timedelta(hours=2)))
    poll = _poll(space, title="Ünïcode ☃", status=Poll.Status.CLOSED, created_at=at, updated_at=at, past_at=at,
                 conferencing={"url": "https://meet.example/x", "n": [1, None, True, {"k": "☃"}]})
    options = [Option(poll=poll, date=date(2031, 1, 2)), Option(poll=poll, start_time=at, duration=45)]
    event = Event(space=space, type="poll.created", poll_id=poll.pk, data={"poll": {"id": poll.pk}}, body="{}")

    def documents(objects) -> list | None:
        [(sql, params)] = rows._inserts(objects, connection)
        if connection.vendor != "postgresql":
            assert "json_populate_recordset" not in sql and "VALUES" in sql
            return None
        assert "json_populate_recordset" in sql
        return json.loads(params[0])

    for objects in ([poll], options, [event]):
        fast = documents(objects)
        with monkeypatch.context() as patched:
            patched.setattr(rows, "_document", lambda objects, plan: None)
            loop = documents(objects)
        if connection.vendor == "postgresql":
            assert [{key: value for key, value in row.items() if key != "_state"} for row in fast] == loop
            assert all(row["_state"] is None for row in fast)
        else:
            assert fast is loop is None

    # The loop decides for what the document's checks refuse, making the same rows or its
    # arrays: a naive timestamp, a day given as text, an attribute beside the columns.
    plan = rows._document_plan(Option)
    naive = Option(poll=poll, start_time=datetime(2031, 1, 2, 3, 4), duration=5)
    text_day = Option(poll=poll, date="2031-01-02")
    extra = Option(poll=poll, date=date(2031, 1, 3))
    extra.note = "not a column"
    for odd in (naive, text_day, extra):
        assert rows._document([options[0], odd], plan) is None
    assert json.loads(rows._document(options, plan))[1]["duration"] == 45
