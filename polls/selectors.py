"""Reads of polls, shaped as the plain dicts the API returns (no serializers on reads)."""

import re
from datetime import UTC, datetime, time, timedelta
from operator import itemgetter

from django.conf import settings
from django.db.models import Count, IntegerField, OuterRef, Prefetch, Subquery, Value
from django.db.models.functions import Coalesce

from core.formats import instant
from core.paging import keyset_page
from polls.models import Option, Participant, Poll, Vote
from spaces.models import Space


def _participant_count():
    counts = (
        Participant.objects.filter(poll=OuterRef("pk"))
        .order_by()
        .values("poll")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counts, output_field=IntegerField()), Value(0))


def live_polls(space: Space):
    """A space's polls that are not deleted, ready to be shaped by `poll_dict` (two queries:
    the polls with organizer and participant count, then their options)."""
    return (
        Poll.objects.filter(space=space, deleted_at__isnull=True)
        .select_related("organizer")
        .annotate(participant_count=_participant_count())
        .prefetch_related(Prefetch("options", queryset=Option.objects.all()))
    )


def get_poll(space: Space, poll_id: str) -> Poll | None:
    if not (0 < len(poll_id) <= 12 and poll_id.isascii() and poll_id.isalnum()):
        return None  # cannot be a poll id: no query needed
    return live_polls(space).filter(pk=poll_id).first()


def option_dict(kind: str, option: Option) -> dict:
    if kind == Poll.Kind.DATE:
        return {"id": option.id, "date": option.date.isoformat()}
    return {"id": option.id, "startTime": instant(option.start_time), "duration": option.duration}


def poll_dict(poll: Poll, options=None) -> dict:
    """The API's Poll; `options` defaults to the prefetched options."""
    organizer = poll.organizer
    return {
        "id": poll.id,
        "title": poll.title,
        "description": poll.description,
        "location": poll.location,
        "conferencing": poll.conferencing,
        "timeZone": poll.time_zone,
        "status": poll.status,
        "kind": poll.kind,
        "createdAt": instant(poll.created_at),
        "updatedAt": instant(poll.updated_at),
        "organizer": {
            "id": organizer.id,
            "name": organizer.name,
            "email": organizer.email,
            "image": f"{settings.CDN_URL}/{organizer.image.lstrip('/')}" if organizer.image else None,
        },
        "requireEmail": poll.require_email,
        "hideParticipants": poll.hide_participants,
        "hideScores": poll.hide_scores,
        "disableComments": poll.disable_comments,
        "allowTentativeVotes": poll.allow_tentative_votes,
        "participantCount": poll.participant_count,
        "options": [option_dict(poll.kind, option) for option in (poll.options.all() if options is None else options)],
        "adminUrl": f"{settings.APP_URL}/poll/{poll.id}",
        "inviteUrl": f"{settings.APP_URL}/invite/{poll.id}",
    }


# --- The poll list ----------------------------------------------------------------------


def list_polls(space: Space, *, status: str | None, limit: int, cursor: str | None) -> tuple[list[dict], str | None]:
    """One page, newest first (createdAt, then id, descending); keyset paging so that polls
    created or deleted meanwhile never make another poll skip or repeat."""
    polls = live_polls(space)
    if status:
        polls = polls.filter(status=status)
    # Bound to the space: a cursor issued to one space is refused in another.
    page, next_cursor = keyset_page(polls, salt=f"polls.cursor.{space.pk}", limit=limit, cursor=cursor)
    return [poll_dict(poll) for poll in page], next_cursor


# --- Results, participants and availability ----------------------------------------------

AVAILABLE_TYPES = {Vote.YES: [], Vote.IF_NEED_BE: [Vote.IF_NEED_BE]}  # vote type -> span modifiers
_PARTICIPANT_ID = re.compile(r"[a-z0-9]{1,30}")


def option_span(date, start_time, duration) -> tuple[datetime, datetime, bool]:
    """(start, end, allDay) of an option: a date is all day, midnight to midnight UTC; a time
    option runs from its start for its duration. The end is exclusive."""
    if date is not None:
        start = datetime.combine(date, time(), UTC)
        return start, start + timedelta(days=1), True
    return start_time, start_time + timedelta(minutes=duration), False


def span_dict(date, start_time, duration) -> dict:
    start, end, all_day = option_span(date, start_time, duration)
    return {"start": instant(start), "end": instant(end), "allDay": all_day}


def vote_types(allow_tentative: bool, stored: list[str]) -> list[str]:
    """The `votes` order of the results: `yes`, `ifNeedBe` (left out when tentative votes are
    off and nobody holds one), `no`, then any other stored type as `stored` lists them."""
    built_in = [Vote.YES, Vote.IF_NEED_BE, Vote.NO]
    if not allow_tentative and Vote.IF_NEED_BE not in stored:
        built_in.remove(Vote.IF_NEED_BE)
    return built_in + [kind for kind in stored if kind not in (Vote.YES, Vote.IF_NEED_BE, Vote.NO)]


def poll_results(poll: Poll) -> dict:
    """The Results of a poll from `get_poll` (options prefetched), counted by the database in
    one GROUP BY query (option, type) that reads only the (option, type) index of the votes.
    Other vote types than the built-in ones come in order of first appearance reading the
    options in display order (then by name within one option)."""
    options = list(poll.options.all())
    position = {option.id: index for index, option in enumerate(options)}
    rows = (
        Vote.objects.filter(option_id__in=list(position))
        .order_by("option_id", "type")  # the index order: no sort, no temporary table
        .values("option_id", "type")
        .annotate(n=Count("*"))
        .values_list("option_id", "type", "n")
    )
    counts: dict[tuple[str, str], int] = {}
    for option_id, kind, n in sorted(rows, key=lambda row: (position[row[0]], row[1])):
        counts[option_id, kind] = n
    types = vote_types(poll.allow_tentative_votes, list(dict.fromkeys(kind for _, kind in counts)))
    results = []
    for option in options:
        yes = counts.get((option.id, Vote.YES), 0)
        result = option_dict(poll.kind, option)
        result["votes"] = [{"type": kind, "count": counts.get((option.id, kind), 0)} for kind in types]
        result["score"] = (yes + counts.get((option.id, Vote.IF_NEED_BE), 0)) * 1000 + yes
        results.append(result)
    high_score = max((result["score"] for result in results), default=0)
    for result in results:
        result["isTopChoice"] = high_score > 0 and result["score"] == high_score
    return {
        "pollId": poll.id,
        "kind": poll.kind,
        "status": poll.status,
        "participantCount": poll.participant_count,
        "options": results,
        "highScore": high_score,
    }


def _availability(poll: Poll, participants) -> dict[str, list[dict]]:
    """participant id -> spans, ordered by start (then end), for the `yes` and `ifNeedBe`
    votes of the given participants (one query). `no`, unanswered options and vote types
    this service does not know give no span: nothing says the participant can make it.

    A span depends only on the option and the vote, so each is built once and shared by
    every participant who gave that vote (2,000 participants do not make 2,000 copies)."""
    spans: dict[tuple[str, str], tuple[int, dict]] = {}  # (option id, vote type) -> (position, span)
    for position, option in enumerate(poll.options.all()):
        span = span_dict(option.date, option.start_time, option.duration)
        for kind, modifiers in AVAILABLE_TYPES.items():
            spans[option.id, kind] = (position, {**span, "modifiers": modifiers})
    votes = Vote.objects.filter(type__in=AVAILABLE_TYPES).order_by()
    votes = votes.filter(participant__poll=poll) if participants is None else votes.filter(participant__in=participants)
    found: dict[str, list[tuple[int, dict]]] = {}
    for participant_id, option_id, kind in votes.values_list("participant_id", "option_id", "type"):
        found.setdefault(participant_id, []).append(spans[option_id, kind])
    return {participant_id: [span for _, span in sorted(items, key=itemgetter(0))] for participant_id, items in found.items()}


def _participant_dict(row: tuple, availability: dict) -> dict:
    participant_id, name, email, created_at = row
    return {
        "id": participant_id,
        "name": name,
        "email": email,
        "createdAt": instant(created_at),
        "availability": availability.get(participant_id, []),
    }


_PARTICIPANT_FIELDS = ("id", "name", "email", "created_at")


def poll_participants(poll: Poll) -> list[dict]:
    """Every participant of a poll from `get_poll`, oldest first, with availability; two
    queries whatever the number of participants."""
    rows = list(Participant.objects.filter(poll=poll).order_by("created_at", "id").values_list(*_PARTICIPANT_FIELDS))
    availability = _availability(poll, None)
    return [_participant_dict(row, availability) for row in rows]


def poll_participant(poll: Poll, participant_id: str) -> dict | None:
    """One participant of a poll from `get_poll`, or None when it does not exist or belongs
    to another poll (an id that cannot be one needs no query)."""
    if not _PARTICIPANT_ID.fullmatch(participant_id):
        return None
    row = Participant.objects.filter(poll=poll, pk=participant_id).values_list(*_PARTICIPANT_FIELDS).first()
    if row is None:
        return None
    return _participant_dict(row, _availability(poll, [participant_id]))


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
