"""The organizer's e-mails about answers and comments (`polls.services.notices` notes them):
one e-mail per poll at most every NOTIFY_EVERY, listing what happened since the last, with a
one-click unsubscribe (RFC 8058: `List-Unsubscribe` and `List-Unsubscribe-Post`), in the
language of the organizer page, the times in the poll's zone (else UTC). Queued in the
pages' outbox by the job, in the transaction that takes the activity."""

import logging

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from pages import outbox
from pages.display import valid_zone
from pages.models import OrganizerLanguage
from polls import services as poll_services

logger = logging.getLogger("service.pages")

_SIGNER = signing.Signer(salt="pages.unsubscribe")


def unsubscribe_token(poll_id: str) -> str:
    return _SIGNER.signature(poll_id)


def unsubscribe_token_valid(poll_id: str, token: str) -> bool:
    try:
        _SIGNER.unsign(f"{poll_id}:{token}")
    except signing.BadSignature:
        return False
    return True


def unsubscribe_url(poll_id: str) -> str:
    return f"{settings.APP_URL}/poll/{poll_id}/unsubscribe/{unsubscribe_token(poll_id)}"


def queue_notices() -> int:
    """Queue one e-mail per poll that is due; how many."""
    now = timezone.now()
    queued = 0
    for poll_id in poll_services.polls_to_notify(now):
        with transaction.atomic():
            taken = poll_services.take_activity(poll_id=poll_id, now=now)
            if taken is None:
                continue
            poll, activity = taken
            _queue(poll, activity)
            queued += 1
    return queued


def _queue(poll, activity) -> None:
    """The e-mail in the language of the organizer page (as last used for this poll; else
    LANGUAGE_CODE)."""
    language = OrganizerLanguage.objects.filter(poll=poll).values_list("language", flat=True).first()
    zone = valid_zone(poll.time_zone) or "UTC"  # the times of what happened: the poll's zone
    with translation.override(language or settings.LANGUAGE_CODE), timezone.override(zone):
        _write(poll, activity, zone)


def _write(poll, activity, zone: str) -> None:
    context = {"poll": poll, "activity": activity, "manage_url": f"{settings.APP_URL}/poll/{poll.pk}",
               "unsubscribe_url": unsubscribe_url(poll.pk), "zone": zone}
    answers = sum(1 for item in activity if item.kind != "commented")
    comments = len(activity) - answers
    parts = []
    if answers:
        parts.append(ngettext("%(count)d answer", "%(count)d answers", answers) % {"count": answers})
    if comments:
        parts.append(ngettext("%(count)d comment", "%(count)d comments", comments) % {"count": comments})
    subject = _("“%(title)s”: %(what)s") % {"title": poll.title, "what": ", ".join(parts)}
    url = context["unsubscribe_url"]
    outbox.queue(to=poll.organizer.email, subject=subject, poll_id=poll.pk,
                 text=render_to_string("pages/mail/notice.txt", context),
                 html=render_to_string("pages/mail/notice.html", context),
                 headers={"List-Unsubscribe": f"<{url}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"})
