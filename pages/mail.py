"""The e-mail the pages send: an organizer's sign-in link and a participant's private edit
link (Django's e-mail backend, set by `EMAIL_URL`; the console by default, so `./bin/serve`
prints the link). Each is written in the page's language, before it is handed over.

A request for a link is handled in the background, after the page has answered: whether
the address may manage the poll, the link's row and the e-mail. The request itself does
the same for any address, so neither its answer nor its timing tells a member from an
unknown address, and it never waits on the mail server (a slow or silent SMTP relay would
hold a request slot, EMAIL_TIMEOUT seconds at most). One sender thread per process (a
greenlet under gevent) handles them in turn, with a database connection of its own, closed
after each; a failure is logged. A request not yet handled when its process dies is lost:
the organizer asks for another link."""

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.core.mail import send_mail
from django.db import connections
from django.utils import translation
from django.utils.translation import gettext as _

from core.formats import one_line
from pages import services
from pages.outbox import as_html
from pages.services import SIGN_IN_VALID
from polls.models import Poll

logger = logging.getLogger("service.pages")

_sender: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _forget_sender() -> None:
    global _sender, _lock
    _sender, _lock = None, threading.Lock()  # a forked child starts its own


os.register_at_fork(after_in_child=_forget_sender)


def in_background(function, *args) -> None:
    """Run `function(*args)` in this process's sender thread."""
    global _sender
    with _lock:
        if _sender is None:
            _sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mail")
        _sender.submit(_then_disconnect, function, *args)


def _then_disconnect(function, *args) -> None:
    try:
        function(*args)
    finally:
        connections.close_all()  # the sender thread's own: it holds none between jobs


def request_sign_in_link(*, poll: Poll, email: str) -> None:
    """In the background: a sign-in link e-mailed to `email` if it belongs to someone who
    may manage `poll` (nothing otherwise)."""
    in_background(_sign_in_link, poll, email, translation.get_language())


def _sign_in_link(poll: Poll, email: str, language: str | None) -> None:
    try:
        found = services.request_sign_in(poll=poll, email=email)
    except Exception:  # noqa: BLE001 - the page has answered; the organizer may ask again
        logger.exception("sign-in request failed", extra={"poll_id": poll.pk})
        return
    if found:
        user, token = found
        with translation.override(language):  # the page's, as the request had it
            send_sign_in_link(to=user.email, poll=poll, token=token)


def request_edit_links(*, poll: Poll, email: str) -> None:
    """In the background: new edit links e-mailed to `email` for the answers it gave to
    `poll` (nothing when it gave none)."""
    in_background(_edit_links, poll, email, translation.get_language())


def _edit_links(poll: Poll, email: str, language: str | None) -> None:
    with translation.override(language):  # the page's, as the request had it (kept with the links too)
        try:
            links = services.new_edit_links(poll=poll, email=email)
        except Exception:  # noqa: BLE001 - the page has answered; the participant may ask again
            logger.exception("edit-link request failed", extra={"poll_id": poll.pk})
            return
        send_edit_links(to=email, poll=poll, links=[(p.name, token) for p, token in links], replaced=True)


def send_sign_in_link(*, to: str, poll: Poll, token: str) -> None:
    link = f"{settings.APP_URL}/poll/{poll.pk}/sign-in/{token}"
    minutes = int(SIGN_IN_VALID.total_seconds() // 60)
    # A title stored before control characters were refused must not stop the e-mail: a line
    # break in a header is refused by Django (BadHeaderError).
    title = one_line(poll.title)
    subject = _("Sign in to manage “%(title)s”") % {"title": title}
    body = (_("Hello,\n\nsomeone (hopefully you) asked to manage the poll “%(title)s”.") % {"title": title} + "\n"
            + _("Open this link within %(minutes)d minutes to sign in; it works once:") % {"minutes": minutes}
            + f"\n\n{link}\n\n"
            + _("If you did not ask for it, ignore this e-mail: nothing happens without the link.") + "\n")
    in_background(_send, subject, body, as_html(body), to, poll.pk)  # HTML made here: in this language


def send_edit_links(*, to: str, poll: Poll, links: list[tuple[str, str]], replaced: bool = False) -> None:
    """The private link of each (name, token) in `links`: one e-mail (`replaced`: the links
    sent before stopped working)."""
    if not links:
        return
    subject = _("Your private link to “%(title)s”") % {"title": one_line(poll.title)}
    lines = "\n".join(f"{name}: {settings.APP_URL}/invite/{poll.pk}/edit/{token}" for name, token in links)
    body = (_("Hello,\n\nyou answered the poll “%(title)s”. With this link you can change or remove your answer; "
              "keep it, and share it with no one:") % {"title": poll.title}
            + f"\n\n{lines}\n"
            + ("\n" + _("A link sent before this one no longer works.") + "\n" if replaced else ""))
    in_background(_send, subject, body, as_html(body), to, poll.pk, "edit-link e-mail not sent")


def _send(subject: str, body: str, html: str, to: str, poll_id: str, failure: str = "sign-in e-mail not sent") -> None:
    try:
        # One line: a title stored before control characters were refused must not stop the
        # e-mail (Django refuses a line break in a header: BadHeaderError).
        send_mail(one_line(subject), body, None, [to], html_message=html)
    except Exception:  # noqa: BLE001 - the page has answered; the person may ask again
        logger.exception(failure, extra={"poll_id": poll_id})
