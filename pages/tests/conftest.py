"""Fixtures of the pages' tests: polls made through the API, a browser-like client."""

import pytest
from django.test import Client

from polls.models import Poll


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
