"""The outbox's one signal, sent after the transaction that made the work commits:
`work_waiting(event_id=...)` for a new event, `(delivery_id=...)` for a delivery due now.

The services send it and know nothing of who listens; `webhooks.dispatch`, connected when
the app is ready, is the one receiver and decides what waking up means (a Celery task, or
the embedded loop of this process)."""

from django.dispatch import Signal

work_waiting = Signal()
