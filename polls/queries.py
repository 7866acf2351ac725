"""Hand-written statements of the hot reads (core.rows); everything else in polls uses the ORM.

- `live_poll`: the poll every poll endpoint starts from. The ORM spent longer building its
  SQL (select_related, a participant-count subquery, a prefetch) than the database spent
  running it.
- `poll_row`, `poll_page` and `options_of`: a poll, or a page of the poll list, and their
  options, as rows for the response (named tuples, no model instance: building instances
  cost more than the rest of a read).
- `tallies_of`: the counts of a poll's results.
- `participant_answers`: the participants with their answers (`Participant.answers`), for
  the participant list of any size."""

import functools
from datetime import datetime

from django.db import DEFAULT_DB_ALIAS, connection, connections

from core.rows import Columns, Kept, Rider, RowsRider, Table, pack, split, unpacker
from core.statements import statement_cursor
from polls.models import OPTION_ORDER, Option, Participant, Poll, Tally, Vote
from spaces.models import User

#: Vote types that make an availability span, and the span's modifiers.
AVAILABLE_TYPES = {Vote.YES: [], Vote.IF_NEED_BE: [Vote.IF_NEED_BE]}
#: How `Participant.answers` writes each of those votes: one character, whose code point is
#: ANSWER_BASE + ANSWER_STRIDE x the option's position among the poll's options in display
#: order (OPTION_ORDER, from 0) + the vote type's offset here (yes 0, ifNeedBe 1). So a
#: poll of up to 103 options writes code points below 256 (one byte each in latin-1), and
#: the participant list turns a participant's answers into spans by indexing, not parsing.
ANSWER_OFFSETS = {kind: offset for offset, kind in enumerate(AVAILABLE_TYPES)}
ANSWER_STRIDE = len(AVAILABLE_TYPES)
ANSWER_BASE = 0x30  # "0": the first option's yes; no control characters

_POLL, _ORGANIZER, _OPTION = Table(Poll, "p"), Table(User, "u"), Table(Option, "o")


def _poll_select(
    poll: Table, organizer: Table, where: list[str], tail: str = "", packed: str | None = None, also: str = ""
) -> str:
    """SELECT the columns of `poll` and `organizer`; or (`packed`: the backend's vendor) the
    poll's id and those values as one text (core.rows.pack: a page of 51 polls is 1,020
    values as columns, which the kept rows compared one by one); then the columns `also`.
    The participant count is the poll's column (`Poll.participant_count`, kept by the
    services): never counted by a read."""
    columns = f"{poll.columns()}, {organizer.columns()}"
    if packed:
        columns = f"{poll.column('id')}, {pack(packed, columns)}"
    if also:
        columns = f"{columns}, {also}"
    return (
        f"SELECT {columns} "
        f"FROM {poll.table} JOIN {organizer.table} ON {organizer.column('id')} = {poll.column('organizer')} "
        f"WHERE {' AND '.join(where)}{tail}"
    )


def _live(poll: Table) -> list[str]:
    """The space's live poll with the id given: the WHERE of a poll read (id, then space)."""
    return [f"{poll.column('id')} = %s", f"{poll.column('space')} = %s", f"{poll.column('deleted_at')} IS NULL"]


@functools.cache
def _poll_sql(vendor: str) -> str:
    return _poll_select(_POLL, _ORGANIZER, _live(_POLL))


@functools.cache
def _options_sql(vendor: str) -> str:
    order = ", ".join(_OPTION.column(name) for name in OPTION_ORDER)
    return f"SELECT {_OPTION.columns()} FROM {_OPTION.table} WHERE {_OPTION.column('poll')} = %s ORDER BY {order}"


def live_poll(space_id: str, poll_id: str) -> Poll | None:
    """The space's poll `poll_id` unless deleted, with its organizer and
    options (in display order, as `poll.options.all()`) loaded: what
    `selectors.live_polls(space).filter(pk=poll_id).first()` gives, in the same two queries."""
    with statement_cursor() as cursor:
        cursor.execute(_poll_sql(connection.vendor), [poll_id, space_id])
        row = cursor.fetchone()
        if row is None:
            return None
        poll, organizer = split(row, _POLL, _ORGANIZER)
        cursor.execute(_options_sql(connection.vendor), [poll.pk])
        options = [_OPTION.build(values) for values in cursor.fetchall()]
    poll.organizer = organizer
    _cache_options(poll, options)
    return poll


def _cache_options(poll: Poll, options: list[Option]) -> None:
    """`poll.options.all()` answers `options` from now on, as after prefetch_related."""
    for option in options:
        Option.poll.field.set_cached_value(option, poll)
    prefetched = poll.options.get_queryset()  # unevaluated: no query
    prefetched._result_cache, prefetched._prefetch_done = options, True
    poll._prefetched_objects_cache = {"options": prefetched}


#: What a poll's answer shows (presenters.poll), as rows.
_POLL_ROW = Columns(
    Poll, "p",
    ("id", "title", "description", "location", "conferencing", "time_zone", "status", "kind", "created_at",
     "updated_at", "require_email", "hide_participants", "hide_scores", "disable_comments", "allow_tentative_votes",
     "participant_count"),
    "PollRow", extra=("organizer",),
)
_ORGANIZER_ROW = Columns(User, "u", ("id", "name", "email", "image"), "OrganizerRow")
_OPTION_ROW = Columns(Option, "o", ("id", "poll", "date", "start_time", "duration"), "OptionRow")
_OPTION_POLL = 1  # the poll's id in _OPTION_ROW's values
_PACKED_FIELDS = [*_POLL_ROW.fields, *_ORGANIZER_ROW.fields]


@functools.cache
def _one_sql(vendor: str) -> str:
    return _poll_select(_POLL_ROW, _ORGANIZER_ROW, _live(_POLL_ROW), packed=vendor)


def _page_select(space: str, by_status: bool, after: bool, vendor: str, count: int, also: str = "") -> str:
    """A page of `count` polls of the space whose id `space` gives (a placeholder, or a
    column), packed, with the columns `also`. The count is written into the statement, not
    a parameter: for a prepared statement's generic plan PostgreSQL takes a LIMIT it cannot
    see for a tenth of the rows, so with many polls in the table the generic plan looked
    dearer than planning each execution anew, and every page was planned again (about 2.5
    ms of PostgreSQL's time for the first page riding on the key lookup). A statement per
    page size: 100 at most."""
    created_at, poll_id = _POLL_ROW.column("created_at"), _POLL_ROW.column("id")
    where = [f"{_POLL_ROW.column('space')} = {space}", f"{_POLL_ROW.column('deleted_at')} IS NULL"]
    if by_status:
        where.append(f"{_POLL_ROW.column('status')} = %s")
    if after:
        # A row comparison: the databases seek the index to it (an OR of the two cases made
        # PostgreSQL read every newer poll of the space first).
        where.append(f"({created_at}, {poll_id}) < (%s, %s)")
    tail = f" ORDER BY {created_at} DESC, {poll_id} DESC LIMIT {int(count)}"
    return _poll_select(_POLL_ROW, _ORGANIZER_ROW, where, tail, packed=vendor, also=also)


@functools.cache
def _page_sql(vendor: str, by_status: bool, after: bool, count: int) -> str:
    return _page_select("%s", by_status, after, vendor, count)


#: Poll rows and option lists each process keeps (`_read_polls`, `options_of`; core.rows.Kept).
_POLLS_KEPT, _OPTIONS_KEPT = Kept(4096), Kept(4096)


def _read_polls(sql: str, params: list) -> list:
    """The poll rows of `sql` (`_poll_select`'s packed rows of _POLL_ROW and _ORGANIZER_ROW)."""
    with statement_cursor() as cursor:
        cursor.execute(sql, params)
        return _polls_made(cursor.fetchall())


def _polls_made(fetched: list) -> list:
    """The rows of polls fetched (each the id and the packed values `_poll_select` gives).

    A poll read again with the very same values as last time in this process is given as
    the row made then (core.rows.Kept), compared as one text, without unpacking it or
    running the backend's converters (JSON, timestamps); encoding then finds its answer for
    that row at once (`encoding.encoded_polls`)."""
    db = connections[DEFAULT_DB_ALIAS]  # looked up once: each `connection.x` is a lookup and a caught AttributeError
    read_poll, read_organizer = _POLL_ROW.reader(), _ORGANIZER_ROW.reader(_POLL_ROW.width)

    def make_all(packed: list) -> list:
        unpack = unpacker(db, _PACKED_FIELDS)
        made = []
        for text in packed:
            values = unpack(text)
            made.append(read_poll(values, (read_organizer(values),)))
        return made

    return _POLLS_KEPT.made(fetched, make_all=make_all)


def _rider_sql(space: str) -> tuple[str, str]:
    """`poll_rider`'s columns (those of `_one_sql`) and JOINs, on the space column `space`."""
    columns = f"{_POLL_ROW.column('id')}, {pack(connection.vendor, f'{_POLL_ROW.columns()}, {_ORGANIZER_ROW.columns()}')}"
    where = _live(_POLL_ROW)
    where[1] = f"{_POLL_ROW.column('space')} = {space}"
    return columns, (
        f"LEFT JOIN {_POLL_ROW.table} ON {' AND '.join(where)} "
        f"LEFT JOIN {_ORGANIZER_ROW.table} ON {_ORGANIZER_ROW.column('id')} = {_POLL_ROW.column('organizer')}"
    )


def _ridden_poll(values):
    return _polls_made([values])[0] if values[0] is not None else None


def poll_rider(poll_id: str) -> Rider:
    """`poll_row` of the key's space, read in the key lookup's statement (core.rows.Rider):
    the same row, or None, as `poll_row(space_id, poll_id)` gives."""
    return Rider(_rider_sql, [poll_id], _ridden_poll)


@functools.cache
def _page_rider_sql(by_status: bool, count: int):
    def sql(space: str) -> str:
        # The page's order in its columns (`_PAGE_ORDER`), for the statement it rides on.
        return _page_select(space, by_status, after=False, vendor="postgresql", count=count, also=_POLL_ROW.column("created_at"))

    return sql


#: The order of a riding page's rows by its columns: `created_at` (the third), then the id.
_PAGE_ORDER = ((2, "DESC"), (0, "DESC"))


def _ridden_page(rows: list) -> list:
    return _polls_made([(poll_id, packed) for poll_id, packed, _created_at in rows])


def page_rider(*, status: str | None, count: int) -> RowsRider | None:
    """The first page `poll_page(space_id, status=status, after=None, count=count)` gives, of
    the key's space, read in the key lookup's statement (core.rows.RowsRider): the same rows.
    PostgreSQL only, where it saves a round trip; None elsewhere (SQLite has no LATERAL, and
    runs the two statements in less time than their UNION)."""
    if connections[DEFAULT_DB_ALIAS].vendor != "postgresql":
        return None
    params = [status] if status else []
    return RowsRider(_page_rider_sql(bool(status), count), params, _ridden_page, 3, _PAGE_ORDER)


def options_of(poll_ids: list[str]) -> dict[str, tuple]:
    """The options of these polls as rows, in display order, by poll id (one query; none
    without polls). A poll's options read again unchanged are the rows made before
    (core.rows.Kept): shared, not to be changed."""
    if not poll_ids:
        return {}
    fetched: dict[str, list] = {poll_id: [] for poll_id in poll_ids}
    order = ", ".join(_OPTION_ROW.column(name) for name in OPTION_ORDER)
    with statement_cursor() as cursor:
        cursor.execute(
            f"SELECT {_OPTION_ROW.columns()} FROM {_OPTION_ROW.table} "
            f"WHERE {_OPTION_ROW.column('poll')} IN ({', '.join(['%s'] * len(fetched))}) ORDER BY {order}",
            list(fetched),
        )
        for values in cursor.fetchall():
            fetched[values[_OPTION_POLL]].append(values)
    read = _OPTION_ROW.reader()

    def make(values):
        return tuple(read(option) for option in values)

    made = _OPTIONS_KEPT.made([(poll_id, tuple(values)) for poll_id, values in fetched.items()], make)
    return dict(zip(fetched, made, strict=True))


def poll_row(space_id: str, poll_id: str):
    """The space's live poll `poll_id` as a row for `presenters.poll` (`organizer` and
    `participant_count` included; options: `options_of`); None when it is deleted, another
    space's or unknown. One query."""
    polls = _read_polls(_one_sql(connection.vendor), [poll_id, space_id])
    return polls[0] if polls else None


def poll_page(space_id: str, *, status: str | None, after: tuple[datetime, str] | None, count: int) -> list:
    """Up to `count` of the space's live polls, newest first (`created_at`, then `id`,
    descending), after the `(created_at, id)` of `after`, with `status` if given, as rows
    for `presenters.poll` (`organizer` and `participant_count` included; options:
    `options_of`). One query (`live_polls` and `keyset_page` give the same polls through the
    ORM)."""
    params: list = [space_id]
    if status:
        params.append(status)
    if after is not None:
        at = connection.ops.adapt_datetimefield_value(after[0])
        params += [at, after[1]]
    return _read_polls(_page_sql(connection.vendor, bool(status), after is not None, count), params)


_TALLY = Table(Tally, "t")


@functools.cache
def _tallies_sql(vendor: str) -> str:
    return (
        f"SELECT {_TALLY.column('option')}, {_TALLY.column('type')}, {_TALLY.column('count')} FROM {_TALLY.table} "
        f"WHERE {_TALLY.column('poll')} = %s AND {_TALLY.column('count')} > 0"
    )


def tallies_of(poll_id: str) -> list[tuple[str, str, int]]:
    """`(option id, vote type, count)` of each of the poll's tallies above zero, in no
    particular order: what `Tally.objects.filter(poll_id=poll_id, count__gt=0)
    .values_list("option_id", "type", "count")` gives. One query."""
    with statement_cursor() as cursor:
        cursor.execute(_tallies_sql(connection.vendor), [poll_id])
        return cursor.fetchall()


_PARTICIPANT = Table(Participant, "p")


PARTICIPANT_FIELDS = ("id", "name", "email", "created_at")


def _instant_sql(vendor: str, column: str) -> str:
    """SQL giving the text `core.formats.instant` makes of the timestamp in `column`
    (`YYYY-MM-DDTHH:MM:SS.sssZ`, milliseconds cut, not rounded). SQLite keeps Django's text
    of the naive UTC value, `YYYY-MM-DD HH:MM:SS` with `.ffffff` only when there are
    microseconds (its own `strftime('%f')` would round them); PostgreSQL's `MS` cuts."""
    if vendor == "postgresql":
        return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""
    padded = f"({column} || '.000')"
    return f"substr({padded}, 1, 10) || 'T' || substr({padded}, 12, 12) || 'Z'"


@functools.cache
def _participants_sql(vendor: str) -> str:
    column = _PARTICIPANT.column
    return (
        f"SELECT {column('id')}, {column('name')}, {column('email')}, {_instant_sql(vendor, column('created_at'))}, "
        f"{column('answers')} FROM {_PARTICIPANT.table} WHERE {column('poll')} = %s "
        f"ORDER BY {column('created_at')}, {column('id')}"
    )


def participant_answers(poll_id: str) -> list[tuple]:
    """Every participant of the poll `poll_id`, oldest first, as rows `(id, name, email,
    createdAt, answers)`: `createdAt` is the response's text of the instant (made by the
    database: in Python, parsing and formatting 2,000 timestamps took a fifth of the list's
    time); `answers` holds a character per `yes` and `ifNeedBe` vote (ANSWER_OFFSETS), in no
    particular order (`Participant.answers`, kept with the votes). One query reading one row
    per participant, never a vote."""
    with statement_cursor() as cursor:
        cursor.execute(_participants_sql(connection.vendor), [poll_id])
        return cursor.fetchall()
