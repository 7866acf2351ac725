"""Hand-written statements of the hot reads (core.rows); everything else in polls uses the ORM.

- `live_poll`: the poll every poll endpoint starts from, and `attach_options` for the pages
  of the poll list. The ORM spent longer building its
  SQL (select_related, a participant-count subquery, a prefetch) than the database spent
  running it.
- `participant_answers`: the participants with their votes grouped by the database, one
  string per participant, for the participant list (string aggregates have no portable ORM
  form)."""

import functools

from django.db import connection

from core.rows import Table, split
from polls.models import OPTION_ORDER, Option, Participant, Poll, Vote
from spaces.models import User

#: Vote types that make an availability span, and the span's modifiers.
AVAILABLE_TYPES = {Vote.YES: [], Vote.IF_NEED_BE: [Vote.IF_NEED_BE]}

_POLL, _ORGANIZER, _OPTION = Table(Poll, "p"), Table(User, "u"), Table(Option, "o")


@functools.cache
def _poll_sql(vendor: str) -> str:
    q = connection.ops.quote_name
    participants = q(Participant._meta.db_table)
    return (
        f"SELECT {_POLL.columns()}, {_ORGANIZER.columns()}, "
        f"(SELECT COUNT(*) FROM {participants} n WHERE n.{q('poll_id')} = {_POLL.column('id')}) "
        f"FROM {_POLL.table} JOIN {_ORGANIZER.table} ON {_ORGANIZER.column('id')} = {_POLL.column('organizer')} "
        f"WHERE {_POLL.column('id')} = %s AND {_POLL.column('space')} = %s AND {_POLL.column('deleted_at')} IS NULL"
    )


@functools.cache
def _options_sql(vendor: str) -> str:
    order = ", ".join(_OPTION.column(name) for name in OPTION_ORDER)
    return f"SELECT {_OPTION.columns()} FROM {_OPTION.table} WHERE {_OPTION.column('poll')} = %s ORDER BY {order}"


def live_poll(space_id: str, poll_id: str) -> Poll | None:
    """The space's poll `poll_id` unless deleted, with its organizer, `participant_count` and
    options (in display order, as `poll.options.all()`) loaded: what
    `selectors.live_polls(space).filter(pk=poll_id).first()` gives, in the same two queries."""
    with connection.cursor() as cursor:
        cursor.execute(_poll_sql(connection.vendor), [poll_id, space_id])
        row = cursor.fetchone()
        if row is None:
            return None
        poll, organizer = split(row, _POLL, _ORGANIZER)
        cursor.execute(_options_sql(connection.vendor), [poll.pk])
        options = [_OPTION.build(values) for values in cursor.fetchall()]
    poll.organizer = organizer
    poll.participant_count = row[-1]
    _cache_options(poll, options)
    return poll


def _cache_options(poll: Poll, options: list[Option]) -> None:
    """`poll.options.all()` answers `options` from now on, as after prefetch_related."""
    for option in options:
        Option.poll.field.set_cached_value(option, poll)
    prefetched = poll.options.get_queryset()  # unevaluated: no query
    prefetched._result_cache, prefetched._prefetch_done = options, True
    poll._prefetched_objects_cache = {"options": prefetched}


def attach_options(polls: list[Poll]) -> None:
    """Load the options of `polls` in one query, as `prefetch_related("options")` does (the
    ORM's prefetch machinery cost more than the query, for a page of 50 polls)."""
    if not polls:
        return
    order = ", ".join(_OPTION.column(name) for name in OPTION_ORDER)
    placeholders = ", ".join(["%s"] * len(polls))
    found: dict[str, list[Option]] = {poll.pk: [] for poll in polls}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_OPTION.columns()} FROM {_OPTION.table} WHERE {_OPTION.column('poll')} IN ({placeholders}) "
            f"ORDER BY {order}",
            list(found),
        )
        for values in cursor.fetchall():
            option = _OPTION.build(values)
            found[option.poll_id].append(option)
    for poll in polls:
        _cache_options(poll, found[poll.pk])


_PARTICIPANT = Table(Participant, "p")


@functools.cache
def _participants_sql(vendor: str) -> str:
    votes = connection.ops.quote_name(Vote._meta.db_table)
    code = "v.option_id || CASE WHEN v.type = %s THEN '+' ELSE '' END"
    aggregate = f"string_agg({code}, ',')" if vendor == "postgresql" else f"group_concat({code}, ',')"
    fields = ", ".join(_PARTICIPANT.column(name) for name in PARTICIPANT_FIELDS)
    return (
        f"SELECT {fields}, (SELECT {aggregate} FROM {votes} v "
        f"WHERE v.participant_id = {_PARTICIPANT.column('id')} AND v.type IN (%s, %s)) "
        f"FROM {_PARTICIPANT.table} WHERE {_PARTICIPANT.column('poll')} = %s "
        f"ORDER BY {_PARTICIPANT.column('created_at')}, {_PARTICIPANT.column('id')}"
    )


PARTICIPANT_FIELDS = ("id", "name", "email", "created_at")


def participant_answers(poll: Poll) -> list[tuple]:
    """Every participant of a poll, oldest first, as rows `(id, name, email, created_at,
    answers)`: `answers` lists the participant's `yes` and `ifNeedBe` votes joined by commas,
    each as its option's id, followed by `+` for `ifNeedBe` (None: no such vote), in no
    particular order. One query; the database groups the votes (reading each participant's
    from the vote index), so Python never holds an object per vote."""
    created_at = _PARTICIPANT.converter("created_at")
    with connection.cursor() as cursor:
        cursor.execute(_participants_sql(connection.vendor), [Vote.IF_NEED_BE, *AVAILABLE_TYPES, poll.pk])
        return [(pid, name, email, created_at(at), answers) for pid, name, email, at, answers in cursor.fetchall()]
