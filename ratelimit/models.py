from django.core.validators import MinValueValidator
from django.db import models

from spaces.models import Space


class LimitOverride(models.Model):
    """Per-space limits for a customer with a custom plan; an empty field keeps the default
    (`RATELIMIT_PER_MINUTE`, `RATELIMIT_PER_DAY`). Change it through `ratelimit.services`
    (the back office does) so that the Redis store stops using its cached copy at once."""

    space = models.OneToOneField(Space, primary_key=True, on_delete=models.CASCADE, related_name="+")
    per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Requests per minute; empty: the default (RATELIMIT_PER_MINUTE).",
    )
    per_day = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Requests per day; empty: the default (RATELIMIT_PER_DAY).",
    )
    note = models.CharField(max_length=255, blank=True, default="", help_text="Why, e.g. the customer's plan.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "rate-limit override"

    def __str__(self):
        return f"Limits of {self.space_id}"


class Counter(models.Model):
    """The embedded store (no `REDIS_URL`): both windows of one space in one row, so that a
    single upsert checks and counts both atomically (see `ratelimit.stores.DatabaseStore`).
    Instants are Unix milliseconds; the limits are those the latest request met."""

    space = models.OneToOneField(Space, primary_key=True, on_delete=models.CASCADE, related_name="+")
    #: Whether the latest request was counted (False: it was refused with 429).
    last_counted = models.BooleanField(default=True)
    minute_limit = models.PositiveIntegerField()
    minute_start = models.BigIntegerField()
    minute_count = models.PositiveIntegerField()
    day_limit = models.PositiveIntegerField()
    day_start = models.BigIntegerField()
    day_count = models.PositiveIntegerField()

    def __str__(self):
        return f"Counters of {self.space_id}"


class KeyCounter(models.Model):
    """The embedded store's counters of keys that are not spaces (`ratelimit.keyed`: a client
    address, a poll): the same two windows as `Counter`, the limits given by the caller."""

    key = models.CharField(primary_key=True, max_length=200)
    last_counted = models.BooleanField(default=True)
    minute_limit = models.PositiveIntegerField()
    minute_start = models.BigIntegerField()
    minute_count = models.PositiveIntegerField()
    day_limit = models.PositiveIntegerField()
    day_start = models.BigIntegerField(db_index=True)
    day_count = models.PositiveIntegerField()

    def __str__(self):
        return f"Counters of {self.key}"
