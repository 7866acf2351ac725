"""Password guessing at /admin/login: failed logins are counted per account and per client
address; the 5th failure locks for LOGIN_LOCKOUT_MINUTES (the right password too), each
lockout is logged, tries during a lockout do not extend it, and staff lift it at once in the
back office or with manage.py. Over HTTP (the test client through every middleware)."""

import logging
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

PASSWORD = "correct horse battery staple"


@pytest.fixture
def staff(db):
    def make(username: str):
        return get_user_model().objects.create_user(username=username, password=PASSWORD, is_staff=True)

    return make


def login(username: str, password: str, ip: str = "203.0.113.7") -> int:
    """The status of a back-office login: 302 (in), 200 (the form again: refused), 429 (locked)."""
    response = Client(REMOTE_ADDR=ip).post("/admin/login/?next=/admin/", {"username": username, "password": password})
    return response.status_code


def test_five_wrong_passwords_lock_the_account_even_for_the_right_one(staff, caplog):
    staff("alice")
    with caplog.at_level(logging.WARNING, logger="service.security"):
        assert [login("alice", f"guess{n}") for n in range(4)] == [200] * 4
        assert not [r for r in caplog.records if r.name == "service.security"]
        assert login("alice", "guess4") == 429  # the 5th failure locks
        response = Client(REMOTE_ADDR="192.0.2.50").post("/admin/login/", {"username": "alice", "password": PASSWORD})
        assert response.status_code == 429
        assert b"Account locked: too many login attempts. Please try again later." in response.content
    lockouts = [r for r in caplog.records if r.name == "service.security"]
    assert lockouts and lockouts[0].getMessage() == "back-office login locked out"
    assert (lockouts[0].username, lockouts[0].ip_address, lockouts[0].minutes) == ("alice", "203.0.113.7", 15)


def test_the_account_is_locked_from_every_address(staff):
    staff("alice")
    for n in range(5):  # a guess from each of five addresses
        login("alice", f"guess{n}", ip=f"198.51.100.{n + 1}")
    assert login("alice", PASSWORD, ip="192.0.2.200") == 429


def test_an_address_is_locked_for_every_account(staff):
    staff("alice")
    staff("bob")
    for n in range(5):
        login(f"nobody{n}", "guess", ip="198.51.100.9")
    assert login("bob", PASSWORD, ip="198.51.100.9") == 429
    assert login("bob", PASSWORD, ip="198.51.100.10") == 302  # from elsewhere bob is fine


def test_a_lockout_ends_on_its_own_and_guessing_on_does_not_extend_it(staff, time_machine):
    staff("alice")
    time_machine.move_to("2030-01-01T10:00:00Z", tick=False)
    for n in range(5):
        login("alice", f"guess{n}")
    time_machine.move_to("2030-01-01T10:14:00Z", tick=False)
    assert login("alice", "still guessing") == 429  # refused, and not counted
    time_machine.move_to("2030-01-01T10:15:01Z", tick=False)
    assert login("alice", PASSWORD) == 302


def test_staff_lift_a_lockout_with_manage_py(staff):
    staff("alice")
    for n in range(5):
        login("alice", f"guess{n}")
    assert login("alice", PASSWORD, ip="192.0.2.1") == 429
    call_command("axes_reset_username", "alice")
    assert login("alice", PASSWORD, ip="192.0.2.1") == 302


def test_staff_lift_a_lockout_in_the_back_office(staff, superuser_client):
    staff("alice")
    for n in range(5):
        login("alice", f"guess{n}")
    assert login("alice", PASSWORD, ip="192.0.2.1") == 429
    page = superuser_client.get("/admin/axes/accessattempt/")
    assert page.status_code == 200 and b"alice" in page.content
    attempts = list(AccessAttempt.objects.filter(username="alice").values_list("pk", flat=True))
    response = superuser_client.post("/admin/axes/accessattempt/", {
        "action": "delete_selected", "_selected_action": attempts, "post": "yes",
    })
    assert response.status_code == 302
    assert login("alice", PASSWORD, ip="192.0.2.1") == 302


def test_the_lockout_is_bounded_by_the_setting(settings):
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=settings.LOGIN_LOCKOUT_MINUTES)
    assert settings.AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT is False
