"""The decision reaches the participants: scheduling (with "e-mail the participants", checked
when any gave an address) queues an e-mail per participant with an iCalendar invitation
(METHOD:REQUEST, one UID per poll); calling off sends METHOD:CANCEL with the same UID;
rescheduling a higher SEQUENCE. The e-mails and their calendars are read as a mail client and
a calendar would read them (the `email` package, icalendar's parser)."""

import email
from datetime import UTC, date, datetime
from email import policy

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from icalendar import Calendar

from core.tasks import run_job
from pages.models import Mail
from pages.tests.conftest import act, answer, sign_in
from pages.tests.test_confirm import form_with
from polls.models import Poll

pytestmark = pytest.mark.django_db


def read(message) -> tuple[email.message.EmailMessage, str, str, Calendar]:
    """(the parsed e-mail, its text part, its HTML part, its calendar)."""
    raw = message.message().as_bytes()
    assert all(len(line) <= 998 for line in raw.split(b"\n"))
    mail = email.message_from_bytes(raw, policy=policy.default)
    alternative = next(part for part in mail.walk() if part.get_content_type() == "multipart/alternative")
    kinds = [part.get_content_type() for part in alternative.iter_parts()]
    assert kinds == ["text/plain", "text/html", "text/calendar"]  # inline, where calendar clients look (iMIP)
    ics = list(alternative.iter_parts())[2]
    [attached] = mail.iter_attachments()  # and as a file
    assert (attached.get_content_type(), attached.get_filename()) == ("application/ics", "invite.ics")
    data = ics.get_payload(decode=True)
    assert attached.get_payload(decode=True) == data
    assert all(len(line) <= 75 for line in data.split(b"\r\n")) and data.endswith(b"\r\n")
    cal = Calendar.from_ical(data)
    assert ics.get_param("method") == str(cal["METHOD"])
    return mail, mail.get_body(("plain",)).get_content(), mail.get_body(("html",)).get_content(), cal


def event(cal: Calendar):
    [found] = cal.walk("VEVENT")
    for required in ("UID", "DTSTAMP", "DTSTART", "SEQUENCE", "ORGANIZER", "ATTENDEE", "SUMMARY"):
        assert required in found, required
    assert str(cal["VERSION"]) == "2.0" and "PRODID" in cal
    return found


@pytest.fixture
def time_poll(make_poll, organizer_email, mailoutbox):
    poll = make_poll(title="Kick-off, call", kind="time", timeZone="Europe/Berlin", duration=30, location="Room; 4",
                     options=[{"startTime": "2031-06-02T09:00:00"}, {"startTime": "2031-06-02T10:00:00"}])
    client = Client(enforce_csrf_checks=True)
    sign_in(client, poll, organizer_email, mailoutbox)
    quiet(poll)
    mailoutbox.clear()
    return client, poll


def quiet(poll: dict) -> None:
    """No e-mails to the organizer about answers: only the participants' here."""
    Poll.objects.filter(pk=poll["id"]).update(notify_organizer=False)


def step(client, poll, action: str, **fields):
    page = client.get(f"/poll/{poll['id']}/confirm", {"action": action, **fields}).content.decode()
    return page, form_with(page, {"schedule": "Schedule", "cancel": "Call off the event"}[action])[2]


def test_invite_update_and_cancel_are_one_event(time_poll, mailoutbox, organizer_email):
    client, poll = time_poll
    first, second = (o["id"] for o in poll["options"])
    answer(Client(), poll, {first: "yes"}, name="Ada", email="ada@example.com")
    answer(Client(), poll, {first: "yes"}, name="Bob")  # no address: no e-mail
    answer(Client(), poll, {second: "yes"}, name="Cy <3", email="cy@example.com")
    mailoutbox.clear()

    page, data = step(client, poll, "schedule", option=first)
    assert "E-mail the decision and a calendar invitation to the 2 participants who gave an address" in page
    assert data["email"] == "yes"  # checked
    response = client.post(f"/poll/{poll['id']}/act", data)
    assert response.status_code == 302 and response["Location"].endswith("done=scheduled-invited")
    assert mailoutbox == []  # never inside the request
    run_job("pages.send-mail")
    assert sorted(m.to[0] for m in mailoutbox) == ["ada@example.com", "cy@example.com"]
    mail, text, html, cal = read(next(m for m in mailoutbox if m.to == ["cy@example.com"]))
    assert mail["Subject"].strip() == "“Kick-off, call”: Monday 2 June 2031, 09:00–09:30"
    assert mail["Reply-To"] == organizer_email  # the ORGANIZER of the invitation too
    assert "Hello Cy <3," in text and "Monday 2 June 2031, 09:00–09:30 (Europe/Berlin)" in text
    assert "= Monday 2 June 2031, 07:00–07:30 (UTC)" in text and "Room; 4" in text
    assert "Hello Cy &lt;3," in html and f"/invite/{poll['id']}" in html
    invite = event(cal)
    assert str(cal["METHOD"]) == "REQUEST" and str(invite["STATUS"]) == "CONFIRMED"
    uid = str(invite["UID"])
    assert uid == f"{poll['id']}@localhost" and int(invite["SEQUENCE"]) == 1
    assert invite.decoded("DTSTART") == datetime(2031, 6, 2, 7, 0, tzinfo=UTC)
    assert invite.decoded("DTEND") == datetime(2031, 6, 2, 7, 30, tzinfo=UTC)
    assert str(invite["SUMMARY"]) == "Kick-off, call" and str(invite["LOCATION"]) == "Room; 4"
    assert str(invite["ORGANIZER"]) == f"mailto:{organizer_email}" and str(invite["ATTENDEE"]) == "mailto:cy@example.com"
    downloaded = Calendar.from_ical(Client().get(f"/invite/{poll['id']}/event.ics").content).walk("VEVENT")[0]
    assert (str(downloaded["UID"]), int(downloaded["SEQUENCE"])) == (uid, 1)  # the same event, as latest
    assert downloaded.decoded("DTSTART") == invite.decoded("DTSTART")

    mailoutbox.clear()
    page, data = step(client, poll, "cancel")
    assert "E-mail a cancellation to the 2 participants who got the invitation" in page and data["email"] == "yes"
    assert '<p class="what"><strong>Monday 2 June 2031, 09:00–09:30 (Europe/Berlin)</strong></p>' in page
    assert client.post(f"/poll/{poll['id']}/act", data)["Location"].endswith("done=canceled-mailed")
    run_job("pages.send-mail")
    assert sorted(m.to[0] for m in mailoutbox) == ["ada@example.com", "cy@example.com"]
    mail, text, _, cal = read(mailoutbox[0])
    assert mail["Subject"].strip() == "“Kick-off, call” is called off" and "is called off" in text
    canceled = event(cal)
    assert (str(cal["METHOD"]), str(canceled["STATUS"]), str(canceled["UID"]), int(canceled["SEQUENCE"])) == (
        "CANCEL", "CANCELLED", uid, 2)

    mailoutbox.clear()
    act(client, poll, action="reopen")
    act(client, poll, action="schedule", option=second, confirmed="yes", email="yes")
    run_job("pages.send-mail")
    assert len(mailoutbox) == 2
    _, _, _, cal = read(mailoutbox[0])
    update = event(cal)
    assert (str(cal["METHOD"]), str(update["UID"]), int(update["SEQUENCE"])) == ("REQUEST", uid, 3)
    assert update.decoded("DTSTART") == datetime(2031, 6, 2, 8, 0, tzinfo=UTC)


def test_unchecked_no_address_and_no_invitation_send_nothing(time_poll, mailoutbox):
    client, poll = time_poll
    first = poll["options"][0]["id"]
    answer(Client(), poll, {first: "yes"}, name="Bob")
    mailoutbox.clear()
    page, data = step(client, poll, "schedule", option=first)
    assert "No participant gave an e-mail address." in page and "email" not in data
    act(client, poll, action="schedule", option=first, confirmed="yes", email="yes")
    page, data = step(client, poll, "cancel")
    assert "cancellation" not in page and "email" not in data  # nobody was invited
    act(client, poll, action="cancel", confirmed="yes")
    answer_poll = client.get(f"/poll/{poll['id']}")
    assert answer_poll.status_code == 200
    run_job("pages.send-mail")
    assert mailoutbox == []


def test_a_date_and_a_floating_time(signed_in, make_poll, organizer_email, mailoutbox):
    client, poll = signed_in
    quiet(poll)
    answer(Client(), poll, {}, name="Adä Zoë", email="ada@example.com")
    act(client, poll, action="schedule", option=poll["options"][1]["id"], confirmed="yes", email="yes")
    floating = make_poll(kind="time", duration=60, options=[{"startTime": "2031-06-02T09:00:00"}])
    sign_in(client, floating, organizer_email, mailoutbox)
    quiet(floating)
    answer(Client(), floating, {}, name="Adä Zoë", email="ada@example.com")
    act(client, floating, action="schedule", option=floating["options"][0]["id"], confirmed="yes", email="yes")
    mailoutbox.clear()
    run_job("pages.send-mail")
    by_poll = {read(m)[3].walk("VEVENT")[0]["UID"].split("@")[0]: read(m) for m in mailoutbox}
    _, text, _, cal = by_poll[poll["id"]]
    day = event(cal)
    assert day.decoded("DTSTART") == date(2030, 5, 3) and day.decoded("DTEND") == date(2030, 5, 4)
    assert "Friday 3 May 2030" in text and "(UTC)" not in text
    _, text, _, cal = by_poll[floating["id"]]
    assert event(cal).decoded("DTSTART") == datetime(2031, 6, 2, 9, 0)  # floating: no zone
    assert "Monday 2 June 2031, 09:00–10:00" in text and "(UTC)" not in text


def test_scheduling_and_calling_off_cost_the_same_queries_for_any_number_invited(signed_in, make_poll,
                                                                                   organizer_email, mailoutbox):
    """The invitations are stored in a few statements, not one per participant."""
    client, poll = signed_in
    other = make_poll(title="Bigger lunch")
    sign_in(client, other, organizer_email, mailoutbox)
    for target, people in ((poll, 1), (other, 4)):
        quiet(target)
        for number in range(people):
            answer(Client(), target, {}, name=f"P{number}", email=f"p{number}@example.com")
    counts = {}
    for target in (poll, other):
        option = target["options"][0]["id"]
        data = {"csrfmiddlewaretoken": client.get(f"/poll/{target['id']}").context["csrf_token"], "action": "schedule",
                "option": option, "confirmed": "yes", "email": "yes"}
        with CaptureQueriesContext(connection) as scheduling:
            assert client.post(f"/poll/{target['id']}/act", data)["Location"].endswith("done=scheduled-invited")
        data.update(action="cancel")
        with CaptureQueriesContext(connection) as canceling:
            assert client.post(f"/poll/{target['id']}/act", data)["Location"].endswith("done=canceled-mailed")
        counts[target["id"]] = (len(scheduling), len(canceling))
    assert counts[poll["id"]] == counts[other["id"]]
    assert Mail.objects.filter(poll_id=other["id"]).count() == 8
