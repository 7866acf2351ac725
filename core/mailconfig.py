"""E-mails written to the console unasked: EMAIL_URL unset (settings.EMAIL_URL_SET) and DEBUG
off. A web process then refuses to start (config/wsgi.py); `runjobs` and Celery's worker,
which send the outbox's e-mails, say so once, loudly, at their start."""

import logging

from django.conf import settings

CONSOLE_UNASKED = (
    "EMAIL_URL is not set: e-mails, their links and addresses included, would be written to the console, beside "
    "the log. Set EMAIL_URL (smtp+tls://user:password@host:587, docs/deploy.md), or EMAIL_URL=consolemail:// to "
    "print them anyway.")


def console_unasked() -> bool:
    return not (settings.EMAIL_URL_SET or settings.DEBUG)


def warn_if_console_unasked() -> None:
    if console_unasked():
        logging.getLogger("service.mail").error(CONSOLE_UNASKED)
