"""`manage.py ratelimit status|reset SPACE_ID [--json]`."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, SystemCheckError
from django.db import connection

from ratelimit.models import LimitOverride
from ratelimit.tests.conftest import closed_port_url


def run(*args) -> str:
    out = StringIO()
    call_command("ratelimit", *args, stdout=out)
    return out.getvalue()


@pytest.mark.usefixtures("store")
def test_status_shows_both_windows_and_counts_nothing(api, space, clock, store):
    for _ in range(3):
        api.get("/v1/polls")
    clock.shift(20.5)
    data = json.loads(run("status", space.pk, "--json"))
    assert data == {
        "space": space.pk,
        "store": {"redis": "redis", "embedded": "database"}[store],
        "policy": "60;w=60, 5000;w=86400",
        "override": None,
        "minute": {"limit": 60, "used": 3, "remaining": 57, "open": True, "resetSeconds": 40},
        "day": {"limit": 5000, "used": 3, "remaining": 4997, "open": True, "resetSeconds": 86380},
    }
    assert api.get("/v1/polls")["RateLimit-Remaining"] == "56"  # status counted nothing
    text = run("status", space.pk)
    assert f"({space.pk})" in text and "Policy 60;w=60, 5000;w=86400 (default limits)" in text
    assert "minute: 4/60 used, 56 left, resets in 40 s; day: 4/5000 used, 4996 left, resets in 86380 s" in text
    clock.shift(40)
    assert "minute: 0/60 used, 60 left (no window open); day: 4/5000" in run("status", space.pk)


@pytest.mark.usefixtures("store")
def test_reset_forgets_both_windows(api, space, clock):
    for _ in range(60):
        api.get("/v1/polls")
    assert api.get("/v1/polls").status_code == 429
    data = json.loads(run("reset", space.pk, "--json"))
    closed = {"used": 0, "open": False, "resetSeconds": None}
    assert data["minute"] == {"limit": 60, "remaining": 60, **closed}
    assert data["day"] == {"limit": 5000, "remaining": 5000, **closed}
    assert "Counters of space" in run("reset", space.pk)
    r = api.get("/v1/polls")
    assert (r.status_code, r["RateLimit-Remaining"], r["RateLimit-Reset"]) == (200, "59", "60")


@pytest.mark.usefixtures("store")
def test_status_shows_an_override(space):
    LimitOverride.objects.create(space=space, per_minute=100, note="Custom plan")
    data = json.loads(run("status", space.pk, "--json"))
    assert data["policy"] == "100;w=60, 5000;w=86400"
    assert data["override"] == {"perMinute": 100, "perDay": None, "note": "Custom plan"}
    assert "(override: per minute 100, per day default (Custom plan))" in run("status", space.pk)


@pytest.mark.parametrize(
    "args, message",
    [
        (("status", "nope"), "no space with id 'nope'"),
        (("reset", "nope", "--json"), "no space with id 'nope'"),
        (("reset",), "SPACE_ID"),
        (("wipe", "x"), "invalid choice: 'wipe'"),
    ],
)
def test_bad_input_is_refused(db, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("ratelimit", *args)


@pytest.mark.parametrize("action", ["status", "reset"])
def test_an_unreachable_store_is_an_error(space, settings, action):
    settings.REDIS_URL = closed_port_url()
    with pytest.raises(CommandError, match="the rate-limit store is unreachable"):
        call_command("ratelimit", action, space.pk)


def test_the_embedded_store_refuses_to_start_on_an_old_sqlite(settings, monkeypatch):
    settings.REDIS_URL = ""
    monkeypatch.setattr("ratelimit.apps.sqlite3.sqlite_version_info", (3, 34, 1))
    monkeypatch.setattr("ratelimit.apps.sqlite3.sqlite_version", "3.34.1")
    monkeypatch.setattr(connection, "vendor", "sqlite")
    with pytest.raises(SystemCheckError, match="needs SQLite 3.35 or newer; this Python uses SQLite 3.34.1"):
        call_command("check")
    settings.REDIS_URL = "redis://127.0.0.1:6379/2"
    call_command("check", stdout=StringIO())  # Redis holds the counters: no error
