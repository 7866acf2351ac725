from django.db import models
from django.utils import timezone

from config.ids import random_id
from spaces.models import Space

PAYLOAD_VERSION = "2026-09-20"


class Event(models.Model):
    """The outbox: one row per change, written in the same transaction as the change.

    `body` is the webhook envelope, serialized once at record time, so that every delivery
    and every retry sends the same bytes. `webhooks` knows polls and participants by id only.
    """

    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="events")
    type = models.CharField(max_length=64)
    poll_id = models.CharField(max_length=12, db_index=True)
    participant_id = models.CharField(max_length=30, null=True, blank=True)
    data = models.JSONField()
    body = models.TextField(editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # Set once the event has been fanned out into deliveries (issue: webhooks).
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["space", "created_at"], name="event_space_created"),
            models.Index(fields=["dispatched_at", "created_at"], name="event_undispatched"),
        ]

    def __str__(self):
        return f"{self.type} {self.poll_id} ({self.id})"
