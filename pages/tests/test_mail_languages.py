"""The e-mails sent in the background speak the language of the page behind them: the
organizer's about answers that of the organizer page (as last signed into or run; their
times in the poll's zone), each participant's decision and cancellation that of their invite
page (an answer given elsewhere: the organizer page's). Read as a mail client reads them:
both parts, no English left."""

import email
from datetime import UTC, datetime
from email import policy

import pytest
import time_machine
from django.test import Client
from django.utils import translation

from core.tasks import run_job
from pages.tests.conftest import act, answer, ask_link, link_from
from pages.tests.test_languages import english_left
from polls import services as poll_services
from polls.models import Poll

pytestmark = pytest.mark.django_db


def sign_in(client: Client, poll: dict, email: str, mailoutbox) -> None:
    """conftest's sign_in in any language: the link asked for, opened, and its button pressed."""
    ask_link(client, poll, email)
    path = "/" + link_from(mailoutbox[-1])
    page = client.get(path)
    assert page.status_code == 200
    assert client.post(path, {"csrfmiddlewaretoken": page.context["csrf_token"]}).status_code == 302


def read(message) -> tuple[str, str, str]:
    """(subject, text part, HTML part) as a mail client shows them."""
    mail = email.message_from_bytes(message.message().as_bytes(), policy=policy.default)
    return mail["Subject"], mail.get_body(("plain",)).get_content(), mail.get_body(("html",)).get_content()


def no_english(message, language: str) -> tuple[str, str, str]:
    subject, text, html = read(message)
    for part in (subject, text, html):
        assert not english_left(part, language), (language, english_left(part, language))
    return subject, text, html


def test_the_organizers_notice_in_the_organizer_pages_language(make_poll, organizer_email, mailoutbox):
    poll = make_poll(title="Team lunch", disableComments=False)
    german = Client(HTTP_ACCEPT_LANGUAGE="de")
    sign_in(german, poll, organizer_email, mailoutbox)
    mailoutbox.clear()
    answer(Client(HTTP_ACCEPT_LANGUAGE="fr"), poll, {}, name="Ada")  # a participant's language is theirs alone
    run_job("pages.send-mail")
    [message] = mailoutbox
    subject, text, html = no_english(message, "de")
    assert subject == "„Team lunch“: 1 Antwort" and "Ada hat geantwortet" in text
    assert "<strong>Ada</strong> hat geantwortet" in html

    spanish = Client(HTTP_ACCEPT_LANGUAGE="es")  # another member's session, or the menu's choice
    sign_in(spanish, poll, organizer_email, mailoutbox)
    act(spanish, poll, action="notify", on="yes")
    mailoutbox.clear()
    poll_services.add_comment(poll=Poll.objects.get(pk=poll["id"]), name="Bob", text="Hola")
    Poll.objects.filter(pk=poll["id"]).update(notified_at=None)  # past the 5 minutes
    run_job("pages.send-mail")
    [message] = mailoutbox
    subject, text, _ = no_english(message, "es")
    assert subject == "«Team lunch»: 1 comentario" and "Bob" in text


def test_each_participant_hears_the_decision_in_their_language(make_poll, organizer_email, mailoutbox):
    poll = make_poll(title="Kick-off", kind="time", timeZone="Europe/Berlin", duration=30,
                     options=[{"startTime": "2031-06-02T09:00:00"}, {"startTime": "2031-06-02T10:00:00"}])
    Poll.objects.filter(pk=poll["id"]).update(notify_organizer=False)
    first = poll["options"][0]["id"]
    answer(Client(HTTP_ACCEPT_LANGUAGE="fr"), poll, {first: "yes"}, name="Ada", email="ada@example.com")
    answer(Client(HTTP_ACCEPT_LANGUAGE="es"), poll, {first: "yes"}, name="Bob", email="bob@example.com")
    changed = Client(HTTP_ACCEPT_LANGUAGE="en")
    answer(changed, poll, {first: "yes"}, name="Cy", email="cy@example.com")
    changed.defaults["HTTP_ACCEPT_LANGUAGE"] = "fr"  # Cy changes the answer on a French page: French it is
    answer(changed, poll, {first: "no"}, name="Cy", action="update")
    poll_services.create_response(poll=Poll.objects.get(pk=poll["id"]), name="Dee", email="dee@example.com")
    german = Client(HTTP_ACCEPT_LANGUAGE="de", enforce_csrf_checks=True)
    sign_in(german, poll, organizer_email, mailoutbox)
    act(german, poll, action="schedule", option=first, confirmed="yes", email="yes")
    mailoutbox.clear()
    run_job("pages.send-mail")
    by_address = {message.to[0]: message for message in mailoutbox}
    assert sorted(by_address) == ["ada@example.com", "bob@example.com", "cy@example.com", "dee@example.com"]

    subject, text, html = no_english(by_address["ada@example.com"], "fr")
    assert subject.strip() == "« Kick-off » : lundi 2 juin 2031, 09:00–09:30"  # the zone's time
    assert "Bonjour Ada," in text and "= lundi 2 juin 2031, 07:00–07:30 (UTC)" in text
    assert "<p>Bonjour Ada,</p>" in html and "Voir le sondage</a>" in html
    subject, text, _ = no_english(by_address["bob@example.com"], "es")
    assert subject.strip() == "«Kick-off»: lunes, 2 de junio de 2031, 09:00–09:30" and "Hola, Bob:" in text
    assert "Bonjour Cy," in no_english(by_address["cy@example.com"], "fr")[1]
    _, text, _ = no_english(by_address["dee@example.com"], "de")  # answered elsewhere: the organizer page's
    assert "Hallo Dee," in text and "Juni 2031" in text

    act(german, poll, action="cancel", confirmed="yes", email="yes")
    mailoutbox.clear()
    run_job("pages.send-mail")
    by_address = {message.to[0]: message for message in mailoutbox}
    subject, text, html = no_english(by_address["ada@example.com"], "fr")
    assert "Kick-off" in subject and "Bonjour Ada," in text
    assert "Hola, Bob:" in no_english(by_address["bob@example.com"], "es")[1]


@pytest.mark.parametrize("language", ["de", "fr", "es"])
def test_every_e_mail_in_every_language_of_the_pages(make_poll, organizer_email, mailoutbox, language):
    """Sign-in link, edit link, notice, decision and cancellation: both parts, no English."""
    poll = make_poll(title="Team lunch", disableComments=False)
    organizer = Client(HTTP_ACCEPT_LANGUAGE=language, enforce_csrf_checks=True)
    sign_in(organizer, poll, organizer_email, mailoutbox)
    guest = Client(HTTP_ACCEPT_LANGUAGE=language)
    answer(guest, poll, {}, name="Ada", email="ada@example.com")
    run_job("pages.send-mail")  # the notice
    act(organizer, poll, action="schedule", option=poll["options"][0]["id"], confirmed="yes", email="yes")
    run_job("pages.send-mail")
    act(organizer, poll, action="cancel", confirmed="yes", email="yes")
    run_job("pages.send-mail")
    kinds = ["sign-in", "edit link", "notice", "decision", "cancellation"]
    assert [message.to[0] for message in mailoutbox] == [organizer_email, "ada@example.com", organizer_email,
                                                         "ada@example.com", "ada@example.com"]
    for kind, message in zip(kinds, mailoutbox, strict=True):
        subject, text, html = no_english(message, language)
        assert subject.strip() and "Team lunch" in subject and text.strip() and "<p>" in html, kind
        assert f'<html lang="{language}">' in html, kind  # what a screen reader reads it in
    for message in mailoutbox[2:]:  # the outbox's: no out-of-office replies to them
        assert message.message()["Auto-Submitted"] == "auto-generated"


def test_links_sent_later_by_the_sender_thread_keep_the_pages_language(make_poll, organizer_email, mailoutbox,
                                                                       monkeypatch):
    """The sender thread runs the work after the answer, in no language of its own: each
    e-mail is written in the page's before it is handed over."""
    from pages import mail

    jobs = []
    monkeypatch.setattr(mail, "in_background", lambda function, *args: jobs.append((function, args)))
    poll = make_poll(title="Team lunch")
    french = Client(HTTP_ACCEPT_LANGUAGE="fr")
    answer(french, poll, {}, name="Ada", email="ada@example.com")
    french.post(f"/poll/{poll['id']}/sign-in", {"email": organizer_email})
    with translation.override("en"):  # what the thread speaks
        while jobs:
            function, args = jobs.pop(0)
            function(*args)
    assert len(mailoutbox) == 2
    for message in mailoutbox:
        _, _, html = no_english(message, "fr")
        assert '<html lang="fr">' in html


def test_the_notices_times_are_in_the_polls_zone(make_poll, mailoutbox):
    poll = make_poll(kind="time", timeZone="America/New_York", duration=30,
                     options=[{"startTime": "2031-06-02T09:00:00"}])
    with time_machine.travel(datetime(2030, 1, 7, 15, 5, tzinfo=UTC), tick=False):
        answer(Client(), poll, {}, name="Ada")
        run_job("pages.send-mail")
    [message] = mailoutbox
    _, text, html = read(message)
    assert "10:05 America/New_York  Ada answered" in text and "10:05 America/New_York · <strong>Ada" in html
