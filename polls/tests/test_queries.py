"""The hand-written poll lookup (polls.queries) gives what the ORM gives."""

import pytest
from django.utils import timezone

from polls import queries, selectors
from polls.models import Option, Poll, Tally
from polls.tests.factories import date_poll_body, make_poll, respond, time_poll_body
from spaces.keys import prefix_of
from spaces.models import User
from spaces.queries import key_by_prefix


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


def as_row(instance, row) -> dict:
    """The fields of a model instance that a named tuple row carries."""
    return {name: getattr(instance, name) for name in row._fields if name not in ("organizer", "participant_count")}


@pytest.mark.parametrize("status", [None, "open", "closed"])
def test_a_page_of_polls_is_what_the_orm_gives(space, make_space, django_assert_num_queries, status):
    polls = [make_poll(space, date_poll_body(*days)) for days in (["2030-01-02", "2030-01-01"], ["2030-02-01"])]
    polls.append(make_poll(space, time_poll_body("2030-01-02T10:00:00Z", "2030-01-01T12:00:00Z")))
    polls.append(make_poll(space))
    respond(polls[0], None, None, name="Ann")
    Poll.objects.filter(pk=polls[1].pk).update(status="closed")
    Poll.objects.filter(pk=polls[3].pk).update(created_at=polls[2].created_at)  # a tie, broken by id
    Poll.objects.filter(pk=make_poll(space).pk).update(deleted_at=timezone.now())
    make_poll(make_space()[0])  # another space's
    expected = selectors.live_polls(space).order_by("-created_at", "-id")
    if status:
        expected = expected.filter(status=status)
    expected = list(expected)
    assert expected

    with django_assert_num_queries(2):
        rows = queries.poll_page(space.pk, status=status, after=None, count=10)
        options = queries.options_of([row.id for row in rows])
    assert [row.id for row in rows] == [poll.pk for poll in expected]
    for row, poll in zip(rows, expected, strict=True):
        fields = {name: value for name, value in row._asdict().items() if name not in ("organizer", "participant_count")}
        assert fields == as_row(poll, row)
        assert row.participant_count == poll.participant_count
        assert row.organizer._asdict() == as_row(poll.organizer, row.organizer)
        found = options[row.id]
        assert [option.id for option in found] == [option.pk for option in poll.options.all()]
        assert [option._asdict() for option in found] == [as_row(o, r) for o, r in zip(poll.options.all(), found)]

    # After a position, as a cursor gives it: the rest, tie included; `count` bounds the page.
    first = expected[0]
    rows = queries.poll_page(space.pk, status=status, after=(first.created_at, first.pk), count=10)
    assert [row.id for row in rows] == [poll.pk for poll in expected[1:]]
    rows = queries.poll_page(space.pk, status=status, after=None, count=1)
    assert [row.id for row in rows] == [first.pk]


def test_an_empty_page_makes_one_query_and_no_poll_no_options_query(space, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert queries.poll_page(space.pk, status=None, after=None, count=10) == []
        assert queries.options_of([]) == {}


@pytest.mark.parametrize("body", [date_poll_body("2030-01-03", "2030-01-01"), time_poll_body("2030-01-02T10:00:00Z", "2030-01-01T12:00:00Z")])
def test_one_poll_as_a_row_is_what_live_poll_gives(space, make_space, django_assert_num_queries, body):
    poll = make_poll(space, body)
    respond(poll, None, None, name="Ann")
    expected = queries.live_poll(space.pk, poll.pk)
    with django_assert_num_queries(2):
        row = queries.poll_row(space.pk, poll.pk)
        options = queries.options_of([poll.pk])[poll.pk]
    fields = {name: value for name, value in row._asdict().items() if name not in ("organizer", "participant_count")}
    assert fields == as_row(expected, row)
    assert row.participant_count == 1 and row.organizer._asdict() == as_row(expected.organizer, row.organizer)
    assert [option._asdict() for option in options] == [as_row(o, r) for o, r in zip(expected.options.all(), options, strict=True)]

    assert queries.poll_row(make_space()[0].pk, poll.pk) is None
    Poll.objects.filter(pk=poll.pk).update(deleted_at=timezone.now())
    with django_assert_num_queries(1):
        assert queries.poll_row(space.pk, poll.pk) is None


@pytest.mark.parametrize("text", [
    "Zoë's \"café\" \\ 日本 😀", "tab\tnew\nline\x01end", "", None,
    # What PostgreSQL's text of a row quotes, doubles or ends a field on.
    '(a, "b"), c\\\\d ""), (', " spaced ", "NULL", ",", '"', ")",
])
def test_a_poll_row_keeps_every_value_as_stored(space, text):
    # The row comes packed in one text (queries._pack: a JSON array on SQLite, the row's text
    # on PostgreSQL): the values must be the ones the columns give, whatever the text, the
    # NULLs, the booleans and JSON.
    poll = make_poll(space)
    conferencing = {"url": text, "nested": [1, -(2**62), True, None, {"k": "v"}]}
    Poll.objects.filter(pk=poll.pk).update(
        title=text or "t", description=text, location=text, conferencing=conferencing, hide_scores=True,
    )
    User.objects.filter(pk=poll.organizer_id).update(name=text or "n", image=text)
    expected = queries.live_poll(space.pk, poll.pk)
    row = queries.poll_row(space.pk, poll.pk)
    fields = {name: value for name, value in row._asdict().items() if name not in ("organizer", "participant_count")}
    assert fields == as_row(expected, row)
    assert row.organizer._asdict() == as_row(expected.organizer, row.organizer)
    assert row.conferencing == conferencing and row.hide_scores is True and row.require_email is False
    assert queries.poll_page(space.pk, status=None, after=None, count=10) == [row]


def test_a_poll_read_again_unchanged_is_the_same_row_and_a_changed_one_a_new_row(space, make_space):
    poll = make_poll(space)
    first = queries.poll_row(space.pk, poll.pk)
    assert queries.poll_row(space.pk, poll.pk) is first
    assert queries.poll_page(space.pk, status=None, after=None, count=10) == [first]
    assert queries.poll_page(space.pk, status=None, after=None, count=10)[0] is first

    # Any column of the row, the organizer's or the count: a new row, as read.
    Poll.objects.filter(pk=poll.pk).update(title="Renamed behind the services' back")
    renamed = queries.poll_row(space.pk, poll.pk)
    assert renamed is not first and renamed.title == "Renamed behind the services' back"
    User.objects.filter(pk=poll.organizer_id).update(name="Grace")
    assert queries.poll_row(space.pk, poll.pk).organizer.name == "Grace"
    respond(poll, name="Ann")
    counted = queries.poll_row(space.pk, poll.pk)
    assert counted.participant_count == 1 and counted.organizer.name == "Grace"
    assert queries.poll_row(space.pk, poll.pk) is counted


def test_the_rows_kept_are_bounded(space, monkeypatch):
    monkeypatch.setattr(queries._POLLS_KEPT, "size", 2)
    polls = [make_poll(space) for _ in range(3)]
    for poll in polls:
        queries.poll_row(space.pk, poll.pk)
    assert queries._POLLS_KEPT.keys() == [polls[1].pk, polls[2].pk]


def test_options_read_again_unchanged_are_the_same_rows_and_changed_ones_new_rows(space):
    poll = make_poll(space, date_poll_body("2030-01-02", "2030-01-01"))
    first = queries.options_of([poll.pk])[poll.pk]
    assert [option.date.isoformat() for option in first] == ["2030-01-01", "2030-01-02"]
    assert queries.options_of([poll.pk])[poll.pk] is first
    Option.objects.filter(poll=poll, date="2030-01-01").update(date="2030-01-03")
    moved = queries.options_of([poll.pk])[poll.pk]
    assert moved is not first and [option.date.isoformat() for option in moved] == ["2030-01-02", "2030-01-03"]
    Option.objects.filter(poll=poll).delete()
    assert queries.options_of([poll.pk]) == {poll.pk: ()}


def test_tallies_are_what_the_orm_gives(space, make_space, django_assert_num_queries):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02", "2030-01-03"))
    respond(poll, "yes", "ifNeedBe", "no", name="Ann")
    respond(poll, "yes", None, "yes", name="Bob")
    respond(make_poll(space), "yes", name="Elsewhere")
    Tally.objects.filter(poll=poll, type="no").update(count=0)  # a count back to zero: left out
    expected = Tally.objects.filter(poll_id=poll.pk, count__gt=0).values_list("option_id", "type", "count")
    with django_assert_num_queries(1):
        found = queries.tallies_of(poll.pk)
    assert sorted(found) == sorted(expected) and len(found) == 3
    assert queries.tallies_of(make_poll(make_space()[0]).pk) == []


def test_the_poll_read_with_the_key_is_the_row_poll_row_gives(space_and_key, make_space, django_assert_num_queries):
    """`poll_rider` (ApiView.read_with_key): one statement for the key and the poll, giving
    the very row `poll_row` gives, or None, for the key's space."""
    space, raw = space_and_key
    other_space = make_space()[0]
    mine, theirs, gone = make_poll(space), make_poll(other_space), make_poll(space)
    respond(mine, None, name="Ann")
    Poll.objects.filter(pk=gone.pk).update(deleted_at=timezone.now())
    expected_key, _ = key_by_prefix(prefix_of(raw))
    for poll_id, expected in [
        (mine.pk, queries.poll_row(space.pk, mine.pk)),
        (theirs.pk, None),  # another space's
        (gone.pk, None),  # deleted
        ("unknown12345", None),
    ]:
        with django_assert_num_queries(1):
            key, ridden = key_by_prefix(prefix_of(raw), queries.poll_rider(poll_id))
        assert key is expected_key  # the key's part of the row is the same row
        assert ridden is expected  # the same row object (core.rows.Kept), or None
    assert queries.poll_row(other_space.pk, theirs.pk) is not None

    Poll.objects.filter(pk=mine.pk).update(title="Renamed")  # read again: the new row
    key, ridden = key_by_prefix(prefix_of(raw), queries.poll_rider(mine.pk))
    assert ridden.title == "Renamed" and ridden == queries.poll_row(space.pk, mine.pk)
    assert ridden.participant_count == 1 and ridden.organizer.id == mine.organizer_id


@pytest.mark.parametrize("status", [None, "open", "closed"])
def test_the_page_read_with_the_key_is_the_page_poll_page_gives(space_and_key, make_space, django_assert_num_queries, status):
    """`page_rider` (ApiView.read_with_key of the list): on PostgreSQL one statement for the
    key and the first page, giving the very rows `poll_page` gives, in order, for the key's
    space; no rider on SQLite (two statements cost it less than their UNION)."""
    from django.db import connection

    space, raw = space_and_key
    if connection.vendor != "postgresql":
        assert queries.page_rider(status=status, count=10) is None
        return
    assert queries.page_rider(status=status, count=10) is not None
    expected_key, _ = key_by_prefix(prefix_of(raw))
    with django_assert_num_queries(1):
        key, ridden = key_by_prefix(prefix_of(raw), queries.page_rider(status=status, count=10))
    assert key is expected_key and ridden == []  # an empty space: the key, no rows

    polls = [make_poll(space) for _ in range(5)]
    respond(polls[0], None, name="Ann")
    Poll.objects.filter(pk=polls[1].pk).update(status="closed")
    Poll.objects.filter(pk=polls[3].pk).update(created_at=polls[2].created_at)  # a tie, broken by id
    Poll.objects.filter(pk=polls[4].pk).update(deleted_at=timezone.now())
    make_poll(make_space()[0])  # another space's
    for count in (10, 2):
        expected = queries.poll_page(space.pk, status=status, after=None, count=count)
        assert expected and len(expected) <= count
        with django_assert_num_queries(1):
            key, ridden = key_by_prefix(prefix_of(raw), queries.page_rider(status=status, count=count))
        assert key is expected_key  # the key's part of the result is the same row
        assert len(ridden) == len(expected) and all(a is b for a, b in zip(ridden, expected))  # the same row objects (core.rows.Kept)

    Poll.objects.filter(pk=polls[0].pk).update(title="Renamed")  # read again: the new row
    _, ridden = key_by_prefix(prefix_of(raw), queries.page_rider(status=None, count=10))
    assert [row.title for row in ridden if row.id == polls[0].pk] == ["Renamed"]
    assert ridden == queries.poll_page(space.pk, status=None, after=None, count=10)
    assert key_by_prefix("zzzzzzzz", queries.page_rider(status=None, count=10)) == (None, None)  # no key: nothing read
