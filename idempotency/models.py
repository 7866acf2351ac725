from django.db import models
from django.utils import timezone

from spaces.models import Space


class IdempotencyRecord(models.Model):
    """The first successful answer to a create sent with an `Idempotency-Key`, kept for
    24 hours so that a retry with the same key and body gets it again instead of making
    a second resource. One per key and space: keys of different spaces never meet."""

    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    operation = models.CharField(max_length=64, help_text="The operation the key was first used for, e.g. createPoll.")
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the operation and the canonical JSON body.")
    status_code = models.PositiveSmallIntegerField(default=0)
    response = models.TextField(default="", help_text="The response body as sent (JSON).")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "key"], name="idempotency_space_key")]

    def __str__(self):
        return f"{self.operation} {self.key} ({self.space_id})"
