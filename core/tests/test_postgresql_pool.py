"""The pool's look at a connection before lending it (core/postgresql/base.py: is_alive).

PostgreSQL only: deselected on SQLite (conftest.py)."""

import select

import psycopg
import pytest
from django.db import connection

from core.postgresql.base import is_alive

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]


def test_the_look_at_a_lent_connection_never_goes_through_select_as_patched(monkeypatch):
    """Under gevent `select.select` and `select.poll` are gevent's, which yield to the hub
    even with a zero timeout: every request's checkout would have let the other greenlets
    run first."""
    raw = psycopg.connect(**connection.get_connection_params())  # as the pool makes them

    def patched(*args):
        raise AssertionError("select.select was called")

    monkeypatch.setattr(select, "select", patched)
    monkeypatch.setattr(select, "poll", patched)
    assert is_alive(raw)
    raw.pgconn.finish()  # closed under it, as a server restart or core.dbguard leaves it
    assert not is_alive(raw)
