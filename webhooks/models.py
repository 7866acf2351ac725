from datetime import timedelta

from django.db import models
from django.utils import timezone

from core.ids import random_id
from spaces.models import Space
from webhooks.targets import MAX_URL_LENGTH

PAYLOAD_VERSION = "2026-09-20"

# The nine event types of the contract, in the order of the spec's table, then the types
# added since (the contract allows new types without a version change; receivers ignore
# unknown ones). An endpoint subscribes to all of them unless told otherwise.
CONTRACT_EVENT_TYPES = (
    "poll.created",
    "poll.updated",
    "poll.closed",
    "poll.reopened",
    "poll.scheduled",
    "poll.deleted",
    "poll.participant.created",
    "poll.participant.updated",
    "poll.participant.deleted",
)
ADDED_EVENT_TYPES = (
    "poll.canceled",  # the scheduled event was called off
    "poll.restored",  # a deleted poll was restored within the purge period
)
EVENT_TYPES = CONTRACT_EVENT_TYPES + ADDED_EVENT_TYPES
# A test ping from the back office: `data: {}`, sent to one endpoint, never retried.
PING = "ping"


class Event(models.Model):
    """The outbox: one row per change, written in the same transaction as the change.

    `body` is the webhook envelope, serialized once at record time, so that every delivery
    and every retry sends the same bytes. `webhooks` knows polls and participants by id only.
    """

    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    # No index of its own: event_space_created leads with it.
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="events", db_index=False)
    type = models.CharField(max_length=64)
    poll_id = models.CharField(max_length=12, db_index=True, help_text="Empty for a test ping.")
    participant_id = models.CharField(max_length=30, null=True, blank=True)
    data = models.JSONField()
    body = models.TextField(editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # Set once the event has been fanned out into deliveries; the sweeper fans out any
    # event still unset (the process stopped between the commit and the dispatch).
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["space", "created_at"], name="event_space_created"),
            # The events still to fan out, oldest first: partial, so it holds only those and gives
            # their order (PostgreSQL cannot take an index's order past a column matched by IS NULL).
            models.Index(fields=["created_at"], name="event_pending", condition=models.Q(dispatched_at__isnull=True)),
        ]

    def __str__(self):
        return f"{self.type} {self.poll_id} ({self.id})"


class Endpoint(models.Model):
    """A receiver of a space's events. The secret signs every request; it is shown once,
    when the endpoint is created, and never displayed again."""

    MAX_PER_SPACE = 5

    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    # No index of its own: endpoint_space_enabled leads with it.
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="webhook_endpoints", db_index=False)
    url = models.CharField("URL", max_length=MAX_URL_LENGTH)
    secret = models.CharField(max_length=64, editable=False)
    # After a rotation the replaced secret keeps signing (a second `v1=`) until this instant.
    previous_secret = models.CharField(max_length=64, blank=True, default="", editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    event_types = models.JSONField(help_text="The subscribed event types (at least one).")
    payload_version = models.CharField(max_length=10, default=PAYLOAD_VERSION, editable=False)
    is_enabled = models.BooleanField("enabled", default=True, editable=False)
    # Events that happen before this instant are never sent to the endpoint: it is the
    # creation time, moved forward when a disabled endpoint is enabled again (no replay).
    enabled_at = models.DateTimeField(default=timezone.now, editable=False)
    disabled_at = models.DateTimeField(null=True, blank=True, editable=False)
    disabled_reason = models.CharField(max_length=200, blank=True, default="", editable=False)
    failure_streak = models.PositiveIntegerField(
        default=0, editable=False, help_text="Failed deliveries in a row; 20 disable the endpoint, a success resets it."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["space", "is_enabled"], name="endpoint_space_enabled")]
        verbose_name = "webhook endpoint"

    def __str__(self):
        return f"{self.url} ({self.id})"

    def signing_secrets(self, now=None) -> list[str]:
        """The secrets that sign a request now: the current one, and the one it replaced
        while that is still within its 24 hours after a rotation."""
        now = now or timezone.now()
        expires = self.previous_secret_expires_at
        if self.previous_secret and expires is not None and expires > now:
            return [self.secret, self.previous_secret]
        return [self.secret]


# The retry schedule, the one source of how often a delivery is tried: the waits after the
# 1st to 5th failed attempt; the attempt after the last wait is the last one (a test ping
# gets one attempt, `max_attempts=1`).
RETRY_DELAYS = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=12),
)
MAX_ATTEMPTS = len(RETRY_DELAYS) + 1


class Delivery(models.Model):
    """One event for one endpoint, tried until it succeeds or runs out of attempts.

    The retry time lives here (`next_attempt_at`), and so does the lease of the worker
    that is sending it (`claimed_until`, `claim_token`): a worker claims a due delivery
    with a conditional UPDATE, so two workers never send the same attempt, and a worker
    that dies leaves a lease that expires, after which the delivery is tried again."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"  # every attempt failed
        CANCELED = "canceled"  # not sent: the endpoint was disabled or the space lost Pro

    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    # No index of its own: delivery_endpoint_recent leads with it.
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Attempts started so far.")
    max_attempts = models.PositiveSmallIntegerField(default=MAX_ATTEMPTS)  # 1 for a ping
    next_attempt_at = models.DateTimeField(null=True, blank=True, help_text="When the next attempt is due.")
    claimed_until = models.DateTimeField(null=True, blank=True)
    claim_token = models.CharField(max_length=30, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ["-created_at", "id"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="delivery_due"),
            models.Index(fields=["endpoint", "-created_at"], name="delivery_endpoint_recent"),
            # The deliveries in a worker's hands (their leases): partial, so it holds those alone
            # (webhooks.services.shares counts them at every claim).
            models.Index(fields=["claimed_until"], name="delivery_claimed", condition=models.Q(claimed_until__isnull=False)),
        ]
        verbose_name_plural = "deliveries"

    def __str__(self):
        return f"{self.event.type} to {self.endpoint.url} ({self.id})"


class Attempt(models.Model):
    """One try of a delivery. Its id is the request's `X-Service-Delivery` header. An
    attempt without `finished_at` is in flight (or its worker died: it is closed as
    interrupted when the delivery is claimed again)."""

    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    # No index of its own: attempt_delivery_started leads with it.
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log", db_index=False)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    succeeded = models.BooleanField(default=False)
    error = models.CharField(max_length=500, blank=True, default="")
    response_excerpt = models.CharField(
        max_length=512, blank=True, default="", help_text="The start of the receiver's answer, for diagnosis."
    )

    class Meta:
        ordering = ["started_at", "id"]
        indexes = [models.Index(fields=["delivery", "started_at"], name="attempt_delivery_started")]

    def __str__(self):
        return f"attempt {self.id} of {self.delivery_id}"


class DispatcherHeartbeat(models.Model):
    """The embedded dispatcher's sign of life: its loop (another process than the web
    workers) updates `beat_at` every HEARTBEAT_SECONDS, and a scrape of `/metrics` reports
    its age (webhooks.metrics). One row per host and process id of a `runjobs`."""

    name = models.CharField(primary_key=True, max_length=100)
    beat_at = models.DateTimeField()

    def __str__(self):
        return f"{self.name}: {self.beat_at:%Y-%m-%d %H:%M:%S}"
