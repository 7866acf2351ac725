"""Per-space overrides from the back office, seen by the API on the next request."""

import pytest
from django.urls import reverse

from ratelimit.models import LimitOverride
from ratelimit.tests.conftest import closed_port_url


@pytest.mark.usefixtures("store")
def test_an_override_set_in_the_back_office_applies_to_the_next_request(
    clock, api, space, admin_client, django_capture_on_commit_callbacks  # clock first: the login must not expire
):
    assert api.get("/v1/polls")["RateLimit-Policy"] == "60;w=60, 5000;w=86400"
    with django_capture_on_commit_callbacks(execute=True):
        r = admin_client.post(
            reverse("admin:ratelimit_limitoverride_add"),
            {"space": space.pk, "per_minute": "120", "per_day": "", "note": "Custom plan"},
        )
    assert r.status_code == 302
    override = LimitOverride.objects.get(space=space)
    assert (override.per_minute, override.per_day, override.note) == (120, None, "Custom plan")
    r = api.get("/v1/polls")
    assert (r["RateLimit-Policy"], r["RateLimit-Limit"], r["RateLimit-Remaining"]) == (
        "120;w=60, 5000;w=86400", "120", "118")

    page = admin_client.get(reverse("admin:ratelimit_limitoverride_change", args=[space.pk]))
    assert "minute: 2/120 used, 118 left, resets in 60 s; day: 2/5000 used, 4998 left" in page.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        r = admin_client.post(
            reverse("admin:ratelimit_limitoverride_change", args=[space.pk]),
            {"per_minute": "", "per_day": "10000", "note": "Bigger plan"},
        )
    assert r.status_code == 302
    assert api.get("/v1/polls")["RateLimit-Policy"] == "60;w=60, 10000;w=86400"

    with django_capture_on_commit_callbacks(execute=True):
        r = admin_client.post(reverse("admin:ratelimit_limitoverride_delete", args=[space.pk]), {"post": "yes"})
    assert r.status_code == 302
    assert not LimitOverride.objects.exists()
    assert api.get("/v1/polls")["RateLimit-Policy"] == "60;w=60, 5000;w=86400"


@pytest.mark.parametrize(
    "per_minute, per_day, error",
    [
        ("", "", "Set a limit per minute, per day or both"),
        ("0", "", "Ensure this value is greater than or equal to 1."),
        ("-5", "", "Ensure this value is greater than or equal to 0."),
        ("ten", "", "Enter a whole number."),
    ],
)
def test_the_back_office_refuses_limits_that_are_not_positive(space, admin_client, per_minute, per_day, error):
    r = admin_client.post(
        reverse("admin:ratelimit_limitoverride_add"),
        {"space": space.pk, "per_minute": per_minute, "per_day": per_day, "note": ""},
    )
    assert r.status_code == 200
    assert error in r.content.decode()
    assert not LimitOverride.objects.exists()


def test_the_change_page_says_when_the_store_is_unreachable(space, admin_client, settings):
    LimitOverride.objects.create(space=space, per_minute=5)
    settings.REDIS_URL = closed_port_url()
    page = admin_client.get(reverse("admin:ratelimit_limitoverride_change", args=[space.pk]))
    assert page.status_code == 200
    assert "The rate-limit store is unreachable." in page.content.decode()


def test_deleting_overrides_in_bulk_returns_the_spaces_to_the_defaults(
    clock, api, space, make_space, admin_client, redis_store, django_capture_on_commit_callbacks
):
    other, _ = make_space()
    for each in (space, other):
        LimitOverride.objects.create(space=each, per_minute=5)
    assert api.get("/v1/polls")["RateLimit-Policy"] == "5;w=60, 5000;w=86400"  # now cached in Redis
    with django_capture_on_commit_callbacks(execute=True):
        r = admin_client.post(
            reverse("admin:ratelimit_limitoverride_changelist"),
            {"action": "delete_selected", "_selected_action": [space.pk, other.pk], "post": "yes"},
        )
    assert r.status_code == 302
    assert not LimitOverride.objects.exists()
    assert api.get("/v1/polls")["RateLimit-Policy"] == "60;w=60, 5000;w=86400"
