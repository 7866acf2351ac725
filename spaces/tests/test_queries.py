"""The hand-written key lookup (spaces.queries) gives what the ORM gives."""

from datetime import timedelta

import pytest
from django.utils import timezone

from spaces import services
from spaces.keys import prefix_of
from spaces.models import ApiKey, Subscription
from spaces.queries import key_by_prefix


def orm_lookup(prefix):
    return ApiKey.objects.select_related("space__owner", "space__subscription", "created_by").filter(prefix=prefix).first()


def fields(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def assert_same(found, expected):
    assert fields(found) == fields(expected)
    assert fields(found.space) == fields(expected.space)
    assert fields(found.space.owner) == fields(expected.space.owner)
    assert fields(found.created_by) == fields(expected.created_by)
    assert found.space.is_pro == expected.space.is_pro


@pytest.mark.parametrize("plan", ["pro", "inactive", "none"])
def test_the_key_with_its_space_owner_subscription_and_creator(db, django_assert_num_queries, plan):
    space = services.create_space(name="Acme", owner_email="owner@example.com", owner_name="Owner", pro=plan == "pro")
    if plan == "none":  # older spaces have no subscription row at all
        Subscription.objects.filter(space=space).delete()
    key, raw = services.create_key(space=space, name="ci", expires_at=timezone.now() + timedelta(days=3))
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
    expected = orm_lookup(prefix_of(raw))
    with django_assert_num_queries(1):
        found = key_by_prefix(prefix_of(raw))
        assert_same(found, expected)
        assert found.space.is_pro is (plan == "pro")
        if plan == "none":
            assert not hasattr(found.space, "subscription")  # cached as missing, like the ORM's
        else:
            assert found.space.subscription.space is found.space


def test_an_unknown_prefix_finds_nothing(db):
    assert key_by_prefix("zzzzzzzz") is None
