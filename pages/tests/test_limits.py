"""The pages' throttle (per address and per poll, on the project's limiter), and the
invite page's cost: a constant number of queries and a bounded size, whatever the crowd."""

import uuid
from datetime import date, timedelta

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client
from django.utils import timezone

from config import settings as defaults  # the service's own limits, not the tests' generous ones
from pages.tests.conftest import answer, poll_row, yes
from polls import services as poll_services
from polls.models import Participant, Poll, Vote

pytestmark = pytest.mark.django_db


@pytest.fixture
def new_address():
    """`new_address()`: a client address of this test alone (counters in Redis outlive a
    test's database: they are deleted at the end)."""
    made = []

    def make() -> str:
        made.append(f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250 + 1}")
        return made[-1]

    yield make
    if django_settings.REDIS_URL and made:
        redis.Redis.from_url(django_settings.REDIS_URL).delete(
            *(f"ratelimit:key:{prefix}:address:{value}" for value in made
              for prefix in ("pages", "pages:sign-in", "pages:read")))


@pytest.fixture
def address(new_address):
    return new_address()


@pytest.fixture
def frozen(time_machine):
    """The clock stands still: every request of the test falls in the same minute."""
    time_machine.move_to(timezone.now(), tick=False)


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
    for response in (Client().post(f"/invite/{poll['id']}", {"name": "Ada"}), Client().get(f"/invite/{poll['id']}")):
        assert (response.status_code, response["Content-Type"]) == (503, "text/html; charset=utf-8")
        assert response["Retry-After"] and "Try again later" in response.content.decode()
    assert poll_row(poll).participants.count() == 0


def sign_in_request(address: str, poll: dict, email: str):
    return Client(REMOTE_ADDR=address).post(f"/poll/{poll['id']}/sign-in", {"email": email})


def test_sign_in_requests_have_windows_of_their_own_and_never_stop_answers(make_poll, settings, new_address, frozen):
    """Six addresses sending made-up e-mails fill the poll's window of sign-in requests, and
    each its own; the participants' answers, counted apart, all go through: the answer
    windows are just wide enough for them (one per address, 13 for the poll), so a single
    sign-in request counted in them would refuse one."""
    settings.PAGES_LIMIT_PER_ADDRESS, settings.PAGES_LIMIT_PER_POLL = (1, 100), (13, 100)
    settings.PAGES_SIGN_IN_LIMIT_PER_ADDRESS, settings.PAGES_SIGN_IN_LIMIT_PER_POLL = (3, 100), (10, 100)
    poll, other = make_poll(), make_poll()
    strangers = [new_address() for _ in range(6)]
    answers = [sign_in_request(strangers[n % 6], poll, f"made-up-{n}@example.com") for n in range(30)]
    assert [response.status_code for response in answers] == [200] * 10 + [429] * 20
    assert all("for this poll" in response.content.decode() for response in answers[10:18])
    assert all("from your network" in response.content.decode() for response in answers[18:])  # each past its 3
    assert sign_in_request(new_address(), other, "made-up@example.com").status_code == 200  # another poll
    for address in strangers[:1] + [new_address() for _ in range(12)]:
        assert Client(REMOTE_ADDR=address).post(f"/invite/{poll['id']}", {"name": "Ada"}).status_code == 302
    assert poll_row(poll).participants.count() == 13
    refused = Client(REMOTE_ADDR=new_address()).post(f"/invite/{poll['id']}", {"name": "Ada"})  # the windows are real
    assert refused.status_code == 429 and "for this poll" in refused.content.decode()
    assert Client(REMOTE_ADDR=strangers[0]).post(f"/invite/{other['id']}", {"name": "Ada"}).status_code == 429


def test_a_team_behind_one_address_answers_and_a_flood_from_it_is_refused(make_poll, settings, new_address, frozen):
    """The service's own limits: 50 people answering one poll from one office address within
    a minute all get through; a flood from one address (500 a minute, say) is cut at its
    limit, and other addresses and polls are not held up by it."""
    settings.PAGES_LIMIT_PER_ADDRESS, settings.PAGES_LIMIT_PER_POLL = (
        defaults.PAGES_LIMIT_PER_ADDRESS, defaults.PAGES_LIMIT_PER_POLL)
    per_address = defaults.PAGES_LIMIT_PER_ADDRESS[0]
    assert 50 < per_address < 500 and defaults.PAGES_LIMIT_PER_POLL[0] > per_address
    team, flood = make_poll(), make_poll()
    office = Client(REMOTE_ADDR=new_address())
    for n in range(50):
        assert office.post(f"/invite/{team['id']}", {"name": f"Colleague {n}"}).status_code == 302
    assert poll_row(team).participants.count() == 50
    flooder = Client(REMOTE_ADDR=new_address())
    statuses = [flooder.post(f"/invite/{flood['id']}", {"name": f"Bot {n}"}).status_code
                for n in range(per_address + 20)]
    assert statuses == [302] * per_address + [429] * 20
    assert poll_row(flood).participants.count() == per_address
    assert Client(REMOTE_ADDR=new_address()).post(f"/invite/{flood['id']}", {"name": "Ada"}).status_code == 302
    assert office.post(f"/invite/{team['id']}", {"name": "Colleague 50"}).status_code == 302
    assert Client(REMOTE_ADDR=new_address()).post(f"/invite/{make_poll()['id']}", {"name": "Ada"}).status_code == 302


def test_page_reads_are_limited_per_address_and_use_up_nothing_else(make_poll, api, settings, new_address):
    """Every GET or HEAD under the pages counts for the client's address; past the limit a
    429 page. Answers, other addresses and the API's per-space window are untouched."""
    settings.PAGES_READ_LIMIT_PER_ADDRESS = (3, 100)
    poll = make_poll()
    remaining = int(api.get(f"/v1/polls/{poll['id']}")["RateLimit-Remaining"])
    reader = Client(REMOTE_ADDR=new_address())
    assert [reader.get(url).status_code for url in (f"/invite/{poll['id']}", f"/poll/{poll['id']}",
                                                    "/invite/made-up")] == [200, 200, 404]
    for response in (reader.get(f"/invite/{poll['id']}"), reader.head(f"/poll/{poll['id']}")):
        assert (response.status_code, response["Content-Type"]) == (429, "text/html; charset=utf-8")
        assert 0 < int(response["Retry-After"]) <= 60 and response["Content-Security-Policy"]
    assert "from your network" in reader.get(f"/invite/{poll['id']}").content.decode()
    assert reader.post(f"/invite/{poll['id']}", {"name": "Ada"}).status_code == 302  # an answer is no read
    assert Client(REMOTE_ADDR=new_address()).get(f"/invite/{poll['id']}").status_code == 200
    assert int(api.get(f"/v1/polls/{poll['id']}")["RateLimit-Remaining"]) == remaining - 1


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
# The read's count (pages.throttle): a statement on PostgreSQL without Redis; SQLite's counters
# are a database of their own, Redis is no database.
QUERIES += connection.vendor == "postgresql" and not django_settings.REDIS_URL


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


def test_through_the_web_process_a_poll_page_waits_in_its_polls_compartment_and_a_refused_read_holds_none(
        make_poll, settings, new_address, monkeypatch):
    """config/wsgi.py: a page of a poll waits in its poll's compartment, then the pages'; a
    read past its limit is answered `REFUSED_READ_DELAY` late, with its slot and compartments
    given back before the wait (a client looping on refusals gets about one a second)."""
    from types import SimpleNamespace

    from django.test import RequestFactory

    from config import wsgi
    from core.bulkhead import PAGES, POLL_PAGES, Bulkhead
    from pages.throttle import REFUSED_READ_DELAY
    from tests.test_edge_inputs import database_kept_open

    acquired, waits = [], []

    class Recording(Bulkhead):
        def acquire(self, name, timeout):
            acquired.append(name)
            return super().acquire(name, timeout)

    bulkhead = Recording(settings.WEB_SPACE_CONCURRENT_REQUESTS)

    def sleep(seconds):
        slot_free = wsgi._slots.acquire(timeout=0)
        if slot_free:
            wsgi._slots.release()
        waits.append((seconds, slot_free, dict(bulkhead._poll_users)))

    monkeypatch.setattr(wsgi, "_bulkhead", bulkhead)
    monkeypatch.setattr(wsgi, "time", SimpleNamespace(sleep=sleep))
    settings.PAGES_READ_LIMIT_PER_ADDRESS = (1, 100)
    poll, address = make_poll(), new_address()

    def read() -> str:
        environ = RequestFactory().get(f"/invite/{poll['id']}", REMOTE_ADDR=address).environ
        started = []
        with database_kept_open():
            chunks = wsgi.application(environ, lambda status, headers, exc_info=None: started.append(status))
            b"".join(chunks)
            chunks.close()
        return started[0]

    assert read().startswith("200") and acquired == [POLL_PAGES + poll["id"], PAGES] and not waits
    assert read().startswith("429")
    assert waits == [(REFUSED_READ_DELAY, True, {})]  # a free slot and no poll's compartment while it waits
