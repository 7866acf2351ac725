"""No English left in German, French or Spanish on the states test_languages.py does not
reach: every refusal and error page, every confirmation step and notice, the edit link's
page, the grids' pages, the deadline, duplicating, deleting and the unsubscribe page. Each
state is checked to be the one meant (its status) before its words are compared."""

import re
import uuid

import pytest
import redis
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from pages.notices import unsubscribe_token
from pages.organizer import ORGANIZER_DONE
from pages.tests.conftest import answer, ask_link, csrf, link_from, poll_row
from pages.tests.test_languages import LANGUAGES, assert_no_english_left, english_left, in_every_language
from pages.tests.test_mail_languages import read
from pages.views import DONE
from polls import services as poll_services

pytestmark = pytest.mark.django_db


def expect(status: int, request):
    """`request`, checked to answer `status` (so each state is the one meant)."""

    def checked(client: Client):
        response = request(client)
        assert response.status_code == status, (status, response.status_code, response.content[:300])
        return response

    return checked


def post(client: Client, path: str, page: str, **data):
    return client.post(path, {"csrfmiddlewaretoken": csrf(client, page), **data})


def signed_in(browser: Client, poll: dict, email: str, mailoutbox):
    """Sign `browser` in, through the e-mailed link."""
    url = f"/poll/{poll['id']}"
    post(browser, f"{url}/sign-in", url, email=email)
    path = "/" + link_from(mailoutbox[-1])
    browser.post(path, {"csrfmiddlewaretoken": csrf(browser, path)})
    return browser


def as_in(browser: Client, c: Client):
    """`browser` (its cookies: an answer, a session) in `c`'s language."""
    browser.cookies["django_language"] = c.cookies["django_language"].value
    return browser


def test_no_english_left_on_the_invite_pages_refusals_and_steps(make_poll):
    poll = make_poll(title="Team lunch", disableComments=False)
    url = f"/invite/{poll['id']}"
    mine = Client()
    answer(mine, poll, {}, name="Ada")
    token = mine.cookies[f"answer_{poll['id']}"].value
    for n in range(16):  # a second page of the grid (15 a page)
        poll_services.create_response(poll=poll_row(poll), name=f"Person {n}", email=None, votes={})
    closed = make_poll(title="Team lunch", disableComments=False)
    poll_services.close_poll(poll=poll_row(closed))
    quiet = make_poll(title="Team lunch")
    deadline = make_poll(title="Team lunch", kind="time", timeZone="Europe/Berlin", duration=30,
                         options=[{"startTime": "2030-06-03T09:00:00"}])
    poll_services.update_poll(poll=poll_row(deadline), details={"closes_at": timezone.now() + timezone.timedelta(days=30)})
    every = [
        ("the edit link's page", expect(200, lambda c: c.get(f"{url}/edit/{token}"))),
        ("a dead edit link", expect(404, lambda c: c.get(f"{url}/edit/{'x' * 32}"))),
        ("the grid's second page", expect(200, lambda c: c.get(f"{url}?page=2"))),
        ("every notice", lambda c: [expect(200, lambda c: c.get(f"{url}?done={done}"))(c) for done in DONE]),
        ("a deadline", expect(200, lambda c: c.get(f"/invite/{deadline['id']}"))),
        ("the honeypot", expect(400, lambda c: post(c, url, url, name="Ada", website="http://spam.example"))),
        ("not the page's form", expect(400, lambda c: post(c, url, url, action="vote"))),
        ("a form too large", expect(400, lambda c: c.post(url, {f"f{n}": "x" for n in range(1100)}))),
        ("answering a closed poll", expect(409, lambda c: post(c, f"/invite/{closed['id']}", url, name="Ada"))),
        ("commenting a closed poll", expect(409, lambda c: post(c, f"/invite/{closed['id']}/comments", url,
                                                                 name="Ada", text="Hi"))),
        ("comments off", expect(403, lambda c: post(c, f"/invite/{quiet['id']}/comments", url, name="Ada", text="Hi"))),
        ("the removal step", expect(200, lambda c: post(as_in(mine, c), url, url, action="delete"))),
    ]
    assert_no_english_left(in_every_language(every), {f"Person {n}" for n in range(16)})


@pytest.fixture
def addresses():
    """`addresses()`: a client address of this test alone; its counters in Redis (which
    outlive a test's database) are deleted at the end."""
    made = []
    yield lambda: made.append(f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250 + 1}") or made[-1]
    if django_settings.REDIS_URL and made:
        redis.Redis.from_url(django_settings.REDIS_URL).delete(
            *(f"ratelimit:key:{prefix}:address:{value}" for value in made for prefix in ("pages", "pages:sign-in")))


def test_no_english_left_on_the_throttles_pages(make_poll, settings, addresses):
    settings.PAGES_LIMIT_PER_POLL = (1, 1000)  # the second answer to a poll within a minute: seconds
    settings.PAGES_LIMIT_PER_ADDRESS = (1000, 1)  # the second answer from an address within a day: hours

    def twice(c: Client, poll: dict | None = None, address: str | None = None):
        poll = poll or make_poll(title="Team lunch")
        first = c.post(f"/invite/{poll['id']}", {"name": "Ada"}, REMOTE_ADDR=address or addresses())
        assert first.status_code == 302
        return c.post(f"/invite/{poll['id']}", {"name": "Ada"}, REMOTE_ADDR=address or addresses())

    def from_one_address(c: Client):
        address = addresses()
        c.post(f"/invite/{make_poll(title='Team lunch')['id']}", {"name": "Ada"}, REMOTE_ADDR=address)
        return c.post(f"/invite/{make_poll(title='Team lunch')['id']}", {"name": "Ada"}, REMOTE_ADDR=address)

    def store_gone(c: Client):
        poll, store = make_poll(title="Team lunch"), settings.REDIS_URL
        settings.REDIS_URL, settings.RATELIMIT_STORE_TIMEOUT = "redis://127.0.0.1:9/0", 0.2
        try:
            return c.post(f"/invite/{poll['id']}", {"name": "Ada"})
        finally:
            settings.REDIS_URL = store

    every = [
        ("too many for the poll", expect(429, twice)),
        ("too many from the network", expect(429, from_one_address)),
        ("the store unreachable", expect(503, store_gone)),
    ]
    pages = in_every_language(every)
    assert "for this poll" in pages["en", "too many for the poll"] and "hours" in pages["en", "too many from the network"]
    assert_no_english_left(pages)


def test_no_english_left_on_the_organizers_refusals_steps_and_notices(make_poll, organizer_email, mailoutbox):
    poll = make_poll(title="Team lunch", disableComments=False, kind="time", timeZone="Europe/Berlin", duration=30,
                     options=[{"startTime": "2030-06-03T09:00:00"}, {"startTime": "2030-06-04T09:00:00"}])
    first = poll["options"][0]["id"]
    row = poll_row(poll)
    grace = poll_services.create_response(poll=row, name="Grace", email="grace@example.com", votes={first: "yes"})
    for n in range(50):  # a second page of answers (50 a page)
        poll_services.create_response(poll=row, name=f"Person {n}", email=None, votes={})
    comment = poll_services.add_comment(poll=row, name="Linus", text="See you there")
    no_addresses = make_poll(title="Team lunch")
    invited = make_poll(title="Team lunch")
    poll_services.create_response(poll=poll_row(invited), name="Grace", email="grace@example.com", votes={})
    organizer = signed_in(Client(), poll, organizer_email, mailoutbox)
    url, page = f"/poll/{poll['id']}", f"/poll/{poll['id']}"
    post(organizer, f"/poll/{invited['id']}/act", f"/poll/{invited['id']}", action="schedule", confirmed="yes",
         option=invited["options"][0]["id"], email="yes")  # an invitation went out: calling off can e-mail
    deadline, canceled = make_poll(title="Team lunch"), make_poll(title="Team lunch")
    poll_services.update_poll(poll=poll_row(deadline), details={"closes_at": timezone.now() + timezone.timedelta(days=30)})
    poll_services.schedule_poll(poll=poll_row(canceled), option_id=canceled["options"][0]["id"])
    poll_services.cancel_poll(poll=poll_row(canceled))

    def acting(status: int, target: dict | None = None, **data):
        path = f"/poll/{(target or poll)['id']}"
        return expect(status, lambda c: post(as_in(organizer, c), f"{path}/act", path, **data))

    def step(query: str, status: int = 200, target: dict | None = None):
        return expect(status, lambda c: as_in(organizer, c).get(f"/poll/{(target or poll)['id']}/confirm?{query}"))

    def duplicated(c: Client):
        copied = acting(302, action="duplicate", title="Team lunch")(c)
        return as_in(organizer, c).get(copied["Location"])

    def deleted(c: Client):
        doomed = make_poll(title="Team lunch")
        return acting(200, doomed, action="delete", confirmed="yes")(c)

    every = [
        ("a sign-in address refused", expect(400, lambda c: post(c, f"{url}/sign-in", page, email="not an address"))),
        ("the answers' second page", expect(200, lambda c: as_in(organizer, c).get(f"{url}?page=2"))),
        ("every notice", lambda c: [expect(200, lambda c: as_in(organizer, c).get(f"{url}?done={done}"))(c)
                                    for done in ORGANIZER_DONE]),
        ("a deadline", expect(200, lambda c: as_in(organizer, c).get(f"/poll/{deadline['id']}"))),
        ("removing a participant", step(f"action=remove-participant&participant={grace.pk}")),
        ("removing a comment", step(f"action=remove-comment&comment={comment.pk}")),
        ("scheduling, no one to e-mail", step(f"action=schedule&option={no_addresses['options'][0]['id']}",
                                              target=no_addresses)),
        ("calling off, with e-mails", step("action=cancel", target=invited)),
        ("not a step", step("action=vote", 400)),
        ("a step at nothing", step("action=schedule&option=nopenopenope", 404)),
        ("not the page's action", acting(400, action="vote")),
        ("details refused", acting(400, action="edit", title="")),
        ("a deadline refused", acting(409, action="deadline", closes_at="soon")),
        ("an option refused", acting(409, action="options", add_day="2030-02-30", add_time="09:00",
                                     add_duration="30")),
        ("a time refused", acting(409, action="options", add_day="2030-06-10", add_time="9h", add_duration="30")),
        ("a year refused", acting(409, action="options", add_day="9999-06-10", add_time="09:00", add_duration="30")),
        ("a duration refused", acting(409, action="options", add_day="2030-06-10", add_time="09:00", add_duration="1")),
        ("no option left", acting(409, action="options", remove=[option["id"] for option in poll["options"]])),
        ("a past deadline", acting(409, action="deadline", closes_at="2020-01-01T10:00")),
        ("a step taken already", acting(409, canceled, action="schedule", confirmed="yes",
                                        option=canceled["options"][0]["id"])),
        ("the answers without signing in", expect(403, lambda c: c.get(f"{url}/answers.csv"))),
        ("an action without signing in", expect(403, lambda c: post(c, f"{url}/act", page, action="close"))),
        ("duplicated", duplicated),
        ("deleted", deleted),
    ]
    assert_no_english_left(in_every_language(every), {f"Person {n}" for n in range(50)} | {"Linus: “See you there”", "“See you there”"})


def test_no_english_left_on_the_unsubscribe_page(make_poll):
    poll = make_poll(title="Team lunch")
    url = f"/poll/{poll['id']}/unsubscribe/{unsubscribe_token(poll['id'])}"
    every = [
        ("the button", expect(200, lambda c: c.get(url))),
        ("done", expect(200, lambda c: c.post(url))),
        ("a link not valid", expect(404, lambda c: c.get(re.sub(r"/[^/]+$", "/" + "x" * 27, url)))),
    ]
    assert_no_english_left(in_every_language(every))


def test_no_english_left_in_the_link_e_mails(make_poll, organizer_email, mailoutbox):
    """The edit link (on answering, and sent again) and the sign-in link, subject, text and
    HTML parts as a mail client reads them, in each language."""
    poll = make_poll(title="Team lunch")
    url = f"/invite/{poll['id']}"
    greeting = {"de": "Hallo,", "fr": "Bonjour,", "es": "Hola:"}
    for language in LANGUAGES:
        client = Client()
        client.cookies["django_language"] = language
        mailoutbox.clear()
        address = f"ada-{language}@example.com"
        answer(client, poll, {}, name="Ada", email=address)
        assert post(client, f"{url}/send-link", url, email=address).status_code == 302
        ask_link(client, poll, organizer_email)
        assert len(mailoutbox) == 3
        for message in mailoutbox:
            subject, text, html = read(message)
            assert greeting[language] in text and "Team lunch" in subject, (language, text)
            for part in (subject, text, html):
                assert not english_left(part, language), (language, english_left(part, language))
