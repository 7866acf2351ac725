"""The back office's save pattern (core.backoffice.ServiceFormAdmin), on the API-key and
webhook-endpoint add forms: clean() never writes, the save is the service call, and a
refusal there rolls the whole save back and shows as a form error."""

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from conftest import admin_history
from core.errors import ServiceError
from spaces import services
from spaces.models import ApiKey, Space
from webhooks import services as webhook_services
from webhooks.models import Endpoint


@pytest.fixture
def space(db):
    return services.create_space(name="Acme", owner_email="boss@example.com", owner_name="Boss", pro=True)


def test_a_refusal_after_a_write_at_save_time_rolls_everything_back(superuser_client, space, monkeypatch):
    real = services.create_key

    def writes_then_refuses(**kwargs):
        real(**kwargs)  # a row is written, then the service refuses
        raise ServiceError("refused at save time")

    monkeypatch.setattr(services, "create_key", writes_then_refuses)
    response = superuser_client.post(
        reverse("admin:spaces_apikey_add"), {"space": space.pk, "name": "k", "expires_at_0": "", "expires_at_1": ""}
    )
    assert response.status_code == 200  # the form again, not a 500
    form = response.context["adminform"].form
    assert form.non_field_errors() == ["refused at save time"]
    assert form["name"].value() == "k"  # the submission is kept
    content = response.content.decode()
    assert "refused at save time" in content and "The new API key" not in content
    assert not ApiKey.objects.exists()
    assert not LogEntry.objects.exists()


def test_nothing_is_created_when_clean_fails(superuser_client, space, monkeypatch):
    calls = []
    monkeypatch.setattr(services, "create_key", lambda **kwargs: calls.append(kwargs))
    monkeypatch.setattr(webhook_services, "create_endpoint", lambda **kwargs: calls.append(kwargs))
    response = superuser_client.post(
        reverse("admin:spaces_apikey_add"), {"space": space.pk, "name": "k", "expires_at_0": "soon", "expires_at_1": ""}
    )
    assert response.status_code == 200 and response.context["adminform"].form.errors
    response = superuser_client.post(
        reverse("admin:webhooks_endpoint_add"), {"space": space.pk, "url": "https://example.com/hook"}
    )  # no event type
    assert response.status_code == 200 and "event_types" in response.context["adminform"].form.errors
    assert calls == []
    assert not ApiKey.objects.exists() and not Endpoint.objects.exists()


def test_a_saved_key_is_shown_once_and_recorded_in_the_history(superuser_client, space):
    response = superuser_client.post(
        reverse("admin:spaces_apikey_add"), {"space": space.pk, "name": "k", "expires_at_0": "", "expires_at_1": ""},
        follow=True,
    )
    assert "The new API key is" in response.content.decode()
    key = ApiKey.objects.get()
    assert admin_history(key) == [("operator", "Added.")]


def test_a_service_refusal_in_a_save_model_of_its_own_is_a_form_error(superuser_client, space, monkeypatch):
    real = services.create_space

    def writes_then_refuses(**kwargs):
        real(**kwargs)
        raise ServiceError("refused at save time")

    monkeypatch.setattr(services, "create_space", writes_then_refuses)
    response = superuser_client.post(reverse("admin:spaces_space_add"), {"name": "Beta", "owner": space.owner.pk})
    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors() == ["refused at save time"]
    assert not Space.objects.filter(name="Beta").exists()
    assert not LogEntry.objects.exists()
