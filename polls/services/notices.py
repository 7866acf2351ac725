"""What the organizer is e-mailed about: participants' answers, changed answers and comments
are noted (`Activity`) beside the change while the poll's `notify_organizer` is on; the
notification job takes them at most once per NOTIFY_EVERY per poll (the first after a quiet
spell at once). The e-mail itself is the pages' (pages/notices.py)."""

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from polls.models import Activity, Poll
from polls.services.lifecycle import locked_poll

NOTIFY_EVERY = timedelta(minutes=5)


def note_activity(poll: Poll, kind: str, name: str, at: datetime) -> None:
    """Called inside the change's transaction, with the locked poll."""
    if poll.notify_organizer:
        Activity.objects.create(poll=poll, kind=kind, name=name, at=at)


@transaction.atomic
def set_notifications(*, poll: Poll, on: bool) -> Poll:
    """Switch the organizer's e-mails about answers and comments on or off (no event: not
    part of the API); switched off, what was noted and not yet sent is dropped."""
    poll = locked_poll(poll)
    if poll.notify_organizer != on:
        poll.notify_organizer = on
        poll.save(update_fields=["notify_organizer"])
    if not on:
        Activity.objects.filter(poll=poll).delete()
    return poll


def _due(polls, now: datetime):
    return polls.filter(Q(notified_at__isnull=True) | Q(notified_at__lte=now - NOTIFY_EVERY), notify_organizer=True,
                        deleted_at__isnull=True)


def polls_to_notify(now: datetime) -> list[str]:
    """Ids of the polls with noted activity whose organizer may be e-mailed now."""
    noted = Activity.objects.order_by().values("poll_id").distinct()
    return list(_due(Poll.objects.filter(pk__in=noted), now).values_list("pk", flat=True))


@transaction.atomic
def take_activity(*, poll_id: str, now: datetime) -> tuple[Poll, list[Activity]] | None:
    """The poll (organizer loaded) and what was noted since its last e-mail, deleted and the
    e-mail's time kept; None when it is not due (re-checked under the poll's lock). The
    caller stores the e-mail in the same transaction, so nothing taken is lost."""
    poll = _due(Poll.objects.select_for_update(), now).filter(pk=poll_id).first()
    if poll is None:
        return None
    noted = list(Activity.objects.filter(poll=poll))
    if not noted:
        return None
    Activity.objects.filter(pk__in=[item.pk for item in noted]).delete()
    poll.notified_at = now
    poll.save(update_fields=["notified_at"])
    poll = Poll.objects.select_related("organizer").get(pk=poll.pk)
    return poll, noted
