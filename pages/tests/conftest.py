"""Fixtures of the pages' tests: polls made through the API, a browser-like client."""

import re

import pytest
from django.test import Client

from polls.models import Poll
from webhooks.models import Event


@pytest.fixture
def make_poll(api):
    """`make_poll(**fields)`: a poll created by `POST /v1/polls` (two date options unless
    `options`/`kind` say otherwise); returns the API's Poll object."""

    def make(**fields):
        body = {"title": "Team lunch", "kind": "date", "options": [{"date": "2030-05-02"}, {"date": "2030-05-03"}],
                **fields}
        response = api.post("/v1/polls", body)
        assert response.status_code == 201, response.body
        return response.body["data"]

    return make


@pytest.fixture(autouse=True)
def mail_at_once(monkeypatch):
    """E-mails sent before the request returns, so that a test finds them in the outbox (the
    background sending has tests of its own: test_organizer.py)."""
    from pages import mail

    monkeypatch.setattr(mail, "in_background", lambda function, *args: function(*args))


@pytest.fixture
def browser():
    """A client that checks CSRF like a browser's requests are checked."""
    return Client(enforce_csrf_checks=True)


@pytest.fixture(autouse=True)
def generous_limits(settings):
    """The pages' throttle out of the way, except where a test sets its own limits."""
    settings.PAGES_LIMIT_PER_ADDRESS = (1000, 10000)
    settings.PAGES_LIMIT_PER_POLL = (1000, 10000)
    settings.PAGES_SIGN_IN_LIMIT_PER_ADDRESS = (1000, 10000)
    settings.PAGES_SIGN_IN_LIMIT_PER_POLL = (1000, 10000)
    settings.PAGES_READ_LIMIT_PER_ADDRESS = (100_000, 1_000_000)


def csrf(client: Client, url: str) -> str:
    """GET the page as a browser does and return its form's CSRF token."""
    page = client.get(url)
    assert page.status_code == 200, page.status_code
    return page.context["csrf_token"]


def answer(client: Client, poll: dict, votes: dict | None = None, **fields):
    """POST an answer through the page's form (with the CSRF token of a GET first)."""
    url = f"/invite/{poll['id']}"
    data = {"csrfmiddlewaretoken": csrf(client, url), "name": "Ada", **fields, **(votes or {})}
    return client.post(url, data)


def poll_row(poll: dict) -> Poll:
    return Poll.objects.get(pk=poll["id"])


# --- The organizer's page ---------------------------------------------------------------


def events(poll: dict) -> list[tuple[str, dict]]:
    return [(event.type, event.data) for event in Event.objects.filter(poll_id=poll["id"]).order_by("created_at", "id")]


def ask_link(client: Client, poll: dict, email: str):
    url = f"/poll/{poll['id']}"
    return client.post(f"{url}/sign-in", {"csrfmiddlewaretoken": csrf(client, url), "email": email})


def link_from(mail) -> str:
    return re.search(r"https?://\S+/poll/\S+", mail.body).group(0).split("://", 1)[1].split("/", 1)[1]


def sign_in(client: Client, poll: dict, email: str, mailoutbox) -> None:
    ask_link(client, poll, email)
    path = "/" + link_from(mailoutbox[-1])
    page = client.get(path)
    assert page.status_code == 200 and "Sign in" in page.content.decode()
    response = client.post(path, {"csrfmiddlewaretoken": page.context["csrf_token"]})
    assert response.status_code == 302 and response["Location"] == f"/poll/{poll['id']}"


@pytest.fixture
def organizer_email(space):
    return space.owner.email


@pytest.fixture
def signed_in(make_poll, organizer_email, mailoutbox):
    poll = make_poll(disableComments=False)
    client = Client(enforce_csrf_checks=True)
    sign_in(client, poll, organizer_email, mailoutbox)
    return client, poll


def act(client: Client, poll: dict, **data):
    return client.post(f"/poll/{poll['id']}/act", {"csrfmiddlewaretoken": csrf(client, f"/poll/{poll['id']}"), **data})


def yes(count: int) -> str:
    """An option's total of yes as the page writes it: the count and the word (the stylesheet adds ✓)."""
    return f"<b>{count}<span> yes</span></b>"
