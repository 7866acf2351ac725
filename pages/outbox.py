"""The pages' outbox: e-mails stored with what they tell (`queue`, in the caller's
transaction) and sent by the periodic job `pages.send-mail` (`runjobs` or Celery beat),
never inside a request. Each e-mail has a plain-text and an HTML part (and an iCalendar
object when it invites). A failed send is logged and retried with a growing wait (1, 2, 4...
minutes, at most an hour) until MAX_ATTEMPTS, then given up with an error in the log."""

import logging
import smtplib
from datetime import timedelta
from email.mime.text import MIMEText

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.utils import timezone, translation
from django.utils.html import linebreaks, urlize

from core.formats import one_line
from pages.models import Mail

logger = logging.getLogger("service.pages")

MAX_ATTEMPTS = 12  # about seven hours of retries
LEASE = timedelta(minutes=5)  # a claimed e-mail is not claimed again before this (its sender died)
BATCH = 100  # e-mails one run sends at most
STOP_AFTER = 3  # failures in a row that end a run
KEEP = timedelta(days=7)  # sent and given-up e-mails are deleted after this


def safe_subject(text: str) -> str:
    """One line (`core.formats.one_line`: a header cannot be split), at most 200 characters."""
    line = one_line(text)
    return line if len(line) <= 200 else line[:199] + "…"


def as_html(text: str) -> str:
    """The HTML part of an e-mail written as plain text: escaped, paragraphs kept, links made
    clickable, in the active language."""
    language = translation.get_language() or settings.LANGUAGE_CODE
    return (f'<!doctype html>\n<html lang="{language}"><body style="font-family: system-ui, sans-serif;">'
            f'{linebreaks(urlize(text, autoescape=True))}</body></html>\n')


def mail(*, to: str, subject: str, text: str, html: str, poll_id: str = "", headers: dict | None = None,
         calendar: str = "") -> Mail:
    """An e-mail for the outbox, not yet stored (`queue` stores one, `queue_all` many)."""
    return Mail(to=to, subject=safe_subject(subject), text=text, html=html, headers=headers or {}, calendar=calendar,
                poll_id=poll_id)


def queue(**fields) -> Mail:
    stored = mail(**fields)
    stored.save()
    return stored


def queue_all(mails: list[Mail]) -> None:
    """Store `mails` (from `mail`) in a few statements, whatever their number."""
    Mail.objects.bulk_create(mails, batch_size=500)


class CalendarMail(EmailMultiAlternatives):
    """An e-mail with an iCalendar object (iMIP, RFC 6047): inline as the last alternative
    (`text/calendar` with its METHOD), where calendar clients look for it, and as the file
    `invite.ics` for those that only show attachments."""

    def __init__(self, *args, calendar: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.calendar = calendar
        self.attach("invite.ics", calendar.encode(), "application/ics")  # bytes: its UTF-8 as it is

    def message(self):
        message = super().message()
        method = next(line.split(":", 1)[1] for line in self.calendar.splitlines() if line.startswith("METHOD:"))
        part = MIMEText(self.calendar, "calendar", "utf-8")
        part.set_param("method", method)
        next(each for each in message.walk() if each.get_content_type() == "multipart/alternative").attach(part)
        return message


def message(mail: Mail) -> EmailMultiAlternatives:
    """The e-mail as it is sent: text, then HTML (multipart/alternative), and the invitation
    when there is one."""
    # Auto-Submitted (RFC 3834): no out-of-office reply to an e-mail no person wrote.
    fields = {"subject": mail.subject, "body": mail.text, "from_email": settings.DEFAULT_FROM_EMAIL, "to": [mail.to],
              "headers": {"Auto-Submitted": "auto-generated", **mail.headers}}
    email = CalendarMail(**fields, calendar=mail.calendar) if mail.calendar else EmailMultiAlternatives(**fields)
    email.attach_alternative(mail.html, "text/html")
    return email


def _claim(mail: Mail, now) -> bool:
    """Take `mail` for this run (compare and set: two runs never send it both)."""
    return bool(Mail.objects.filter(pk=mail.pk, next_attempt_at=mail.next_attempt_at, sent_at__isnull=True,
                                    given_up_at__isnull=True).update(next_attempt_at=now + LEASE))


def send_due() -> dict:
    """Send the e-mails that are due, oldest first, over one connection to the mail server
    (a new one after a failure); {"sent": n, "failed": n}. After STOP_AFTER failures in a
    row the run ends: a server that is down is not waited on once per e-mail, and what is
    left stays due for the next run."""
    now = timezone.now()
    due = list(Mail.objects.filter(sent_at__isnull=True, given_up_at__isnull=True, next_attempt_at__lte=now)
               .order_by("next_attempt_at", "id")[:BATCH])
    counts = {"sent": 0, "failed": 0}
    connection, in_a_row = None, 0
    try:
        for mail in due:
            if in_a_row >= STOP_AFTER:
                break
            if not _claim(mail, now):
                continue
            try:
                if connection is None:
                    connection = get_connection()
                    connection.open()  # held open: the backend's send_messages then keeps it
                if connection.send_messages([message(mail)]) != 1:
                    raise RuntimeError("the backend sent nothing")
            # Any failure to send this e-mail (the server, the network, or the message itself)
            # is one attempt: retried, given up after MAX_ATTEMPTS, never blocking the others.
            except Exception as error:  # noqa: BLE001 - whatever fails, this e-mail only is retried
                counts["failed"] += 1
                in_a_row += 1
                _failed(mail, error)
                _close(connection)
                connection = None
            else:
                counts["sent"] += 1
                in_a_row = 0
                Mail.objects.filter(pk=mail.pk).update(sent_at=timezone.now(), attempts=mail.attempts + 1)
    finally:
        _close(connection)
    return counts


def _close(connection) -> None:
    try:
        if connection is not None:
            connection.close()
    except (smtplib.SMTPException, OSError):  # what closing a broken connection raises
        logger.warning("mail server connection not closed cleanly", exc_info=True)


def _failed(mail: Mail, error: Exception) -> None:
    attempts = mail.attempts + 1
    extra = {"mail_id": mail.pk, "poll_id": mail.poll_id, "attempts": attempts, "error": repr(error)[:300]}
    if attempts >= MAX_ATTEMPTS:
        Mail.objects.filter(pk=mail.pk).update(attempts=attempts, given_up_at=timezone.now())
        logger.error("e-mail given up", extra=extra)
        return
    wait = min(timedelta(minutes=2 ** (attempts - 1)), timedelta(hours=1))
    Mail.objects.filter(pk=mail.pk).update(attempts=attempts, next_attempt_at=timezone.now() + wait)
    logger.warning("e-mail not sent; retried later", extra={**extra, "retry_in_seconds": int(wait.total_seconds())})


def purge() -> int:
    """Forget e-mails sent or given up more than KEEP ago."""
    cutoff = timezone.now() - KEEP
    deleted, _ = Mail.objects.filter(sent_at__lt=cutoff).delete()
    given_up, _ = Mail.objects.filter(given_up_at__lt=cutoff).delete()
    return deleted + given_up
