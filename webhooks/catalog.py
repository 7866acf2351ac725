"""What each event type means and what its `data` holds: the registry the OpenAPI
document's `webhooks` section is built from (a test keeps it in step with EVENT_TYPES)."""

from dataclasses import dataclass, field

from webhooks.models import EVENT_TYPES, PING


@dataclass(frozen=True)
class EventType:
    summary: str
    when: str
    participant: bool = False  # `data.participant` = {id}
    extra: dict = field(default_factory=dict)  # further `data` members: name -> JSON Schema (all required)
    poll: bool = True  # `data.poll` = {id}


_INSTANT = {"type": "string", "format": "date-time", "examples": ["2026-12-04T09:00:00.000Z"]}

CATALOG: dict[str, EventType] = {
    "poll.created": EventType("Poll created", "A poll was created (in the app or with `POST /v1/polls`)."),
    "poll.updated": EventType("Poll updated", "Details, options or settings of the poll changed; says that something changed, not what."),
    "poll.closed": EventType(
        "Poll closed",
        "The poll stopped accepting responses.",
        extra={"reason": {"type": "string", "enum": ["manual", "auto"],
                          "description": "`manual`: the organizer closed it; `auto`: every option passed."}},
    ),
    "poll.reopened": EventType("Poll reopened", "A closed (or scheduled, or canceled) poll accepts responses again."),
    "poll.scheduled": EventType(
        "Poll scheduled",
        "The organizer picked an option; the poll stops accepting responses.",
        extra={"event": {
            "type": "object",
            "description": "The picked option's span. All-day: midnight to midnight UTC of its date.",
            "required": ["start", "end", "allDay"],
            "properties": {
                "start": {**_INSTANT, "description": "Inclusive."},
                "end": {**_INSTANT, "description": "Exclusive."},
                "allDay": {"type": "boolean", "description": "A whole calendar day: read the date from `start`."},
            },
        }},
    ),
    "poll.deleted": EventType("Poll deleted", "The poll was deleted; `GET /v1/polls/{pollId}` now answers `POLL_NOT_FOUND`."),
    "poll.participant.created": EventType("Participant created", "Someone responded to the poll.", participant=True),
    "poll.participant.updated": EventType("Participant updated", "A participant changed their name, e-mail or votes.", participant=True),
    "poll.participant.deleted": EventType(
        "Participant deleted",
        "A response was removed; `GET .../participants/{participantId}` now answers `PARTICIPANT_NOT_FOUND`.",
        participant=True,
    ),
    "poll.canceled": EventType("Scheduled poll canceled", "The scheduled event was called off (status `canceled`). An added type."),
    "poll.restored": EventType("Deleted poll restored", "A deleted poll was restored and is back in the API. An added type."),
    PING: EventType("Test ping", "A test ping (`POST /v1/webhooks/{webhookId}/ping`, or an operator): `data` is `{}`. "
                    "Sent to one endpoint, never retried.", poll=False),
}

assert set(CATALOG) == {*EVENT_TYPES, PING}, "describe every event type in webhooks.catalog.CATALOG"
