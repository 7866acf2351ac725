"""Creating or changing an endpoint resolves its URL's host (the URL rules), and that lookup
waits on the outside world: it happens before any transaction (with SQLite a transaction
holds the database's write lock, for every process) and once per request."""

import socket

import pytest
from django.db import connection

from webhooks import targets
from webhooks.models import Endpoint

pytestmark = pytest.mark.django_db(transaction=True)  # so that a test's own transaction does not count


@pytest.fixture
def lookups(monkeypatch):
    """Every getaddrinfo of the URL rules, with whether a transaction was open: hooks.test
    resolves to a public address, private.test to a loopback one."""
    seen = []

    def getaddrinfo(host, port, *args, **kwargs):
        seen.append((host, connection.in_atomic_block))
        address = "93.184.216.34" if host == "hooks.test" else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(targets.socket, "getaddrinfo", getaddrinfo)
    return seen


def test_create_resolves_once_outside_any_transaction(api, lookups):
    r = api.post("/v1/webhooks", {"url": "https://hooks.test/a"}, headers={"Idempotency-Key": "k1"})
    assert r.status_code == 201
    assert lookups == [("hooks.test", False)]


def test_change_resolves_once_outside_any_transaction(api, lookups):
    endpoint_id = api.post("/v1/webhooks", {"url": "https://hooks.test/a"}).body["data"]["id"]
    lookups.clear()
    r = api.patch(f"/v1/webhooks/{endpoint_id}", {"url": "https://hooks.test/b"})
    assert r.status_code == 200 and r.body["data"]["url"] == "https://hooks.test/b"
    assert lookups == [("hooks.test", False)]


def test_a_refused_host_is_refused_as_before(api, lookups):
    r = api.post("/v1/webhooks", {"url": "https://private.test/a"})
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert r.body["error"]["message"].startswith("url: ")
    assert lookups == [("private.test", False)] and not Endpoint.objects.exists()


@pytest.mark.parametrize("raw", [b'{"url": 5}', b"not json", b'["https://hooks.test/a"]'])
def test_bodies_without_a_url_string_are_refused_by_the_parser_as_before(api, lookups, raw):
    r = api.post("/v1/webhooks", raw=raw)
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert lookups == []
