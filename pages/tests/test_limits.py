"""The pages' throttle (per address and per poll, on the project's limiter), and the
invite page's cost: a constant number of queries and a bounded size, whatever the crowd."""

import uuid
from datetime import date, timedelta

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client

from pages.tests.conftest import answer, poll_row, yes
from polls import services as poll_services
from polls.models import Participant, Poll, Vote

pytestmark = pytest.mark.django_db


@pytest.fixture
def address():
    """A client address of this test alone (counters in Redis outlive a test's database)."""
    value = f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250 + 1}"
    yield value
    if django_settings.REDIS_URL:
        redis.Redis.from_url(django_settings.REDIS_URL).delete(f"ratelimit:key:pages:address:{value}")


def test_past_the_address_limit_a_429_page(make_poll, settings, address):
    settings.PAGES_LIMIT_PER_ADDRESS = (2, 100)
    poll, other = make_poll(), make_poll(disableComments=False)
    client = Client(REMOTE_ADDR=address)
    assert answer(client, poll, {}).status_code == 302
    assert answer(client, other, {}).status_code == 302  # the address is counted across polls
    response = client.post(f"/invite/{other['id']}/comments", {"name": "Ada", "text": "hi"})
    assert (response.status_code, response["Content-Type"]) == (429, "text/html; charset=utf-8")
    assert 0 < int(response["Retry-After"]) <= 60
    assert "Too many requests" in response.content.decode() and "from your network" in response.content.decode()
    assert answer(client, poll, {}).status_code == 429
    assert poll_row(poll).participants.count() == 1 and poll_row(other).comments.count() == 0
    assert answer(Client(REMOTE_ADDR="10.255.0.1"), poll, {}).status_code == 302  # another address


def test_past_the_poll_limit_a_429_page(make_poll, settings):
    settings.PAGES_LIMIT_PER_POLL = (2, 100)
    poll = make_poll()
    for n in range(2):
        assert answer(Client(REMOTE_ADDR=f"10.254.{n}.1"), poll, {}).status_code == 302
    response = answer(Client(REMOTE_ADDR="10.254.9.1"), poll, {})
    assert response.status_code == 429 and "for this poll" in response.content.decode()
    assert poll_row(poll).participants.count() == 2
    assert answer(Client(REMOTE_ADDR="10.254.9.1"), make_poll(), {}).status_code == 302  # another poll


def test_the_day_limit_says_hours(make_poll, settings, address):
    settings.PAGES_LIMIT_PER_ADDRESS = (100, 1)
    poll = make_poll()
    client = Client(REMOTE_ADDR=address)
    answer(client, poll, {})
    response = answer(client, poll, {})
    assert response.status_code == 429 and "24 hours" in response.content.decode()


def test_the_store_unreachable_fails_closed(make_poll, settings):
    poll = make_poll()
    settings.REDIS_URL, settings.RATELIMIT_STORE_TIMEOUT = "redis://127.0.0.1:9/0", 0.2
    response = answer(Client(), poll, {})
    assert response.status_code == 503 and response["Retry-After"] and poll_row(poll).participants.count() == 0


def test_client_address_behind_the_tls_proxy(settings, rf):
    from pages.throttle import client_address

    request = rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7")
    assert client_address(request) == "10.0.0.2"
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert client_address(request) == "198.51.100.7"  # the address the proxy added
    assert client_address(rf.get("/", REMOTE_ADDR="2001:db8:1:2:3:4:5:6")) == "2001:db8:1:2::/64"
    assert client_address(rf.get("/", REMOTE_ADDR="::ffff:192.0.2.1")) == "192.0.2.1"


# --- Cost of the page ------------------------------------------------------------------------


def crowd(poll_id: str, participants: int, options: list[str]) -> None:
    """Participants voting on every option, written in bulk (a test setup, not a response)."""
    if connection.vendor == "postgresql":
        # The test's transaction checks the votes' deferred foreign keys when it ends (Django's
        # `SET CONSTRAINTS ALL IMMEDIATE`): 100,000 checks for 500 x 100, longer than the
        # service's statement_timeout on a slow machine.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = 0")
    made = Participant.objects.bulk_create(
        Participant(poll_id=poll_id, name=f"Participant {n}", email=f"p{n}@example.com") for n in range(participants))
    kinds = ("yes", "ifNeedBe", "no")
    Vote.objects.bulk_create(
        (Vote(participant=p, option_id=o, type=kinds[(i + j) % 3]) for i, p in enumerate(made) for j, o in enumerate(options)),
        batch_size=5000)
    poll_services.recount_tallies(poll=Poll.objects.get(pk=poll_id))  # what the services keep for each answer


def big_poll(make_poll, count: int = 100) -> dict:
    start = date(2030, 1, 1)
    return make_poll(disableComments=False,
                     options=[{"date": (start + timedelta(days=n)).isoformat()} for n in range(count)])


QUERIES = 8  # poll with organizer and count; options; results; the grid's page and its votes; comments; token and votes


def test_the_invite_page_costs_a_constant_number_of_queries(make_poll, client, django_assert_num_queries):
    poll = big_poll(make_poll, 10)
    options = [option["id"] for option in poll["options"]]
    answer(client, poll, {options[0]: "yes"})  # this browser holds an edit token
    url = f"/invite/{poll['id']}"
    for more in (5, 60):
        crowd(poll["id"], more, options)
        with django_assert_num_queries(QUERIES):
            assert client.get(url).status_code == 200
    with django_assert_num_queries(QUERIES - 2):
        assert Client().get(url).status_code == 200  # no token: no token lookup


def test_100_options_and_500_participants_stay_under_125_kb(make_poll, client, settings):
    poll = big_poll(make_poll)
    crowd(poll["id"], 500, [option["id"] for option in poll["options"]])
    page = client.get(f"/invite/{poll['id']}")
    assert page.status_code == 200 and "Participants page 1 of 34" in page.content.decode()
    assert yes(167) in page.content.decode()  # the totals, from the tallies
    assert len(page.content) < 125_000, len(page.content)
    last = client.get(f"/invite/{poll['id']}?page=34")
    assert "Participant 499" in last.content.decode() and "Participant 494" not in last.content.decode()
    assert client.get(f"/invite/{poll['id']}?page=999").status_code == 200  # the last page
    assert client.get(f"/invite/{poll['id']}?page=x").status_code == 200  # the first page
