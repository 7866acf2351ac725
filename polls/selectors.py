"""Reads of polls, shaped as the plain dicts the API returns (no serializers on reads)."""

from django.conf import settings
from django.core import signing
from django.db.models import Count, IntegerField, OuterRef, Prefetch, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils.dateparse import parse_datetime

from config.api.formats import instant
from polls.models import Option, Participant, Poll
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
        .prefetch_related(Prefetch("options", queryset=Option.objects.order_by("date", "start_time", "duration", "id")))
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


class BadCursor(ValueError):
    pass


def _cursor_signer(space: Space) -> signing.Signer:
    # Bound to the space: a cursor issued to one space is rejected in another.
    return signing.Signer(salt=f"polls.cursor.{space.pk}")


def encode_cursor(space: Space, poll: Poll) -> str:
    return _cursor_signer(space).sign_object([poll.created_at.isoformat(), poll.pk])


def decode_cursor(space: Space, cursor: str) -> tuple:
    try:
        created_at, poll_id = _cursor_signer(space).unsign_object(cursor)
        created_at = parse_datetime(created_at)
    except (signing.BadSignature, ValueError, TypeError):
        raise BadCursor()
    if created_at is None or not isinstance(poll_id, str):
        raise BadCursor()
    return created_at, poll_id


def list_polls(space: Space, *, status: str | None, limit: int, cursor: str | None) -> tuple[list[dict], str | None]:
    """One page, newest first (createdAt, then id, descending); keyset paging so that polls
    created or deleted meanwhile never make another poll skip or repeat."""
    polls = live_polls(space).order_by("-created_at", "-id")
    if status:
        polls = polls.filter(status=status)
    if cursor:
        created_at, poll_id = decode_cursor(space, cursor)
        polls = polls.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=poll_id))
    page = list(polls[: limit + 1])
    next_cursor = encode_cursor(space, page[limit - 1]) if len(page) > limit else None
    return [poll_dict(poll) for poll in page[:limit]], next_cursor
