"""The JSON answers of the private API: its shapes, field for field, built from the rows and
values of `polls.selectors` and `polls.services` (the same ones `/v1` presents).

What the private API shows differently from `/v1`: `timezone` (not `timeZone`); `user`
(`name`, `image`) for the organizer; every option as `startTime` and `duration`, a date
option as midnight UTC of its date with `duration` 0; no `kind`, settings, `updatedAt`
or conferencing; `participantCount` on listed polls only; `votes` in the results lists only
the vote types someone chose; participants without their availability."""

from typing import Annotated, TypedDict

from django.conf import settings

from core.api.shapes import Choices, Count, Deleted, Instant, envelope
from core.formats import instant
from polls import models
from polls.selectors import PollResults

STATUS = Choices(models.Poll.Status.values)


class PollOption(TypedDict):
    """An option of a poll: a time slot, or a whole day (`duration` 0, `startTime` midnight UTC of the date)."""

    id: str
    startTime: Instant
    duration: Annotated[int, "Duration in minutes. 0 indicates an all-day option."]


class PollUser(TypedDict):
    """The poll organizer."""

    name: str
    image: Annotated[str | None, "Avatar URL, or null."]


class Poll(TypedDict):
    """A poll."""

    id: str
    title: str
    description: str | None
    location: str | None
    timezone: Annotated[str | None, "IANA time zone of the poll; null for floating times and date polls."]
    status: Annotated[str, STATUS]
    createdAt: Instant
    user: Annotated[PollUser, "The poll organizer."]
    options: list[PollOption]
    adminUrl: str
    inviteUrl: str


class ListPollItem(Poll):
    """A poll in the list, with its number of participants."""

    participantCount: Annotated[Count, "Number of participants who have responded to the poll."]


def option_of(shown: dict) -> PollOption:
    """An option as `Poll.shown_options` holds it, as the private API shows it: a date is an
    all-day option (midnight UTC, duration 0)."""
    if "date" in shown:
        return {"id": shown["id"], "startTime": f"{shown['date']}T00:00:00.000Z", "duration": 0}
    return {"id": shown["id"], "startTime": shown["startTime"], "duration": shown["duration"]}


def poll(row, organizer, *, status: str | None = None) -> Poll:
    """A poll (an instance, or a row of `selectors.list_polls`) with its organizer; `status`:
    the status after a change, when it is newer than the row's."""
    return {
        "id": row.id,
        "title": row.title,
        "description": row.description,
        "location": row.location,
        "timezone": row.time_zone,
        "status": status or row.status,
        "createdAt": instant(row.created_at),
        "user": {
            "name": organizer.name,
            "image": f"{settings.CDN_URL}/{organizer.image.lstrip('/')}" if organizer.image else None,
        },
        "options": [option_of(option) for option in row.shown_options],
        "adminUrl": f"{settings.APP_URL}/poll/{row.id}",
        "inviteUrl": f"{settings.APP_URL}/invite/{row.id}",
    }


def list_item(row, organizer) -> ListPollItem:
    return {**poll(row, organizer), "participantCount": row.participant_count}


# --- Results --------------------------------------------------------------------------------


class VoteCount(TypedDict):
    """How many participants chose one vote type for an option."""

    type: Annotated[str, "The vote type (e.g. yes, ifNeedBe, no)."]
    count: Count


class OptionResult(TypedDict):
    """An option with its counts."""

    id: str
    startTime: Instant
    duration: Annotated[Count, "Duration in minutes. 0 indicates an all-day option."]
    votes: Annotated[list[VoteCount], "The vote types someone chose for this option, with their counts."]
    score: Annotated[Count, "Ranking score: (yes + ifNeedBe) * 1000 + yes."]
    isTopChoice: Annotated[bool, "Whether this option has the highest score (above 0)."]


class Results(TypedDict):
    """Counts per option of one poll, without individual participant data."""

    pollId: str
    status: Annotated[str, STATUS]
    participantCount: Count
    options: list[OptionResult]
    highScore: Annotated[Count, "Highest score across all options."]


def results(counted: PollResults) -> Results:
    row = counted.poll
    shown = models.shown_options(row.kind, [result.option for result in counted.options])
    return {
        "pollId": row.id,
        "status": row.status,
        "participantCount": row.participant_count,
        "options": [
            {
                **option_of(option),
                "votes": [{"type": kind, "count": count} for kind, count in result.votes if count],
                "score": result.score,
                "isTopChoice": result.is_top_choice,
            }
            for result, option in zip(counted.options, shown, strict=True)
        ],
        "highScore": counted.high_score,
    }


# --- Participants ---------------------------------------------------------------------------


class Participant(TypedDict):
    """A response to a poll."""

    id: str
    name: str
    email: str | None
    createdAt: Instant


class Participants(TypedDict):
    """A poll's participants, oldest first."""

    pollId: str
    participants: list[Participant]


def participants(poll_id: str, rows) -> Participants:
    """`rows`: the participants (`id`, `name`, `email`, `created_at`), oldest first."""
    return {
        "pollId": poll_id,
        "participants": [
            {"id": row.id, "name": row.name, "email": row.email, "createdAt": instant(row.created_at)} for row in rows
        ],
    }


# --- The answers ----------------------------------------------------------------------------

GET_POLL = envelope("GetPollResponse", Poll)
CREATE_POLL = envelope("CreatePollResponse", Poll)
PATCH_POLL = envelope("PatchPollResponse", Poll)
LIST_POLLS = envelope("ListPollsResponse", ListPollItem, many=True, paginated=True)
RESULTS = envelope("GetPollResultsResponse", Results)
PARTICIPANTS = envelope("GetPollParticipantsResponse", Participants)
DELETED = envelope("DeletePollResponse", Deleted)
