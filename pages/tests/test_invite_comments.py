"""Comments on the invite page over HTTP: off by default, listed under the grid, every
refusal stores nothing."""

import pytest
from django.test import Client

from pages.tests.conftest import csrf, poll_row
from pages.tests.test_invite import text

pytestmark = pytest.mark.django_db


def comment(client: Client, poll: dict, **fields):
    data = {"csrfmiddlewaretoken": csrf(client, f"/invite/{poll['id']}"), "name": "Ada", "text": "Friday suits me",
            **fields}
    return client.post(f"/invite/{poll['id']}/comments", data)


def test_comments_are_off_by_default_and_refused(make_poll, client):
    poll = make_poll()
    assert "Comments" not in text(client.get(f"/invite/{poll['id']}"))
    response = comment(client, poll)
    assert response.status_code == 403 and poll_row(poll).comments.count() == 0


def test_a_comment_is_listed_under_the_grid(make_poll, client):
    poll = make_poll(disableComments=False)
    response = comment(client, poll, text="Friday <b>suits</b> me\nor Monday")
    assert response.status_code == 302 and response["Location"].endswith("#comments")
    body = text(client.get(f"/invite/{poll['id']}"))
    assert "Friday &lt;b&gt;suits&lt;/b&gt; me<br>or Monday" in body
    assert body.index("Answers") < body.index("Friday &lt;b&gt;")


@pytest.mark.parametrize(("fields", "problem"), [
    ({"text": "what a badword"}, "Not accepted by our content filter: text."),
    ({"name": "Rude Phrase man"}, "Not accepted by our content filter: name."),
    ({"text": ""}, "Comment: This field is required."),
    ({"text": "x" * 1001}, "at most 1000 characters"),
    ({"name": "Ada\nL"}, "Your name: must not contain control characters or line breaks"),
    ({"text": "Friday\x07 suits me"}, "Comment: must not contain control characters other than line breaks and tabs"),
])
def test_a_bad_comment_is_refused(make_poll, client, fields, problem):
    poll = make_poll(disableComments=False)
    response = comment(client, poll, **fields)
    assert response.status_code == 400 and problem in text(response)
    assert poll_row(poll).comments.count() == 0


