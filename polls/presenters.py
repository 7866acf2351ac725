"""The JSON answers of `/v1/polls`: each shape once, as a `TypedDict` (its OpenAPI component
is generated from it, see core/api/shapes.py) with the plain function that builds it from
the rows and values of `polls.selectors`."""

from typing import Annotated, NotRequired, TypedDict

from django.conf import settings

from core.api.shapes import CalendarDate, Choices, Count, Deleted, Instant, Number, Url, envelope, one_of
from core.formats import instant
from polls import models
from polls.rules import CONFERENCING_PROVIDERS
from polls.selectors import Availability, ParticipantRow, PollResults
from polls.spans import span_data

# --- Polls ----------------------------------------------------------------------------------


class Conferencing(TypedDict):
    """The video call: `{"provider": "none"}` when there is none."""

    provider: Annotated[str, Choices(CONFERENCING_PROVIDERS)]
    label: NotRequired[Annotated[str, "Only with provider `custom`."]]
    uri: NotRequired[Annotated[str, "Only with provider `custom`, when set."]]


class Organizer(TypedDict):
    """The member who organises the poll."""

    id: str
    name: str
    email: str
    image: Annotated[str | None, "Avatar URL on the CDN, or null."]


class DateOption(TypedDict):
    """An option of a date poll."""

    id: str
    date: Annotated[CalendarDate, "Floating calendar date; never convert it through a time zone."]


class TimeOption(TypedDict):
    """An option of a time poll."""

    id: str
    startTime: Annotated[Instant, "UTC instant, `YYYY-MM-DDTHH:MM:SS.sssZ`."]
    duration: Annotated[int, "Minutes."]


class Poll(TypedDict):
    """A scheduling poll. Every field is present on every poll response."""

    id: Annotated[str, "12 characters `[A-Za-z0-9]`."]
    title: str
    description: str | None
    location: str | None
    conferencing: Conferencing
    timeZone: Annotated[str | None, "IANA name; null for floating times and date polls."]
    status: Annotated[str, Choices(models.Poll.Status.values)]
    kind: Annotated[str, Choices(models.Poll.Kind.values)]
    createdAt: Instant
    updatedAt: Annotated[Instant, "Changes whenever anything readable about the poll changes, responses included."]
    organizer: Organizer
    requireEmail: bool
    hideParticipants: bool
    hideScores: bool
    disableComments: bool
    allowTentativeVotes: bool
    participantCount: int
    options: Annotated[
        list[one_of("Option", DateOption, TimeOption)],
        "Date options (date polls) or time options (time polls), sorted.",
    ]
    adminUrl: Url
    inviteUrl: Url



def poll(row, organizer) -> Poll:
    """A poll (an instance, or a row of `selectors.list_polls`) with its organizer (an
    instance, or a row of `selectors.organizers`)."""
    created_at = instant(row.created_at)
    return {
        "id": row.id,
        "title": row.title,
        "description": row.description,
        "location": row.location,
        "conferencing": row.conferencing,
        "timeZone": row.time_zone,
        "status": row.status,
        "kind": row.kind,
        "createdAt": created_at,
        "updatedAt": created_at if row.updated_at == row.created_at else instant(row.updated_at),
        "organizer": {
            "id": organizer.id,
            "name": organizer.name,
            "email": organizer.email,
            "image": f"{settings.CDN_URL}/{organizer.image.lstrip('/')}" if organizer.image else None,
        },
        "requireEmail": row.require_email,
        "hideParticipants": row.hide_participants,
        "hideScores": row.hide_scores,
        "disableComments": row.disable_comments,
        "allowTentativeVotes": row.allow_tentative_votes,
        "participantCount": row.participant_count,
        "options": row.shown_options,
        "adminUrl": f"{settings.APP_URL}/poll/{row.id}",
        "inviteUrl": f"{settings.APP_URL}/invite/{row.id}",
    }


# --- Results --------------------------------------------------------------------------------


class VoteCount(TypedDict):
    """How many participants gave one vote type for an option."""

    type: Annotated[str, "Open set: `yes`, `ifNeedBe`, `no`, and possibly others; tolerate unknown types."]
    count: Count


class ResultFields(TypedDict):
    """The counted part of a result option."""

    votes: Annotated[
        list[VoteCount],
        "Dense: every vote type the poll offers, in display order (`yes`, `ifNeedBe`, `no`, then any other type in "
        "order of first appearance), with `count` 0 where nobody chose it. `ifNeedBe` is left out when the poll does "
        "not allow tentative votes and nobody holds one.",
    ]
    score: Annotated[
        Number,
        "Opaque ranking number: sorting by it orders options from best to worst. Do not decode it, compare it across "
        "polls or threshold it.",
    ]
    isTopChoice: Annotated[bool, "The option has the highest score and somebody can make it."]


class DateResultOption(DateOption, ResultFields):
    """A date option with its counts."""


class TimeResultOption(TimeOption, ResultFields):
    """A time option with its counts."""


class Results(TypedDict):
    """Counts per option of one poll, without individual participant data."""

    pollId: str
    kind: Annotated[str, Choices(models.Poll.Kind.values)]
    status: Annotated[str, Choices(models.Poll.Status.values)]
    participantCount: Count
    options: Annotated[list[one_of("ResultOption", DateResultOption, TimeResultOption)], "In the poll's option order."]
    highScore: Annotated[Number, "The highest `score` among the options; 0 without options."]


def results(counted: PollResults) -> Results:
    row = counted.poll
    options = []
    shapes = models.shown_options(row.kind, [result.option for result in counted.options])
    for result, shaped in zip(counted.options, shapes, strict=True):
        shaped["votes"] = [{"type": kind, "count": count} for kind, count in result.votes]
        shaped["score"] = result.score
        shaped["isTopChoice"] = result.is_top_choice
        options.append(shaped)
    return {
        "pollId": row.id,
        "kind": row.kind,
        "status": row.status,
        "participantCount": row.participant_count,
        "options": options,
        "highScore": counted.high_score,
    }


# --- Participants ---------------------------------------------------------------------------


class AvailabilitySpan(TypedDict):
    """A time the participant can make: one per option answered `yes` or `ifNeedBe`."""

    start: Annotated[Instant, "Inclusive. For an all-day span, 00:00:00.000Z of the date."]
    end: Annotated[Instant, "Exclusive. For an all-day span, 00:00:00.000Z of the next date."]
    allDay: Annotated[bool, "A whole calendar day: read the date from `start`."]
    modifiers: Annotated[
        list[str], "Open set. `ifNeedBe`: can make it but would rather not. An unrecognised modifier still means available."
    ]


class Participant(TypedDict):
    """A response to a poll."""

    id: str
    name: str
    email: str | None
    createdAt: Instant
    availability: Annotated[
        list[AvailabilitySpan], "Ordered by start; not merged. Options answered `no` or left unanswered are absent."
    ]



class _SharedSpans(dict):
    """Availability -> its JSON, shaped on first use."""

    def __missing__(self, item: Availability) -> AvailabilitySpan:
        shaped = self[item] = {**span_data(item.span), "modifiers": list(item.modifiers)}
        return shaped


def participants(rows: list[ParticipantRow]) -> list[Participant]:
    """Each `Availability` is shared by every participant who gave that vote, and so is its
    JSON: shaped once, not once per participant (2,000 participants make no 2,000 copies)."""
    shape = _SharedSpans().__getitem__
    return [
        {
            "id": participant_id,
            "name": name,
            "email": email,
            "createdAt": instant(created_at),
            "availability": list(map(shape, availability)),
        }
        for participant_id, name, email, created_at, availability in rows
    ]


def participant(row: ParticipantRow) -> Participant:
    return participants([row])[0]


# --- The answers ----------------------------------------------------------------------------

POLL = envelope("PollResponse", Poll)
POLL_LIST = envelope("PollListResponse", Poll, many=True, paginated=True)
RESULTS = envelope("ResultsResponse", Results)
PARTICIPANT_LIST = envelope("ParticipantListResponse", Participant, many=True)
PARTICIPANT = envelope("ParticipantResponse", Participant)
DELETED = envelope("DeletedResponse", Deleted)
