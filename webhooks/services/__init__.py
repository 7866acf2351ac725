"""Webhooks: recording events in the outbox, managing endpoints, and delivering.

Delivery is at least once, whatever crashes:
- an event is recorded in the transaction of its change (`record_event`); when that
  commits, the dispatcher is told (a Celery task, or the embedded loop's wake-up), and
  the sweeper fans out any event it was not told about (`fan_out`);
- each delivery's retry time lives in the database; a worker claims due deliveries in a
  batch (`claim_due`, or `fan_out_and_claim` as it makes them), which gives each a lease;
  it sends them and records each outcome as its attempt ends (`send_many`, `record`;
  the embedded loop records what its senders hand over, `finish`); a worker that dies
  leaves leases that expire, and the deliveries are claimed again: only the attempts it
  was making when it died are sent twice.
Keyword-only, transactional; the back office, `manage.py`, Celery tasks and the embedded
loop call these and nothing else.

- `events`: recording (`record_event`; or `poll_event`, stored with the change, then `announce`);
- `endpoints`: the endpoints and their rules;
- `delivery`: fan-out, claims, attempts, the purge;
- `outcomes`: recording what became of each attempt;
- `pings`: a test ping (queued, or sent now), a delivery sent again.
"""

from webhooks.services.delivery import (
    CLAIM_BATCH,
    USER_AGENT,
    attempt,
    claim_batches,
    claim_due,
    close_abandoned,
    deliver_due,
    fan_out,
    fan_out_all,
    fan_out_and_claim,
    fan_out_and_claim_batch,
    forget_heartbeats,
    heartbeat,
    lease_allows_attempt,
    purge,
    send,
    send_many,
)
from webhooks.services.endpoints import (
    DISABLE_AFTER_FAILURES,
    SECRET_OVERLAP,
    EndpointLimitReached,
    clean_event_types,
    clean_url,
    create_endpoint,
    delete_endpoint,
    disable_endpoint,
    enable_endpoint,
    rotate_secret,
    update_endpoint,
    url_checked_ahead,
)
from webhooks.services.events import announce, poll_event, record_event
from webhooks.services.outcomes import INTERRUPTED, Claim, Result, finish, record
from webhooks.services.pings import queue_ping, resend_delivery, send_ping

__all__ = [
    "CLAIM_BATCH", "DISABLE_AFTER_FAILURES", "INTERRUPTED", "SECRET_OVERLAP",
    "USER_AGENT", "Claim", "EndpointLimitReached", "Result", "announce", "attempt", "claim_batches", "claim_due", "clean_event_types", "clean_url",
    "close_abandoned", "create_endpoint", "delete_endpoint", "deliver_due", "disable_endpoint", "enable_endpoint",
    "fan_out", "fan_out_all", "fan_out_and_claim", "fan_out_and_claim_batch", "finish", "forget_heartbeats", "heartbeat", "lease_allows_attempt", "poll_event", "purge", "queue_ping", "record", "record_event",
    "resend_delivery", "rotate_secret", "send", "send_many", "send_ping", "update_endpoint", "url_checked_ahead",
]
