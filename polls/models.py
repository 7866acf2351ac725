from django.db import models
from django.utils import timezone

from core.formats import EMAIL_MAX_LENGTH, instant
from core.ids import poll_id, random_id
from spaces.models import Space, User


def no_conferencing() -> dict:
    return {"provider": "none"}


class Poll(models.Model):
    class Kind(models.TextChoices):
        DATE = "date"
        TIME = "time"

    class Status(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"
        SCHEDULED = "scheduled"
        CANCELED = "canceled"

    id = models.CharField(primary_key=True, max_length=12, default=poll_id, editable=False)
    # No index of its own: poll_space_created leads with it.
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="polls", db_index=False)
    organizer = models.ForeignKey(User, on_delete=models.PROTECT, related_name="organized_polls")
    title = models.CharField(max_length=255)
    description = models.TextField(null=True, blank=True)
    location = models.CharField(max_length=255, null=True, blank=True)
    conferencing = models.JSONField(default=no_conferencing)
    time_zone = models.CharField(max_length=64, null=True, blank=True)
    kind = models.CharField(max_length=4, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    require_email = models.BooleanField(default=False)
    hide_participants = models.BooleanField(default=False)
    hide_scores = models.BooleanField(default=False)
    disable_comments = models.BooleanField(default=True)
    allow_tentative_votes = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="Soft-deleted; purged after 30 days.")
    # Lifecycle (polls.services): the option a scheduled (or canceled) poll was scheduled
    # at, and what the auto-close sweep needs to find due polls with one indexed query.
    scheduled_option = models.ForeignKey(
        "Option", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False,
        help_text="The option picked when the poll was scheduled.",
    )
    past_at = models.DateTimeField(
        null=True, blank=True, editable=False,
        help_text="When every option is in the past; an open poll is closed automatically from then on.",
    )
    participant_count = models.PositiveIntegerField(
        "participants", default=0, editable=False,
        help_text="How many participants the poll has: kept by the services with every response added or removed "
                  "(polls/services/tallies.py), so that reading a poll never counts them.",
    )
    closes_at = models.DateTimeField(
        null=True, blank=True,
        help_text="The organizer's deadline: an open poll is closed automatically from then on (not part of the API).",
    )
    options_changed_at = models.DateTimeField(
        null=True, blank=True, editable=False,
        help_text="When options were last added, changed or removed after the poll was made (not part of the API).",
    )
    notify_organizer = models.BooleanField(
        default=True, help_text="E-mail the organizer about answers and comments (not part of the API).",
    )
    notified_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When the organizer was last e-mailed about answers.",
    )
    auto_close_held = models.BooleanField(
        default=False,
        help_text="Reopened after every option had passed: not closed automatically again until its options change.",
    )
    #: The options as a poll's JSON shows them (`shown_options`), written with the options in
    #: the same transaction (services.create_poll, update_poll): reading a poll, or a page of
    #: polls, reads no option rows.
    shown_options = models.JSONField(
        default=list, editable=False, help_text="The options as the API shows them, in display order.",
    )

    class Meta:
        indexes = [
            # The poll list: a space's polls, newest first (deleted ones, few and purged, are
            # skipped as read). Not keyed on deleted_at: PostgreSQL cannot take an index's order
            # past a column matched by IS NULL. The only index that leads with the space
            # (the foreign key has none of its own, and this one, not partial, serves its
            # lookups): with a narrower one beside it, statistics taken while the space was
            # small made PostgreSQL read all of a grown space's polls through that one and
            # sort them, on every page.
            models.Index(fields=["space", "-created_at", "-id"], name="poll_space_created"),
            models.Index(fields=["space", "status", "-created_at", "-id"], name="poll_space_status_live",
                         condition=models.Q(deleted_at__isnull=True)),
            # The auto-close sweep, and the purge job (deleted polls only: a new poll adds
            # nothing to it).
            models.Index(fields=["status", "past_at"], name="poll_auto_close"),
            models.Index(fields=["status", "closes_at"], name="poll_deadline", condition=models.Q(closes_at__isnull=False)),
            models.Index(fields=["deleted_at"], name="poll_deleted", condition=models.Q(deleted_at__isnull=False)),
            # An option's deletion (SET NULL, and PostgreSQL's check of the foreign key): only
            # scheduled polls have one, so a new poll adds nothing to it.
            models.Index(fields=["scheduled_option"], name="poll_scheduled_option",
                         condition=models.Q(scheduled_option__isnull=False)),
        ]

    def __str__(self):
        return f"{self.title} ({self.id})"


# The display order of a poll's options: by day, or by start and then duration.
OPTION_ORDER = ("date", "start_time", "duration", "id")


def shown_options(kind: str, options) -> list[dict]:
    """What `Poll.shown_options` holds for a poll of `kind` with these options (instances or
    rows with `id`, `date`, `start_time`, `duration`), in display order: `{"id", "date"}`
    (`YYYY-MM-DD`) for a date poll, `{"id", "startTime", "duration"}` for a time poll, the
    start in UTC as `YYYY-MM-DDTHH:MM:SS.sssZ`."""
    if kind == Poll.Kind.DATE:
        return [{"id": option.id, "date": option.date.isoformat()} for option in sorted(options, key=_by_day)]
    return [{"id": option.id, "startTime": instant(option.start_time), "duration": option.duration}
            for option in sorted(options, key=_by_start)]


def _by_day(option):
    return option.date, option.id


def _by_start(option):
    return option.start_time, option.duration, option.id


class Option(models.Model):
    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    # No index of its own: option_poll_order leads with it.
    poll = models.ForeignKey(Poll, on_delete=models.CASCADE, related_name="options", db_index=False)
    date = models.DateField(null=True, blank=True, help_text="Date polls: a floating calendar date.")
    start_time = models.DateTimeField(null=True, blank=True, help_text="Time polls: the start, UTC.")
    duration = models.PositiveIntegerField(null=True, blank=True, help_text="Time polls: minutes.")

    class Meta:
        ordering = list(OPTION_ORDER)
        indexes = [models.Index(fields=["poll", "date", "start_time", "duration"], name="option_poll_order")]

    def __str__(self):
        return str(self.date or self.start_time)


class Participant(models.Model):
    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    # No index of its own: participant_poll_order leads with it.
    poll = models.ForeignKey(Poll, on_delete=models.CASCADE, related_name="participants", db_index=False)
    name = models.CharField(max_length=255)
    email = models.EmailField(max_length=EMAIL_MAX_LENGTH, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    #: The participant's `yes` and `ifNeedBe` votes as tokens naming their options by id
    #: (polls/answers.py): what the participant list shows, kept with the votes in the same
    #: transaction (polls/services/tallies.py) so that the list reads one row per participant,
    #: never its votes.
    answers = models.TextField(default="", blank=True, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["poll", "created_at", "id"], name="participant_poll_order")]

    def __str__(self):
        return self.name


class Vote(models.Model):
    """One participant's answer for one option. `type` is an open set: `yes`, `ifNeedBe`,
    `no`, and whatever older data holds."""

    YES, IF_NEED_BE, NO = "yes", "ifNeedBe", "no"

    # No index of its own: vote_unique leads with it.
    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="votes", db_index=False)
    # No index of its own: vote_option_type leads with it.
    option = models.ForeignKey(Option, on_delete=models.CASCADE, related_name="votes", db_index=False)
    type = models.CharField(max_length=32)

    class Meta:
        constraints = [models.UniqueConstraint("participant", "option", name="vote_unique")]
        indexes = [models.Index(fields=["option", "type"], name="vote_option_type")]

    def __str__(self):
        return f"{self.type}"


class Tally(models.Model):
    """How many votes of one type an option holds, so that results read one row per option
    and type instead of counting every vote. Kept by the response services in the same
    transaction as every change of votes (docs/lifecycle.md, "Tallies"); removing an option
    removes its tallies with its votes. `manage.py polls recount` rebuilds them from the votes."""

    poll = models.ForeignKey(Poll, on_delete=models.CASCADE, related_name="+")
    # No index of its own: tally_unique leads with it.
    option = models.ForeignKey(Option, on_delete=models.CASCADE, related_name="+", db_index=False)
    type = models.CharField(max_length=32)
    count = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint("option", "type", name="tally_unique")]

    def __str__(self):
        return f"{self.type}: {self.count}"


class Comment(models.Model):
    """A comment left on the invite page (when the poll's `disableComments` is false)."""

    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    # No index of its own: comment_poll_order leads with it.
    poll = models.ForeignKey(Poll, on_delete=models.CASCADE, related_name="comments", db_index=False)
    name = models.CharField(max_length=255)
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["poll", "created_at", "id"], name="comment_poll_order")]

    def __str__(self):
        return f"{self.name}: {self.text[:40]}"


class Activity(models.Model):
    """Something a participant did that the organizer is to be e-mailed about (an answer, a
    changed answer, a comment): written beside the change while the poll's
    `notify_organizer` is on, taken (and deleted) by the notification job."""

    class Kind(models.TextChoices):
        ANSWERED = "answered"
        CHANGED = "changed"
        COMMENTED = "commented"

    poll = models.ForeignKey(Poll, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=255)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self):
        return f"{self.name} {self.kind}"
