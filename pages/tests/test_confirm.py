"""Nothing on one click: the organizer page's destructive actions and scheduling go through a
confirmation step (a plain GET page, no JavaScript), and an unconfirmed POST changes nothing.
And the answers grid: participants x options with e-mail addresses, the CSV's data."""

import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from pages.tests.conftest import act, answer, csrf, events, poll_row
from polls.models import Comment, Poll

pytestmark = pytest.mark.django_db


class Forms(HTMLParser):
    """The forms of a page: [(method, action, {name: value}, button text)]."""

    def __init__(self, html: str):
        super().__init__()
        self.forms, self._text = [], None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append([attrs.get("method", "get"), attrs.get("action"), {}, ""])
        elif tag == "input" and self.forms and attrs.get("name"):
            if attrs.get("type") != "checkbox" or "checked" in attrs:
                self.forms[-1][2][attrs["name"]] = attrs.get("value", "")
        elif tag == "button" and self.forms:
            self._text = ""

    def handle_data(self, data):
        if self._text is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "button" and self._text is not None:
            self.forms[-1][3] = self._text.strip()
            self._text = None


def form_with(html: str, button: str, **fields):
    for method, action, data, text in Forms(html).forms:
        if text == button and all(data.get(name) == value for name, value in fields.items()):
            return method, action, data
    raise AssertionError(f"no form with the button {button!r} and {fields}")


def through_the_step(client: Client, poll: dict, button: str, confirm_button: str, **fields):
    """Press `button` on the organizer page (a GET form), then the confirmation step's button."""
    page = client.get(f"/poll/{poll['id']}").content.decode()
    method, action, data = form_with(page, button, **fields)
    assert method == "get" and action == f"/poll/{poll['id']}/confirm"
    step = client.get(action, data)
    assert step.status_code == 200 and step["Cache-Control"] == "private, no-store"
    html = step.content.decode()
    method, action, data = form_with(html, confirm_button)
    assert method == "post" and data["confirmed"] == "yes"
    return html, client.post(action, data)


@pytest.fixture
def busy(signed_in):
    client, poll = signed_in
    answer(Client(), poll, {poll["options"][0]["id"]: "yes", poll["options"][1]["id"]: "ifNeedBe"},
           name="Ada <b>", email="ada@example.com")
    from polls import services

    services.add_comment(poll=poll_row(poll), name="Bob", text="See you there")
    return client, poll


def test_unconfirmed_posts_change_nothing(busy):
    client, poll = busy
    participant = poll_row(poll).participants.get()
    comment = Comment.objects.get(poll_id=poll["id"])
    before = len(events(poll))
    for data in ({"action": "delete"}, {"action": "remove-participant", "participant": participant.pk},
                 {"action": "remove-comment", "comment": comment.pk}, {"action": "schedule", "option": poll["options"][0]["id"]},
                 {"action": "schedule", "option": poll["options"][0]["id"], "confirmed": "no"}):
        response = act(client, poll, **data)
        assert response.status_code == 302
        assert response["Location"].startswith(f"/poll/{poll['id']}/confirm?action={data['action']}")
    assert poll_row(poll).status == Poll.Status.OPEN and poll_row(poll).deleted_at is None
    assert poll_row(poll).participants.count() == 1 and Comment.objects.filter(poll_id=poll["id"]).count() == 1
    assert len(events(poll)) == before


def test_schedule_then_call_off_through_the_step(busy):
    client, poll = busy
    html, done = through_the_step(client, poll, "Schedule", "Schedule", option=poll["options"][1]["id"])
    assert "Schedule the poll at this option?" in html and "Friday 3 May 2030" in html
    assert done.status_code == 302 and poll_row(poll).scheduled_option_id == poll["options"][1]["id"]
    html, done = through_the_step(client, poll, "Call off the event", "Call off the event")
    assert "Call off the event?" in html
    assert done.status_code == 302 and poll_row(poll).status == Poll.Status.CANCELED
    assert [kind for kind, _ in events(poll)[-2:]] == ["poll.scheduled", "poll.canceled"]


def test_remove_a_participant_and_a_comment_through_the_step(busy):
    client, poll = busy
    participant = poll_row(poll).participants.get()
    html, done = through_the_step(client, poll, "Remove", "Remove the participant", participant=participant.pk)
    assert "Ada &lt;b&gt;" in html and done.status_code == 302
    assert not poll_row(poll).participants.exists() and events(poll)[-1][0] == "poll.participant.deleted"
    html, done = through_the_step(client, poll, "Remove comment", "Remove the comment")
    assert "Bob: “See you there”" in html and done.status_code == 302
    assert not Comment.objects.filter(poll_id=poll["id"]).exists()


def test_delete_through_the_step(busy, api):
    client, poll = busy
    html, done = through_the_step(client, poll, "Delete this poll", "Delete the poll")
    assert "cannot be undone" in html
    assert done.status_code == 200 and "Poll deleted" in done.content.decode()
    assert api.get(f"/v1/polls/{poll['id']}").status_code == 404


def test_the_step_is_the_organizers_and_names_something_of_the_poll(busy, make_poll):
    client, poll = busy
    url = f"/poll/{poll['id']}/confirm"
    stranger = Client().get(url, {"action": "delete"})
    assert stranger.status_code == 302 and stranger["Location"] == f"/poll/{poll['id']}"
    assert client.get(url, {"action": "close-all"}).status_code == 400
    other = make_poll()
    assert client.get(url, {"action": "schedule", "option": other["options"][0]["id"]}).status_code == 404
    assert client.get(url, {"action": "remove-participant", "participant": "nope"}).status_code == 404
    assert client.get(url, {"action": "remove-comment"}).status_code == 404
    assert client.post(url, {"action": "delete", "csrfmiddlewaretoken": csrf(client, f"/poll/{poll['id']}")}).status_code == 405


def test_the_answers_grid_is_the_csvs_data(busy):
    client, poll = busy
    answer(Client(), poll, {poll["options"][1]["id"]: "no"}, name="Grace")
    html = client.get(f"/poll/{poll['id']}").content.decode()
    grid = html[html.index('<table class="grid answers">'):]
    grid = grid[:grid.index("</table>")]
    heads = re.findall(r'<th scope="col" class="opt">(.*?)</th>', grid)
    assert [re.sub("<[^>]+>", "", head) for head in heads] == ["Thu 2 May 2030", "Fri 3 May 2030"]
    rows = {re.search(r'<th scope="row"[^>]*>(.*?)</th>', row).group(1): re.findall(r'<td class="(\w+)"', row)
            for row in grid.split("<tr>")[2:]}
    assert rows == {"Ada &lt;b&gt;": ["mail", "at", "y", "m"], "Grace": ["mail", "at", "n"]}
    assert "ada@example.com" in grid
    csv_lines = b"".join(client.get(f"/poll/{poll['id']}/answers.csv").streaming_content).decode().splitlines()
    assert [line.split(",")[3:] for line in csv_lines[1:]] == [["yes", "ifNeedBe"], ["", "no"]]


def test_the_answers_grid_is_paged(busy, monkeypatch):
    client, poll = busy
    monkeypatch.setattr("pages.organizer.PARTICIPANTS_PAGE", 1)
    answer(Client(), poll, {}, name="Grace")
    first = client.get(f"/poll/{poll['id']}").content.decode()
    second = client.get(f"/poll/{poll['id']}?page=2").content.decode()
    assert "Ada &lt;b&gt;" in first and "Grace" not in first and "Page 1 of 2" in first
    assert "Grace" in second and "Ada &lt;b&gt;" not in second
