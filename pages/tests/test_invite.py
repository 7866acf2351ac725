"""The invite page over HTTP: what it shows, answering, the edit link, the settings'
effects, and every refusal. Comments: test_invite_comments.py; closed, scheduled and
canceled polls: test_invite_decided.py."""

import hashlib
import re

import pytest
from django.test import Client

from pages.models import EditToken
from pages.tests.conftest import answer, csrf, poll_row, yes
from polls import services as poll_services
from webhooks.models import Event

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return response.content.decode()


def events(poll: dict) -> list[str]:
    return list(Event.objects.filter(poll_id=poll["id"]).order_by("created_at", "id").values_list("type", flat=True))


# --- What the page shows ------------------------------------------------------------------


def test_the_page_shows_the_poll_and_its_options_in_order(make_poll, client):
    poll = make_poll(title="Lunch <script>alert(1)</script>", description="Bring & share", location="Café Nord",
                     options=[{"date": "2030-05-03"}, {"date": "2030-05-02"}])
    page = client.get(f"/invite/{poll['id']}")
    assert page.status_code == 200 and page["Content-Type"] == "text/html; charset=utf-8"
    body = text(page)
    assert "Lunch &lt;script&gt;alert(1)&lt;/script&gt;" in body and "<script>alert" not in body
    assert "Bring &amp; share" in body and "Café Nord" in body and "Owner" in body and "Open" in body
    # Floating calendar dates, in display order, whatever zone is asked for.
    assert body.index("2 May 2030") < body.index("3 May 2030")
    assert "2 May 2030" in text(client.get(f"/invite/{poll['id']}?tz=Pacific/Kiritimati"))


def test_time_options_in_the_polls_zone_or_the_viewers(make_poll, client):
    poll = make_poll(kind="time", timeZone="Europe/Berlin", duration=30, options=[{"startTime": "2030-06-03T09:00:00"}])
    assert "09:00–09:30" in text(client.get(f"/invite/{poll['id']}"))
    body = text(client.get(f"/invite/{poll['id']}?tz=America/New_York"))
    assert "03:00–03:30" in body and 'value="America/New_York"' in body
    body = text(client.get(f"/invite/{poll['id']}?tz=Mars/Olympus"))
    assert "03:00–03:30" in body and "is not a time zone" in body  # the zone chosen before stays
    body = text(Client().get(f"/invite/{poll['id']}?tz=Mars/Olympus"))
    assert "09:00–09:30" in body and "is not a time zone" in body


def test_floating_times_read_as_given(make_poll, client):
    poll = make_poll(kind="time", duration=60, options=[{"startTime": "2030-06-03T18:00:00"}])
    body = text(client.get(f"/invite/{poll['id']}?tz=Asia/Tokyo"))
    assert "18:00–19:00" in body and "no time zone" in body


def test_security_headers_and_no_inline_script(make_poll, client):
    poll = make_poll()
    page = client.get(f"/invite/{poll['id']}")
    assert "script-src 'self'" in page["Content-Security-Policy"] and "unsafe-inline" not in page["Content-Security-Policy"]
    assert page["Referrer-Policy"] == "same-origin" and page["X-Frame-Options"] == "DENY"
    assert not re.search(r"<script(?![^>]*\bsrc=)", text(page)), "inline script"
    assert not re.search(r"\sstyle=", text(page)), "inline style"


def test_unknown_deleted_and_malformed_polls_are_an_html_404(make_poll, api, client):
    poll = make_poll()
    api.delete(f"/v1/polls/{poll['id']}")
    for url in (f"/invite/{poll['id']}", "/invite/nopenopenope", "/invite/" + "x" * 40, f"/invite/{poll['id']}/what",
                "/invite/", "/invite/a%00b"):
        page = client.get(url)
        assert (page.status_code, page["Content-Type"]) == (404, "text/html; charset=utf-8"), url
        assert "Poll not found" in text(page)
        assert page["Content-Security-Policy"]


# --- Answering --------------------------------------------------------------------------


def test_an_answer_creates_a_participant_the_api_shows(make_poll, api, client):
    poll = make_poll()
    first, second = (option["id"] for option in poll["options"])
    response = answer(client, poll, {first: "yes", second: "ifNeedBe"}, name="Ada", email="ada@example.com")
    assert response.status_code == 302 and response["Location"] == f"/invite/{poll['id']}?done=saved#you"
    assert events(poll)[-1] == "poll.participant.created"
    results = api.get(f"/v1/polls/{poll['id']}/results").body["data"]
    assert [(o["votes"][0]["count"], o["votes"][1]["count"]) for o in results["options"]] == [(1, 0), (0, 1)]
    participants = api.get(f"/v1/polls/{poll['id']}/participants").body["data"]
    assert [(p["name"], p["email"]) for p in participants] == [("Ada", "ada@example.com")]
    page = text(client.get(response["Location"]))
    assert "Thank you, your answer is saved." in page and "You answered as Ada" in page
    assert "ada@example.com" not in page  # never shown, not even to its owner


def test_a_blank_option_is_no_answer(make_poll, api, client):
    poll = make_poll()
    answer(client, poll, {poll["options"][0]["id"]: "no"})
    participant = api.get(f"/v1/polls/{poll['id']}/participants").body["data"][0]
    assert participant["availability"] == []
    assert [vote["count"] for vote in api.get(f"/v1/polls/{poll['id']}/results").body["data"]["options"][1]["votes"]] == [0, 0, 0]


@pytest.mark.parametrize(("fields", "problem"), [
    ({"name": ""}, "Your name: This field is required."),
    ({"name": "x" * 256}, "Your name: Ensure this value has at most 255 characters"),
    ({"email": "not-an-address"}, "E-mail"),
    ({"name": "Ada\r\nLovelace"}, "Your name: must not contain control characters or line breaks"),
    ({"name": "Ada\x1b[31m"}, "Your name: must not contain control characters or line breaks"),
])
def test_a_bad_answer_is_refused_and_nothing_changes(make_poll, client, fields, problem):
    poll = make_poll()
    response = answer(client, poll, {poll["options"][0]["id"]: "yes"}, **fields)
    assert response.status_code == 400
    assert "Your answer was not saved" in text(response) and problem.split(":")[0] in text(response)
    assert poll_row(poll).participants.count() == 0 and events(poll) == ["poll.created"]


def test_require_email(make_poll, client):
    poll = make_poll(requireEmail=True)
    page = text(client.get(f"/invite/{poll['id']}"))
    assert "E-mail (required)" in page and re.search(r'name="email"[^>]* required', page)
    assert answer(client, poll, {}).status_code == 400
    assert poll_row(poll).participants.count() == 0
    assert answer(client, poll, {}, email="ada@example.com").status_code == 302


def test_tentative_votes_only_when_allowed(make_poll, client):
    poll = make_poll(allowTentativeVotes=False)
    option = poll["options"][0]["id"]
    assert 'value="ifNeedBe"' not in text(client.get(f"/invite/{poll['id']}"))
    response = answer(client, poll, {option: "ifNeedBe"})
    assert response.status_code == 400 and "not an answer this poll offers" in text(response)
    assert answer(client, poll, {option: "maybe"}).status_code == 400
    assert poll_row(poll).participants.count() == 0


def test_the_honeypot_refuses_quietly(make_poll, client):
    poll = make_poll()
    response = answer(client, poll, {}, website="http://spam.example")
    assert response.status_code == 400 and poll_row(poll).participants.count() == 0


# --- The edit link ------------------------------------------------------------------------


def edit_token(response) -> str:
    return response.cookies[f"answer_{response['Location'].split('/')[2].split('?')[0]}"].value


def test_the_token_is_kept_as_a_hash_and_remembered_by_a_cookie(make_poll, client):
    poll = make_poll()
    response = answer(client, poll, {})
    token = edit_token(response)
    cookie = response.cookies[f"answer_{poll['id']}"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == f"/invite/{poll['id']}"
    stored = EditToken.objects.get()
    assert stored.token_hash == hashlib.sha256(token.encode()).hexdigest() and token not in stored.token_hash
    page = text(client.get(f"/invite/{poll['id']}"))
    assert f"/invite/{poll['id']}/edit/{token}" in page and 'value="update"' in page


def test_the_edit_link_changes_and_removes_the_answer(make_poll, api, client):
    poll = make_poll()
    first, second = (option["id"] for option in poll["options"])
    token = edit_token(answer(client, poll, {first: "yes"}))
    other = Client(enforce_csrf_checks=True)  # another browser, holding only the link
    link = f"/invite/{poll['id']}/edit/{token}"
    page = other.get(link)
    assert page.status_code == 200 and "You answered as Ada" in text(page)
    assert page.cookies[f"answer_{poll['id']}"].value == token
    response = other.post(link, {"csrfmiddlewaretoken": page.context["csrf_token"], "action": "update",
                                 "name": "Ada L.", "email": "", first: "no", second: "yes"})
    assert response.status_code == 302 and events(poll)[-1] == "poll.participant.updated"
    participant = api.get(f"/v1/polls/{poll['id']}/participants").body["data"][0]
    assert participant["name"] == "Ada L." and len(participant["availability"]) == 1
    # The cookie alone is enough in that browser now.
    token_field = csrf(other, f"/invite/{poll['id']}")
    response = other.post(f"/invite/{poll['id']}", {"csrfmiddlewaretoken": token_field, "action": "delete"})
    assert response.status_code == 200 and "Remove your answer?" in text(response)  # a second step first
    assert events(poll)[-1] == "poll.participant.updated" and EditToken.objects.count() == 1
    response = other.post(f"/invite/{poll['id']}", {"csrfmiddlewaretoken": token_field, "action": "delete",
                                                    "confirmed": "yes"})
    assert response.status_code == 302 and response["Location"].endswith("done=removed")
    assert events(poll)[-1] == "poll.participant.deleted"
    assert api.get(f"/v1/polls/{poll['id']}/participants").body["data"] == []
    assert EditToken.objects.count() == 0
    assert other.get(link).status_code == 404  # the link is dead with its answer


def test_without_the_token_nobody_changes_an_answer(make_poll, api, client):
    poll = make_poll()
    answer(client, poll, {poll["options"][0]["id"]: "yes"})
    stranger = Client()
    for action in ("update", "delete"):
        response = stranger.post(f"/invite/{poll['id']}", {"action": action, "name": "Mallory"})
        assert response.status_code == 403 and "Not your answer" in text(response)
    stranger.cookies[f"answer_{poll['id']}"] = "A" * 32  # a forged cookie
    assert stranger.post(f"/invite/{poll['id']}", {"action": "delete"}).status_code == 403
    assert stranger.get(f"/invite/{poll['id']}/edit/{'B' * 32}").status_code == 404
    assert stranger.get(f"/invite/{poll['id']}/edit/short").status_code == 404
    assert stranger.post(f"/invite/{poll['id']}/edit/{'B' * 32}", {"action": "delete"}).status_code == 404
    assert [p["name"] for p in api.get(f"/v1/polls/{poll['id']}/participants").body["data"]] == ["Ada"]
    assert events(poll)[-1] == "poll.participant.created"


def test_a_token_opens_only_its_own_poll(make_poll, client):
    poll, other_poll = make_poll(), make_poll()
    token = edit_token(answer(client, poll, {}))
    assert Client().get(f"/invite/{other_poll['id']}/edit/{token}").status_code == 404


def test_an_unknown_action_is_refused(make_poll, client):
    poll = make_poll()
    assert client.post(f"/invite/{poll['id']}", {"action": "close"}).status_code == 400


# --- CSRF ---------------------------------------------------------------------------------


def test_every_form_needs_its_csrf_token(make_poll, browser):
    poll = make_poll(disableComments=False)
    for url, data in ((f"/invite/{poll['id']}", {"name": "Ada"}),
                      (f"/invite/{poll['id']}/comments", {"name": "Ada", "text": "Hi"})):
        response = browser.post(url, data)
        assert (response.status_code, response["Content-Type"]) == (403, "text/html; charset=utf-8")
        assert "Form expired" in text(response)
    assert poll_row(poll).participants.count() == 0 and poll_row(poll).comments.count() == 0
    assert answer(browser, poll, {}).status_code == 302



def test_an_oversized_form_is_answered_with_a_page(make_poll, settings, browser):
    """A body config/wsgi.py refuses (larger than MAX_REQUEST_BODY_BYTES), and a form with more
    fields than Django reads, get the pages' HTML 400, not the API's JSON; nothing is saved."""
    from io import BytesIO

    from django.test import RequestFactory

    from config.wsgi import application
    from tests.test_edge_inputs import database_kept_open

    poll = make_poll()
    settings.MAX_REQUEST_BODY_BYTES = 1000
    url = f"/invite/{poll['id']}"
    body = f"csrfmiddlewaretoken={csrf(browser, url)}&name={'a' * 1000}".encode()
    environ = RequestFactory().post(url).environ
    environ.update({"CONTENT_TYPE": "application/x-www-form-urlencoded", "CONTENT_LENGTH": str(len(body)),
                    "wsgi.input": BytesIO(body), "HTTP_COOKIE": f"csrftoken={browser.cookies['csrftoken'].value}"})
    started = []
    with database_kept_open():
        chunks = application(environ, lambda status, headers, exc_info=None: started.append((status, dict(headers))))
        content = b"".join(chunks).decode()
        chunks.close()
    status, headers = started[0]
    assert status.startswith("400") and headers["Content-Type"] == "text/html; charset=utf-8", started
    assert "Not accepted" in content and "Content-Security-Policy" in headers
    assert int(headers["Content-Length"]) == len(content.encode())
    many = {"csrfmiddlewaretoken": csrf(browser, url), "name": "Ada",
            **{f"field{n}": "x" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS)}}
    response = browser.post(url, many)
    assert response.status_code == 400 and response["Content-Type"] == "text/html; charset=utf-8"
    assert "Not accepted" in text(response)
    assert poll_row(poll).participants.count() == 0

def test_the_back_office_keeps_djangos_csrf_page(browser):
    response = browser.post("/admin/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403 and "Form expired" not in text(response)


# --- Settings' effects ----------------------------------------------------------------------


def crowd(poll: dict, *names: str):
    """Responses by others, through the service the back office uses (yes on the first option)."""
    row = poll_row(poll)
    for name in names:
        poll_services.create_response(poll=row, name=name, email=f"{name.lower()}@example.com",
                                      votes={poll["options"][0]["id"]: "yes"})


def test_names_and_answers_are_shown_but_never_emails(make_poll, client):
    poll = make_poll()
    crowd(poll, "Grace", "Linus")
    body = text(client.get(f"/invite/{poll['id']}"))
    assert "Grace" in body and "Linus" in body and "@example.com" not in body
    assert yes(2) in body and "Top choice" in body


def test_hide_participants_shows_counts_and_your_own_answer_only(make_poll, client):
    poll = make_poll(hideParticipants=True)
    crowd(poll, "Grace", "Linus")
    body = text(client.get(f"/invite/{poll['id']}"))
    assert "Grace" not in body and "Linus" not in body and yes(2) in body
    answer(client, poll, {poll["options"][1]["id"]: "yes"}, name="Ada")
    body = text(client.get(f"/invite/{poll['id']}"))
    assert "Grace" not in body and "You answered as Ada" in body and yes(1) in body
    assert re.search(r'value="yes" checked', body)  # your own answer, in your form


def test_hide_scores_until_you_have_answered(make_poll, api, client):
    poll = make_poll(hideScores=True)
    crowd(poll, "Grace")
    body = text(client.get(f"/invite/{poll['id']}"))
    assert yes(1) not in body and "Top choice" not in body and '<td class="y">' not in body
    assert "Answered so far: Grace" in body  # names, not answers (they would give the totals away)
    answer(client, poll, {}, name="Ada")
    body = text(client.get(f"/invite/{poll['id']}"))
    assert yes(1) in body and "Top choice" in body and '<td class="y">' in body
    # Once the poll stops taking answers, everyone sees the totals.
    poll_services.close_poll(poll=poll_row(poll))
    assert yes(1) in text(Client().get(f"/invite/{poll['id']}"))
