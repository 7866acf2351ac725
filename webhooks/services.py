"""Recording events in the outbox (and, later, delivering them)."""

import json
from datetime import datetime

from django.utils import timezone

from config.api.formats import instant
from webhooks.models import PAYLOAD_VERSION, Event


def record_event(
    *,
    space_id: str,
    type: str,
    poll_id: str,
    participant_id: str | None = None,
    extra: dict | None = None,
    at: datetime | None = None,
) -> Event:
    """Record one event. Call it inside the transaction of the change it describes, so the
    event exists if and only if the change does. `extra` is merged into `data` beside
    `poll` (and `participant`), e.g. `{"reason": "manual"}`."""
    at = at or timezone.now()
    data = {"poll": {"id": poll_id}}
    if participant_id is not None:
        data["participant"] = {"id": participant_id}
    data.update(extra or {})
    event = Event(space_id=space_id, type=type, poll_id=poll_id, participant_id=participant_id, data=data, created_at=at)
    event.body = json.dumps(
        {"version": PAYLOAD_VERSION, "id": event.id, "type": type, "createdAt": instant(at), "data": data},
        separators=(",", ":"),
    )
    event.save(force_insert=True)
    return event
