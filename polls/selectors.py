"""Reads of polls: rows and computed values (counts, scores, availability) for the API's
presenters (`polls.presenters`), the back office and the pages alike. No wire format here:
the JSON shapes, and the URLs they carry, are the presenters'."""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import NamedTuple

from django.db.models import Prefetch

from core.paging import keyset_page
from polls.models import Comment, Option, Participant, Poll, Tally, Vote
from polls.spans import Span, option_span
from spaces.models import Space, User


def live_polls(space: Space):
    """A space's polls that are not deleted, with their organizer (one query)."""
    return Poll.objects.filter(space=space, deleted_at__isnull=True).select_related("organizer")


#: The fields of a poll its JSON shows (`polls.presenters.poll`, the private API's): what the
#: list reads, as rows, with `organizer` the organizer's id.
SHOWN_FIELDS = (
    "id", "organizer", "title", "description", "location", "conferencing", "time_zone", "status", "kind", "created_at",
    "updated_at", "require_email", "hide_participants", "hide_scores", "disable_comments", "allow_tentative_votes",
    "participant_count", "shown_options",
)


def _can_be_poll_id(poll_id: str) -> bool:
    return 0 < len(poll_id) <= 12 and poll_id.isascii() and poll_id.isalnum()


def get_poll(space: Space, poll_id: str) -> Poll | None:
    """The space's live poll with this id, with its organizer (one query), or None. Read by
    its key alone, its space and deletion checked here: the same answer as filtering
    `live_polls`, and a query with one condition is the cheapest for Django to build."""
    if not _can_be_poll_id(poll_id):
        return None  # no query needed
    for poll in Poll.objects.select_related("organizer").filter(pk=poll_id):
        if poll.space_id == space.pk and poll.deleted_at is None:
            return poll
    return None


# --- The poll list ----------------------------------------------------------------------


def list_polls(space: Space, *, status: str | None, limit: int, cursor: str | None) -> tuple[list, str | None]:
    """One page of rows (`SHOWN_FIELDS`, named), newest first (createdAt, then id,
    descending); keyset paging so that polls created or deleted meanwhile never make another
    poll skip or repeat (one query; their organizers: `organizers`). Rows, not instances: a
    page of instances took longer to build than to read."""
    polls = Poll.objects.filter(space=space, deleted_at__isnull=True).values_list(*SHOWN_FIELDS, named=True)
    if status:
        polls = polls.filter(status=status)
    # Bound to the space: a cursor issued to one is refused in another.
    return keyset_page(polls, salt=f"polls.cursor.{space.pk}", limit=limit, cursor=cursor)


def organizers(rows) -> dict[str, tuple]:
    """The organizers of these poll rows as rows (`id`, `name`, `email`, `image`) by id (one
    query; none without rows). Read apart, not joined: with statistics taken while a space
    was small, PostgreSQL planned such a join with a hash and a sort of every poll of the
    space, not the index's order stopped at the page."""
    ids = {row.organizer for row in rows}
    if not ids:
        return {}
    return {user.id: user for user in User.objects.filter(pk__in=ids).values_list("id", "name", "email", "image", named=True)}


# --- Results, participants and availability ----------------------------------------------

#: Vote types that make an availability span, and the span's modifiers.
AVAILABLE_TYPES = {Vote.YES: [], Vote.IF_NEED_BE: [Vote.IF_NEED_BE]}
_PARTICIPANT_ID = re.compile(r"[a-z0-9]{1,30}")


def vote_types(allow_tentative: bool, stored: list[str]) -> list[str]:
    """The `votes` order of the results: `yes`, `ifNeedBe` (left out when tentative votes are
    off and nobody holds one), `no`, then any other stored type as `stored` lists them."""
    built_in = [Vote.YES, Vote.IF_NEED_BE, Vote.NO]
    if not allow_tentative and Vote.IF_NEED_BE not in stored:
        built_in.remove(Vote.IF_NEED_BE)
    return built_in + [kind for kind in stored if kind not in (Vote.YES, Vote.IF_NEED_BE, Vote.NO)]


@dataclass(frozen=True, slots=True)
class OptionResult:
    """One option with its counts: (vote type, count) for every type the poll shows, in
    display order; `score` ranks the options (higher is better)."""

    option: Option
    votes: list[tuple[str, int]]
    score: int
    is_top_choice: bool


@dataclass(frozen=True, slots=True)
class PollResults:
    poll: Poll
    options: list[OptionResult]
    high_score: int


def poll_tallies(poll_id: str) -> list[tuple[str, str, int]]:
    """`(option id, vote type, count)` of the poll's tallies above zero, in no particular
    order (what `poll_results` counts from; one query)."""
    return list(Tally.objects.filter(poll_id=poll_id, count__gt=0).values_list("option_id", "type", "count"))


def poll_results(poll, options: Sequence | None = None, tallies: list | None = None) -> PollResults:
    """The counts of a poll, counted from its tallies: one query reading a row per option and
    vote type, whatever the number of participants. `poll`: from `get_poll`, its options
    read here (one query) unless given (in display order).
    `tallies`: those `poll_tallies` gave for the poll, when already read.
    Other vote types than the built-in ones come in order of first appearance reading the
    options in display order (then by name within one option)."""
    options = list(poll.options.all()) if options is None else options
    position = {option.id: index for index, option in enumerate(options)}
    rows = poll_tallies(poll.id) if tallies is None else tallies
    # Tallies of an option added since the options were read: not counted with them.
    rows = [row for row in rows if row[0] in position]
    counts: dict[tuple[str, str], int] = {}
    for option_id, kind, n in sorted(rows, key=lambda row: (position[row[0]], row[1])):
        counts[option_id, kind] = n
    types = vote_types(poll.allow_tentative_votes, list(dict.fromkeys(kind for _, kind in counts)))
    scored = []
    for option in options:
        yes = counts.get((option.id, Vote.YES), 0)
        votes = [(kind, counts.get((option.id, kind), 0)) for kind in types]
        scored.append((option, votes, (yes + counts.get((option.id, Vote.IF_NEED_BE), 0)) * 1000 + yes))
    high_score = max((score for _, _, score in scored), default=0)
    return PollResults(
        poll=poll,
        options=[OptionResult(option, votes, score, high_score > 0 and score == high_score) for option, votes, score in scored],
        high_score=high_score,
    )


@dataclass(frozen=True, eq=False, slots=True)
class Availability:
    """A time a participant can make: the span of the option at `position` (in display order)
    and the modifiers of the vote (`()` for `yes`, `("ifNeedBe",)`). One object per (option,
    vote type), shared by every participant who gave that vote: compared and hashed by
    identity, so a presenter can shape each once."""

    position: int
    span: Span
    modifiers: tuple[str, ...]


class ParticipantRow(NamedTuple):
    """A participant with the `Availability` of their `yes` and `ifNeedBe` votes, ordered by
    start (then end)."""

    id: str
    name: str
    email: str | None
    created_at: datetime
    availability: list[Availability]


def _availability(poll: Poll, participants: list[str]) -> dict[str, list[Availability]]:
    """participant id -> what they can make, in option order (by start, then end), for the
    `yes` and `ifNeedBe` votes of the given participants (one query). `no`, unanswered options
    and vote types this service does not know give nothing: nothing says the participant can
    make it."""
    shared: dict[tuple[str, str], Availability] = {}  # (option id, vote type) -> its availability
    for position, option in enumerate(poll.options.all()):
        span = option_span(option.date, option.start_time, option.duration)
        for kind, modifiers in AVAILABLE_TYPES.items():
            shared[option.id, kind] = Availability(position, span, tuple(modifiers))
    votes = Vote.objects.filter(type__in=AVAILABLE_TYPES, participant__in=participants).order_by()
    found: dict[str, list[Availability]] = {}
    for participant_id, option_id, kind in votes.values_list("participant_id", "option_id", "type"):
        found.setdefault(participant_id, []).append(shared[option_id, kind])
    for items in found.values():
        items.sort(key=_BY_POSITION)
    return found


_BY_POSITION = attrgetter("position")
_PARTICIPANT_FIELDS = ("id", "name", "email", "created_at")


def participant_rows(poll_id: str) -> list[tuple]:
    """The participants of a live poll (`get_poll`), oldest first, as `(id, name, email,
    created_at, answers)`: their `yes` and `ifNeedBe` answers in one string each
    (`Participant.answers`): one query reading no vote, for the participant list of any size
    (polls/encoding.py)."""
    return list(Participant.objects.filter(poll_id=poll_id).values_list(*_PARTICIPANT_FIELDS, "answers"))


def poll_participant(poll: Poll, participant_id: str) -> ParticipantRow | None:
    """One participant of a poll from `get_poll`, or None when it does not exist or belongs
    to another poll (an id that cannot be one needs no query)."""
    if not _PARTICIPANT_ID.fullmatch(participant_id):
        return None
    row = Participant.objects.filter(poll=poll, pk=participant_id).values_list(*_PARTICIPANT_FIELDS).first()
    if row is None:
        return None
    return ParticipantRow(*row, _availability(poll, [participant_id]).get(participant_id, []))


# --- Operators and the back office -------------------------------------------------------


def find_poll(poll_id: str, *, include_deleted: bool = False) -> Poll | None:
    """Any space's poll by id, for operators (deleted ones only when asked)."""
    polls = Poll.objects.select_related("space")
    if not include_deleted:
        polls = polls.filter(deleted_at__isnull=True)
    return polls.filter(pk=poll_id).first()


def find_participant(participant_id: str) -> Participant | None:
    """A participant of a live poll, for operators, with its votes."""
    return (
        Participant.objects.select_related("poll")
        .prefetch_related("votes")
        .filter(pk=participant_id, poll__deleted_at__isnull=True)
        .first()
    )


def participant_votes(participant: Participant) -> dict[str, str]:
    """option id -> vote type of a participant (uses prefetched votes when there are)."""
    return {vote.option_id: vote.type for vote in participant.votes.all()}


# --- The app's pages -------------------------------------------------------------------


def find_invited_poll(poll_id: str) -> Poll | None:
    """A live poll by id for its invite page (anyone holding the link), with organizer,
    participant count and options like `get_poll`, and the scheduled option; two queries."""
    if not (0 < len(poll_id) <= 12 and poll_id.isascii() and poll_id.isalnum()):
        return None
    return (
        Poll.objects.filter(pk=poll_id, deleted_at__isnull=True)
        .select_related("organizer", "scheduled_option")
        .prefetch_related(Prefetch("options", queryset=Option.objects.all()))
        .first()
    )


@dataclass(frozen=True)
class Answer:
    """A participant and their votes (`{option id: vote type}`); `email` only when asked."""

    id: str
    name: str
    email: str | None
    created_at: datetime
    votes: dict


def participants_with_votes(poll: Poll, *, offset: int, limit: int | None, emails: bool = False) -> list[Answer]:
    """One page of a poll's participants (all from `offset` when `limit` is None), oldest
    first, with their votes; two queries whatever the page size. E-mail addresses only with
    `emails` (the organizer's page), never for participants."""
    fields = ("id", "name", "email" if emails else "poll_id", "created_at")
    rows = Participant.objects.filter(poll=poll).order_by("created_at", "id").values_list(*fields)
    rows = list(rows[offset:offset + limit] if limit is not None else rows[offset:])
    votes: dict[str, dict[str, str]] = {row[0]: {} for row in rows}
    if rows:
        for participant_id, option_id, kind in Vote.objects.filter(participant_id__in=list(votes)).order_by().values_list(
            "participant_id", "option_id", "type"
        ):
            votes[participant_id][option_id] = kind
    return [Answer(pid, name, email if emails else None, created_at, votes[pid]) for pid, name, email, created_at in rows]


def poll_comments(poll: Poll) -> list[Comment]:
    """A poll's comments, oldest first (one query)."""
    return list(Comment.objects.filter(poll=poll).only("id", "name", "text", "created_at"))
