"""The organizer is e-mailed about answers, changed answers and comments: by the periodic job
(never inside a request), the first after a quiet spell at once, then at most one e-mail per
poll per 5 minutes listing what happened; switched off on the organizer page or by the
one-click unsubscribe link; a failed send is logged and retried."""

import email
from datetime import UTC, datetime, timedelta
from email import policy

import pytest
import time_machine
from django.core.mail.backends.base import BaseEmailBackend
from django.test import Client

from core.tasks import run_job
from pages import outbox
from pages.models import Mail
from pages.tests.conftest import act, answer, poll_row
from polls import services
from polls.models import Activity, Poll

pytestmark = pytest.mark.django_db

T0 = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)


def parsed(message) -> email.message.EmailMessage:
    """The e-mail as a mail client reads it."""
    return email.message_from_bytes(message.message().as_bytes(), policy=policy.default)


def parts(message) -> tuple[str, str]:
    mail = parsed(message)
    return mail.get_body(("plain",)).get_content(), mail.get_body(("html",)).get_content()


def job() -> None:
    run_job("pages.send-mail")  # what Celery beat and runjobs run


def test_the_first_answer_after_a_quiet_spell_is_mailed_at_once_then_batched(signed_in, mailoutbox, organizer_email):
    client, poll = signed_in
    mailoutbox.clear()
    first = poll["options"][0]["id"]
    with time_machine.travel(T0, tick=False):
        guest = Client()
        answer(guest, poll, {first: "yes"}, name="Ada <i>")
        assert mailoutbox == []  # nothing inside the request
        job()
    [message] = mailoutbox
    assert message.to == [organizer_email] and message.subject == "“Team lunch”: 1 answer"
    text, html = parts(message)
    assert "09:00 UTC  Ada <i> answered" in text and f"/poll/{poll['id']}" in text
    assert "<strong>Ada &lt;i&gt;</strong> answered" in html
    mail = parsed(message)
    unsubscribe = mail["List-Unsubscribe"].strip("<>")
    assert f"/poll/{poll['id']}/unsubscribe/" in unsubscribe
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"

    with time_machine.travel(T0 + timedelta(minutes=1), tick=False):
        answer(guest, poll, {first: "no"}, name="Ada <i>", action="update")
        services.add_comment(poll=poll_row(poll), name="Bob", text="Hi")
        job()
    with time_machine.travel(T0 + timedelta(minutes=4, seconds=59), tick=False):
        job()
    assert len(mailoutbox) == 1  # at most one per 5 minutes
    with time_machine.travel(T0 + timedelta(minutes=5), tick=False):
        job()
        job()
    assert len(mailoutbox) == 2
    assert mailoutbox[1].subject == "“Team lunch”: 1 answer, 1 comment"
    text, _ = parts(mailoutbox[1])
    assert "09:01 UTC  Ada <i> changed their answer" in text and "09:01 UTC  Bob commented" in text
    assert "Ada <i> answered" not in text  # only what happened since the last
    assert not Activity.objects.exists()


def test_switched_off_and_on_on_the_organizer_page(signed_in, mailoutbox):
    client, poll = signed_in
    mailoutbox.clear()
    answer(Client(), poll, {}, name="Ada")
    assert act(client, poll, action="notify", on="no").status_code == 302
    assert poll_row(poll).notify_organizer is False and not Activity.objects.exists()  # the pending one dropped
    answer(Client(), poll, {}, name="Bob")
    job()
    assert mailoutbox == []
    assert "E-mail the organizer about answers" in client.get(f"/poll/{poll['id']}").content.decode()
    act(client, poll, action="notify", on="yes")
    answer(Client(), poll, {}, name="Carol")
    job()
    [message] = mailoutbox
    assert "Carol answered" in message.body and "Bob" not in message.body


def test_the_one_click_unsubscribe(signed_in, mailoutbox):
    client, poll = signed_in
    mailoutbox.clear()
    answer(Client(), poll, {}, name="Ada")
    job()
    url = parsed(mailoutbox[0])["List-Unsubscribe"].strip("<>").split("://", 1)[1].split("/", 1)[1]
    page = Client().get("/" + url)
    assert page.status_code == 200 and "Stop e-mails about answers?" in page.content.decode()
    assert poll_row(poll).notify_organizer is True  # opening the link switches nothing off
    assert Client().post("/" + url[:-2] + "xx", "List-Unsubscribe=One-Click",
                         content_type="application/x-www-form-urlencoded").status_code == 404
    other = Client(enforce_csrf_checks=True)  # the mail provider's POST: no cookie, no CSRF token
    done = other.post("/" + url, "List-Unsubscribe=One-Click", content_type="application/x-www-form-urlencoded")
    assert done.status_code == 200 and "No more e-mails about this poll" in done.content.decode()
    assert poll_row(poll).notify_organizer is False
    answer(Client(), poll, {}, name="Bob")
    job()
    assert len(mailoutbox) == 1


class BrokenMailServer(BaseEmailBackend):
    def send_messages(self, messages):
        raise ConnectionRefusedError("no mail server")


def test_a_failed_send_is_logged_and_retried_until_given_up(signed_in, mailoutbox, settings, caplog):
    client, poll = signed_in
    mailoutbox.clear()
    with time_machine.travel(T0, tick=False):
        answer(Client(), poll, {}, name="Ada")
        settings.EMAIL_BACKEND = f"{__name__}.BrokenMailServer"
        job()
    mail = Mail.objects.get()
    assert (mail.attempts, mail.sent_at, mail.next_attempt_at) == (1, None, T0 + timedelta(minutes=1))
    assert "e-mail not sent; retried later" in caplog.text
    with time_machine.travel(T0 + timedelta(seconds=59), tick=False):
        job()
    assert Mail.objects.get().attempts == 1  # not yet due
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    with time_machine.travel(T0 + timedelta(minutes=1), tick=False):
        job()
    [message] = mailoutbox
    assert "Ada answered" in message.body and Mail.objects.get().sent_at == T0 + timedelta(minutes=1)

    settings.EMAIL_BACKEND = f"{__name__}.BrokenMailServer"
    Mail.objects.update(sent_at=None, attempts=outbox.MAX_ATTEMPTS - 1, next_attempt_at=T0)
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        job()
    assert Mail.objects.get().given_up_at is not None and "e-mail given up" in caplog.text
    with time_machine.travel(T0 + timedelta(days=8), tick=False):
        run_job("pages.purge-mail")
    assert not Mail.objects.exists()


def test_answers_from_elsewhere_are_noted_and_subjects_are_one_line(make_poll, mailoutbox):
    poll = make_poll()
    Poll.objects.filter(pk=poll["id"]).update(title="Line one\r\nline\ttwo")  # older data may hold anything
    services.create_response(poll=poll_row(poll), name="Bob")  # as the back office and manage.py answer
    job()
    [message] = mailoutbox
    assert message.subject == "“Line one line two”: 1 answer"
    assert parsed(message)["Subject"] == "“Line one line two”: 1 answer"
