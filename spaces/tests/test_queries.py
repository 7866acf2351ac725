"""The hand-written key lookup (spaces.queries) gives what the ORM gives."""

from datetime import timedelta

import pytest
from django.utils import timezone

from spaces import queries, services
from spaces.keys import prefix_of
from spaces.models import ApiKey, Space, Subscription, User


def key_by_prefix(prefix):
    key, ridden = queries.key_by_prefix(prefix)
    assert ridden is None  # nothing rides
    return key


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


def test_built_objects_are_given_again_only_for_the_same_row(db, django_assert_num_queries):
    """The process keeps what it built for a key; any change of any of the five rows is a
    different row, read and built again at once (one query every time)."""
    space = services.create_space(name="Acme", owner_email="owner@example.com", owner_name="Owner", pro=True)
    key, raw = services.create_key(space=space, name="ci")
    prefix = prefix_of(raw)
    first = key_by_prefix(prefix)
    with django_assert_num_queries(1):
        assert key_by_prefix(prefix) is first

    changes = [
        (lambda: Space.objects.filter(pk=space.pk).update(name="Renamed"), lambda found: found.space.name == "Renamed"),
        (lambda: User.objects.filter(pk=space.owner_id).update(is_banned=True), lambda found: found.space.owner.is_banned),
        (lambda: Subscription.objects.filter(space=space).update(is_active=False), lambda found: not found.space.is_pro),
        (lambda: ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now()),
         lambda found: not found.is_active_at(timezone.now())),
    ]
    previous = first
    for change, seen in changes:
        change()
        with django_assert_num_queries(1):
            found = key_by_prefix(prefix)
        assert found is not previous and seen(found)
        assert_same(found, orm_lookup(prefix))
        previous = found
    assert not first.space.owner.is_banned and first.space.name == "Acme"  # built objects are never changed


@pytest.mark.parametrize("text", ['Zoë\'s "café" \\ 日本 😀', '(a, "b"), c\\\\d ""), (', " spaced ", "NULL", ",", "tab\tnew\nline"])
def test_the_key_row_keeps_every_value_as_stored(db, text):
    # The row comes packed in one text (core.rows.pack: a JSON array on SQLite, the row's
    # text on PostgreSQL): the values must be the ones the columns give, whatever the text.
    space = services.create_space(name="Acme", owner_email="owner@example.com", owner_name="Owner", pro=True)
    key, raw = services.create_key(space=space, name="ci", expires_at=timezone.now() + timedelta(days=3))
    ApiKey.objects.filter(pk=key.pk).update(name=text)
    Space.objects.filter(pk=space.pk).update(name=text)
    User.objects.filter(pk=space.owner_id).update(name=text, image=text)
    User.objects.filter(pk=key.created_by_id).update(image=None)
    found, expected = key_by_prefix(prefix_of(raw)), orm_lookup(prefix_of(raw))
    assert_same(found, expected)
    assert found.name == found.space.name == found.space.owner.name == text
