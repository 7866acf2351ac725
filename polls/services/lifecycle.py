"""The poll lifecycle: close, reopen, schedule, cancel, delete and restore; the auto-close
sweep and the purge.

Every change runs in one transaction, locks the poll row first (so concurrent actions on
one poll queue up), refuses a transition the lifecycle table does not allow with
`ServiceError` (nothing changed, nothing recorded), does nothing when the target state
already holds, and otherwise records exactly one event beside the change (`record_change`,
which editing and responses use too)."""

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.errors import ServiceError
from polls.models import Option, Poll
from polls.rules import PURGE_AFTER
from polls.spans import option_span, span_data
from webhooks.services import record_event

# A date option is past once its day is over everywhere; a floating time option gets the
# same grace, since its wall clock may be anywhere.
AUTO_CLOSE_GRACE = timedelta(hours=12)

Status = Poll.Status


def options_past_at(*, kind: str, time_zone: str | None, options) -> datetime | None:
    """The instant from which every option is in the past (None without options): a time
    option has ended; a date option's day plus 12 hours has ended; a floating time option
    (time poll without a time zone) gets the 12 hours too."""
    floating = kind == Poll.Kind.TIME and not time_zone
    # An option's end grows with its day, or with its start for a duration: only the
    # latest day and, per duration, the latest start can end last (one span each, not one
    # per option).
    last_day, last_starts = None, {}
    for option in options:
        day = option.date
        if day is not None:
            if last_day is None or day > last_day:
                last_day = day
            continue
        start, minutes = option.start_time, option.duration
        latest = last_starts.get(minutes)
        if latest is None or start > latest:
            last_starts[minutes] = start
    ends = [option_span(None, start, minutes).end for minutes, start in last_starts.items()]
    if floating:
        ends = [end + AUTO_CLOSE_GRACE for end in ends]
    if last_day is not None:
        ends.append(option_span(last_day, None, None).end + AUTO_CLOSE_GRACE)
    return max(ends, default=None)


def locked_poll(poll: Poll) -> Poll:
    """The poll's current row, locked for this transaction; refused when deleted."""
    current = Poll.objects.select_for_update().filter(pk=poll.pk, deleted_at__isnull=True).first()
    if current is None:
        raise ServiceError(f"poll {poll.pk} does not exist or has been deleted")
    return current


def _refuse(poll: Poll, action: str, allowed: str) -> ServiceError:
    return ServiceError(f"cannot {action} poll {poll.pk}: it is {poll.status} (allowed only when {allowed})")


def record_change(poll: Poll, event: str, *, extra: dict | None = None, **fields) -> Poll:
    """Save `fields` and a new `updatedAt` on the locked poll and record `event`."""
    now = timezone.now()
    for name, value in fields.items():
        setattr(poll, name, value)
    poll.updated_at = now
    poll.save(update_fields=[*fields, "updated_at"])
    record_event(space_id=poll.space_id, type=event, poll_id=poll.pk, extra=extra, at=now)
    return poll


def _move(poll: Poll, action: str, source: str, target: str, event: str, extra: dict | None = None) -> Poll:
    """`source` -> `target` for the locked poll; nothing when `target` holds already."""
    if poll.status == target:
        return poll
    if poll.status != source:
        raise _refuse(poll, action, source)
    return record_change(poll, event, extra=extra, status=target)


@transaction.atomic
def close_poll(*, poll: Poll) -> Poll:
    """open -> closed (`poll.closed`, reason `manual`)."""
    return _move(locked_poll(poll), "close", Status.OPEN, Status.CLOSED, "poll.closed", {"reason": "manual"})


@transaction.atomic
def reopen_poll(*, poll: Poll) -> Poll:
    """closed, scheduled or canceled -> open (`poll.reopened`). Reopened after every option
    passed, it is not closed automatically again until its options change; the organizer's
    deadline (`closes_at`) is cleared."""
    poll = locked_poll(poll)
    if poll.status == Status.OPEN:
        return poll
    held = poll.past_at is not None and poll.past_at <= timezone.now()
    return record_change(poll, "poll.reopened", status=Status.OPEN, scheduled_option=None, auto_close_held=held,
                         closes_at=None)


@transaction.atomic
def schedule_poll(*, poll: Poll, option_id: str) -> Poll:
    """open or closed -> scheduled at one of its options (`poll.scheduled`, `data.event` =
    that option's span)."""
    poll = locked_poll(poll)
    option = Option.objects.filter(poll=poll, pk=option_id).first()
    if option is None:
        raise ServiceError(f"{option_id!r} is not an option of poll {poll.pk}")
    if poll.status == Status.SCHEDULED:
        if poll.scheduled_option_id == option.pk:
            return poll
        raise ServiceError(f"poll {poll.pk} is already scheduled at another option; reopen it to pick a different one")
    if poll.status not in (Status.OPEN, Status.CLOSED):
        raise _refuse(poll, "schedule", "open or closed")
    span = span_data(option_span(option.date, option.start_time, option.duration))
    return record_change(poll, "poll.scheduled", extra={"event": span}, status=Status.SCHEDULED, scheduled_option=option)


@transaction.atomic
def cancel_poll(*, poll: Poll) -> Poll:
    """scheduled -> canceled (`poll.canceled`): the scheduled event is called off."""
    return _move(locked_poll(poll), "cancel", Status.SCHEDULED, Status.CANCELED, "poll.canceled")


@transaction.atomic
def delete_poll(*, poll: Poll) -> None:
    """Soft delete: the poll disappears from the API at once; staff still see it in the
    back office until the purge job removes it after PURGE_AFTER (30 days). Nothing when it is deleted
    already. Like every change, it holds the poll before it reads the time of the change."""
    if Poll.objects.select_for_update().filter(pk=poll.pk, deleted_at__isnull=True).exists():
        now = timezone.now()
        Poll.objects.filter(pk=poll.pk).update(deleted_at=now, updated_at=now)
        record_event(space_id=poll.space_id, type="poll.deleted", poll_id=poll.pk, at=now)


@transaction.atomic
def restore_poll(*, poll: Poll) -> Poll:
    """Undo a delete within the purge period (`poll.restored`, an added event type): the poll
    is back in the API as it was."""
    current = Poll.objects.select_for_update().filter(pk=poll.pk).first()
    if current is None:
        raise ServiceError(f"poll {poll.pk} does not exist (purged?)")
    if current.deleted_at is None:
        return current
    if current.deleted_at <= timezone.now() - PURGE_AFTER:
        raise ServiceError(f"poll {poll.pk} was deleted more than {PURGE_AFTER.days} days ago and is due to be purged")
    return record_change(current, "poll.restored", deleted_at=None)


def _due_for_auto_close(polls, now: datetime):
    return polls.filter(Q(auto_close_held=False, past_at__lte=now) | Q(closes_at__lte=now), status=Status.OPEN,
                        deleted_at__isnull=True)


def close_past_polls() -> list[str]:
    """The auto-close sweep: close (reason `auto`) every open poll whose options are all in
    the past or whose deadline (`closes_at`) has come, each in its own transaction,
    re-checked under the lock. Returns their ids."""
    closed = []
    for poll_id in list(_due_for_auto_close(Poll.objects, timezone.now()).values_list("pk", flat=True)):
        with transaction.atomic():
            poll = _due_for_auto_close(Poll.objects.select_for_update(), timezone.now()).filter(pk=poll_id).first()
            if poll is not None:  # else changed meanwhile
                record_change(poll, "poll.closed", extra={"reason": "auto"}, status=Status.CLOSED)
                closed.append(poll_id)
    return closed


def purge_deleted_polls() -> list[str]:
    """Remove for good the polls deleted more than PURGE_AFTER (30 days) ago, with their options and
    responses (no event: `poll.deleted` was recorded at the delete). One transaction per
    poll. Returns their ids."""
    cutoff = timezone.now() - PURGE_AFTER
    purged = []
    for poll_id in list(Poll.objects.filter(deleted_at__lte=cutoff).values_list("pk", flat=True)):
        with transaction.atomic():
            if Poll.objects.filter(pk=poll_id, deleted_at__lte=cutoff).delete()[0]:
                purged.append(poll_id)
    return purged
