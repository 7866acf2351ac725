"""Adding a poll in the back office: the form only parses, `services.create_poll` runs
when the admin saves (core.backoffice.ServiceFormAdmin)."""

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from conftest import admin_history
from core.errors import ServiceError
from polls import services
from polls.models import Poll
from spaces import services as space_services

DATA = {"title": "Offsite", "kind": "date", "options": "2030-06-01\n2030-06-02"}


@pytest.fixture
def space(db):
    return space_services.create_space(name="Acme", owner_email="boss@example.com", owner_name="Boss", pro=True)


def test_a_refusal_at_save_time_is_a_form_error_and_rolls_back(superuser_client, space, monkeypatch):
    real = services.create_poll

    def writes_then_refuses(**kwargs):
        real(**kwargs)
        raise ServiceError("title: refused at save time")

    monkeypatch.setattr(services, "create_poll", writes_then_refuses)
    response = superuser_client.post(reverse("admin:polls_poll_add"), {"space": space.pk, **DATA})
    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == ["title: refused at save time"]
    assert not Poll.objects.exists()
    assert not LogEntry.objects.exists()


def test_clean_only_parses_and_a_bad_option_never_reaches_the_service(superuser_client, space, monkeypatch):
    calls = []
    monkeypatch.setattr(services, "create_poll", lambda **kwargs: calls.append(kwargs))
    response = superuser_client.post(reverse("admin:polls_poll_add"), {"space": space.pk, **DATA, "options": "1 June"})
    assert response.status_code == 200
    errors = response.context["adminform"].form.non_field_errors()
    assert errors == ["options: '1 June': must be a date YYYY-MM-DD"]
    assert calls == [] and not Poll.objects.exists()


def test_an_added_poll_is_in_the_history(superuser_client, space):
    assert superuser_client.post(reverse("admin:polls_poll_add"), {"space": space.pk, **DATA}).status_code == 302
    assert admin_history(Poll.objects.get()) == [("operator", "Added.")]
