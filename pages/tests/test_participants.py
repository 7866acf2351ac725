"""The invite page keeps a participant's time zone and private link: the zone remembered in
a cookie through every save, comment and redirect; the edit link e-mailed when an address
is given, and sent anew on request (the old one then stops working); removing an answer
asks first."""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from pages.models import EditToken
from pages.tests.conftest import answer, csrf, poll_row

pytestmark = pytest.mark.django_db

BERLIN = {"kind": "time", "timeZone": "Europe/Berlin", "duration": 30, "options": [{"startTime": "2030-06-03T09:00:00"}]}


def text(response) -> str:
    return response.content.decode()


# --- Time zones -----------------------------------------------------------------------------


def test_the_browsers_zone_from_its_cookie_and_the_polls_without_it(make_poll):
    poll = make_poll(disableComments=False, **BERLIN)
    url = f"/invite/{poll['id']}"
    body = text(Client().get(url))  # no cookie (no JavaScript yet): the poll's zone, named
    assert "09:00–09:30" in body and 'value="Europe/Berlin"' in body
    visitor = Client()
    visitor.cookies["tz"] = "America%2FNew_York"  # as app.js writes it
    body = text(visitor.get(url))
    assert "03:00–03:30" in body and 'value="America/New_York"' in body
    assert '<option value="Asia/Kolkata">' in body and '<option value="Etc/GMT+5">' not in body  # the picker
    visitor.cookies["tz"] = "Etc%2FGMT%2B5"  # not one of the zones offered: the poll's
    assert "09:00–09:30" in text(visitor.get(url))


def test_a_chosen_zone_survives_saving_editing_and_commenting(make_poll):
    poll = make_poll(disableComments=False, **BERLIN)
    url = f"/invite/{poll['id']}"
    client = Client(enforce_csrf_checks=True)
    page = client.get(f"{url}?tz=Asia/Tokyo")
    assert "16:00–16:30" in text(page) and page.cookies["tz"].value == "Asia%2FTokyo"
    option = poll["options"][0]["id"]
    saved = client.post(url, {"csrfmiddlewaretoken": page.context["csrf_token"], "name": "Ada", option: "yes"})
    assert saved.status_code == 302
    assert "16:00–16:30" in text(client.get(saved["Location"]))
    token = saved.cookies[f"answer_{poll['id']}"].value
    edited = client.post(f"{url}/edit/{token}", {"csrfmiddlewaretoken": csrf(client, url), "action": "update",
                                                 "name": "Ada L.", option: "no"})
    assert "16:00–16:30" in text(client.get(edited["Location"]))
    commented = client.post(f"{url}/comments", {"csrfmiddlewaretoken": csrf(client, url), "name": "Ada", "text": "Hi"})
    body = text(client.get(commented["Location"]))
    assert "16:00–16:30" in body and "(Asia/Tokyo)" in body  # the comment's time too


def test_date_options_never_move(make_poll):
    poll = make_poll(options=[{"date": "2030-05-02"}])
    client = Client()
    client.cookies["tz"] = "Pacific%2FKiritimati"
    body = text(client.get(f"/invite/{poll['id']}?tz=Pacific/Pago_Pago"))
    assert "2 May 2030" in body and 'id="tz"' not in body


# --- Removing asks first --------------------------------------------------------------------


def test_removing_an_answer_asks_first(make_poll, client):
    poll = make_poll()
    answer(client, poll, {})
    url = f"/invite/{poll['id']}"
    token = csrf(client, url)
    ask = client.post(url, {"csrfmiddlewaretoken": token, "action": "delete"})
    assert ask.status_code == 200 and "Remove your answer?" in text(ask) and 'name="confirmed" value="yes"' in text(ask)
    assert f'href="{url}#you"' in text(ask)  # "No, keep it"
    assert poll_row(poll).participants.count() == 1
    done = client.post(url, {"csrfmiddlewaretoken": token, "action": "delete", "confirmed": "yes"})
    assert done.status_code == 302 and poll_row(poll).participants.count() == 0


# --- The edit link by e-mail ----------------------------------------------------------------


def link_in(message) -> str:
    return re.search(r"/invite/\S+/edit/[A-Za-z0-9_-]{32}", message.body).group(0)


def test_the_edit_link_is_emailed_when_an_address_is_given(make_poll, client, mailoutbox):
    poll = make_poll(title="Team lunch")
    answer(Client(), poll, {})  # no address, no e-mail
    assert mailoutbox == []
    response = answer(client, poll, {}, name="Ada", email="ada@example.com")
    token = response.cookies[f"answer_{poll['id']}"].value
    (message,) = mailoutbox
    assert message.to == ["ada@example.com"] and "Team lunch" in message.subject
    assert link_in(message) == f"/invite/{poll['id']}/edit/{token}"
    url = f"/invite/{poll['id']}"
    client.post(url, {"csrfmiddlewaretoken": csrf(client, url), "action": "update", "name": "Ada", "email": ""})
    assert len(mailoutbox) == 1  # the address kept: nothing sent again
    client.post(url, {"csrfmiddlewaretoken": csrf(client, url), "action": "update", "name": "Ada",
                      "email": "ada@work.example"})
    assert mailoutbox[-1].to == ["ada@work.example"] and link_in(mailoutbox[-1]).endswith(token)


def ask_for_link(client: Client, poll: dict, email: str):
    url = f"/invite/{poll['id']}"
    return client.post(f"{url}/send-link", {"csrfmiddlewaretoken": csrf(client, url), "email": email})


def test_send_me_my_link_answers_alike_and_ends_the_old_link(make_poll, mailoutbox):
    poll = make_poll()
    old = answer(Client(), poll, {}, name="Ada", email="ada@example.com").cookies[f"answer_{poll['id']}"].value
    mailoutbox.clear()
    known = ask_for_link(Client(enforce_csrf_checks=True), poll, "ADA@example.com")
    unknown = ask_for_link(Client(enforce_csrf_checks=True), poll, "grace@example.com")
    assert known.status_code == unknown.status_code == 302 and known["Location"] == unknown["Location"]
    notice = text(Client().get(known["Location"]))
    assert "If this address answered this poll, a new private link is on its way" in notice
    (message,) = mailoutbox
    assert message.to == ["ADA@example.com"] and "no longer works" in message.body
    new = link_in(message)
    assert Client().get(f"/invite/{poll['id']}/edit/{old}").status_code == 404  # the old link is dead
    assert "You answered as Ada" in text(Client().get(new))
    assert EditToken.objects.count() == 1


def test_send_me_my_link_refuses_a_bad_address_and_is_throttled(make_poll, settings, mailoutbox):
    poll = make_poll()
    answer(Client(), poll, {}, name="Ada", email="ada@example.com")
    mailoutbox.clear()
    bad = ask_for_link(Client(), poll, "not an address")
    assert bad.status_code == 400 and 'id="lost-email"' in text(bad) and "valid email" in text(bad)
    settings.PAGES_SIGN_IN_LIMIT_PER_POLL = (2, 100)  # the sign-in requests' throttle (the bad address counted)
    assert ask_for_link(Client(), poll, "ada@example.com").status_code == 302
    refused = ask_for_link(Client(), poll, "ada@example.com")
    assert refused.status_code == 429 and len(mailoutbox) == 1
    assert answer(Client(), poll, {}, name="Grace").status_code == 302  # answers have windows of their own


def test_send_me_my_link_does_the_same_for_any_address(make_poll, monkeypatch, mailoutbox):
    """The lookup and the new link run after the answer: the request's statements are the
    same whether or not the address answered."""
    from pages import mail

    jobs = []
    monkeypatch.setattr(mail, "in_background", lambda function, *args: jobs.append((function, args)))
    poll = make_poll()
    answer(Client(), poll, {}, name="Ada", email="ada@example.com")
    jobs.clear()
    statements = []
    for email in ("ada@example.com", "grace@example.com"):
        with CaptureQueriesContext(connection) as queries:
            assert Client().post(f"/invite/{poll['id']}/send-link", {"email": email}).status_code == 302
        statements.append([re.sub(r"\b\d{13}\b", "<now>", query["sql"]) for query in queries])  # the counts' instants
    assert statements[0] == statements[1] and len(jobs) == 2
    while jobs:
        function, args = jobs.pop(0)
        function(*args)
    assert [message.to for message in mailoutbox] == [["ada@example.com"]]
