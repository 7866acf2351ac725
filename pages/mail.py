"""The e-mail the pages send: an organizer's sign-in link (Django's e-mail backend, set by
`EMAIL_URL`; the console by default, so `./bin/serve` prints the link)."""

import logging

from django.conf import settings
from django.core.mail import send_mail

from pages.services import SIGN_IN_VALID
from polls.models import Poll

logger = logging.getLogger("service.pages")


def send_sign_in_link(*, to: str, poll: Poll, token: str) -> None:
    link = f"{settings.APP_URL}/poll/{poll.pk}/sign-in/{token}"
    minutes = int(SIGN_IN_VALID.total_seconds() // 60)
    body = (f"Hello,\n\nsomeone (hopefully you) asked to manage the poll “{poll.title}”.\n"
            f"Open this link within {minutes} minutes to sign in; it works once:\n\n{link}\n\n"
            "If you did not ask for it, ignore this e-mail: nothing happens without the link.\n")
    try:
        send_mail(f"Sign in to manage “{poll.title}”", body, None, [to])
    except Exception:  # an SMTP failure must not change the page's answer
        logger.exception("sign-in e-mail not sent", extra={"poll_id": poll.pk})
