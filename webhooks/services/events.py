"""Recording events in the outbox, in the transaction of the change they describe."""

from datetime import datetime

import orjson
from django.db import transaction
from django.utils import timezone

from core.formats import instant
from webhooks import signals
from webhooks.models import EVENT_TYPES, PAYLOAD_VERSION, Event


def record_event(**fields) -> Event:
    """Record one event, of the fields `poll_event` takes. Call it inside the transaction of
    the change it describes, so the event exists if and only if the change does. Once the
    transaction commits, the dispatcher is told; if that is lost, the sweeper finds the event."""
    event = poll_event(**fields)
    Event.objects.bulk_create([event])
    announce(event)
    return event


def poll_event(
    *,
    space_id: str,
    type: str,
    poll_id: str,
    participant_id: str | None = None,
    extra: dict | None = None,
    at: datetime | None = None,
    fan_out: bool = True,
) -> Event:
    """The event `record_event` records, unsaved: for a change that stores it with its own
    rows in one transaction (`bulk_create`), then calls `announce`. `extra` is merged into
    `data` beside `poll` (and `participant`), e.g. `{"reason": "manual"}`.

    `fan_out=False`: the caller read in this request that the space has no enabled endpoint
    (`webhooks.selectors.has_enabled_endpoint`), so nothing can
    receive the event: it is recorded as fanned out already, to no endpoint (its
    `dispatched_at` is its `created_at`), and `announce` wakes nothing for it. An endpoint
    created or enabled while that request runs may miss it (docs/webhooks.md)."""
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}: add it to webhooks.models.EVENT_TYPES first")
    data = {"poll": {"id": poll_id}}
    if participant_id is not None:
        data["participant"] = {"id": participant_id}
    data.update(extra or {})
    event = new_event(space_id=space_id, type=type, poll_id=poll_id, participant_id=participant_id, data=data, at=at)
    if not fan_out:
        event.dispatched_at = event.created_at
    return event


def announce(event: Event) -> None:
    """Tell the dispatcher about a stored event once its transaction commits (at once
    outside one); nothing for an event recorded as fanned out already (`poll_event`)."""
    if event.dispatched_at is not None:
        return
    transaction.on_commit(lambda: signals.work_waiting.send(sender=Event, event_id=event.id), robust=True)


def new_event(*, space_id: str, type: str, poll_id: str, data: dict, participant_id: str | None = None,
               at: datetime | None = None) -> Event:
    """An unsaved event with its envelope serialized once, the bytes every attempt sends."""
    at = at or timezone.now()
    event = Event(space_id=space_id, type=type, poll_id=poll_id, participant_id=participant_id, data=data,
                  created_at=at)
    # Compact JSON in orjson's C, quicker than json.dumps: the same bytes for the envelope's
    # ASCII ids, types and instants.
    event.body = orjson.dumps(
        {"version": PAYLOAD_VERSION, "id": event.id, "type": type, "createdAt": instant(at), "data": data}
    ).decode()
    return event
