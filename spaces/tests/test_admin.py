"""The back office, through Django's test client logged in as a superuser."""

import re
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from conftest import Api, admin_history, form_data
from spaces import services
from spaces.models import ApiKey, Membership, Space, Subscription, User

KEY = re.compile(r"sk_[A-Za-z0-9_-]{8}_[A-Za-z0-9_-]{32}")


@pytest.fixture
def space(db):
    return services.create_space(name="Acme", owner_email="boss@example.com", owner_name="Boss", pro=True)


@pytest.fixture
def raw_key(space):
    return services.create_key(space=space, name="first")[1]


def url(model: str, view: str, *args) -> str:
    return reverse(f"admin:spaces_{model}_{view}", args=args)


def act(client, model: str, action: str, objects) -> None:
    response = client.post(
        url(model, "changelist"), {"action": action, "_selected_action": [obj.pk for obj in objects]}
    )
    assert response.status_code == 302


@pytest.mark.parametrize("model", ["user", "space", "membership", "subscription", "apikey"])
def test_changelists_search_and_forms_load(superuser_client, space, raw_key, model):
    services.add_member(space=space, email="alice@example.com")
    assert superuser_client.get(url(model, "changelist")).status_code == 200
    assert superuser_client.get(url(model, "changelist"), {"q": "acme"}).status_code == 200
    assert superuser_client.get(url(model, "add")).status_code == 200
    obj = {"user": space.owner, "space": space, "membership": Membership.objects.first(),
           "subscription": space.subscription, "apikey": ApiKey.objects.get()}[model]
    assert superuser_client.get(url(model, "change", obj.pk)).status_code == 200


def test_the_key_list_shows_prefix_and_state_never_the_secret(superuser_client, space, raw_key):
    revoked = services.revoke_key(key=services.create_key(space=space, name="old")[0])
    page = superuser_client.get(url("apikey", "changelist")).content.decode()
    key = ApiKey.objects.get(name="first")
    assert f"sk_{key.prefix}_…" in page and f"sk_{revoked.prefix}_…" in page
    assert raw_key not in page and raw_key[12:] not in page
    for stored in ApiKey.objects.all():
        assert stored.hash not in page and stored.salt not in page
    active_only = superuser_client.get(url("apikey", "changelist"), {"state": "active"}).content.decode()
    assert key.prefix in active_only and revoked.prefix not in active_only
    revoked_only = superuser_client.get(url("apikey", "changelist"), {"state": "revoked"}).content.decode()
    assert revoked.prefix in revoked_only and key.prefix not in revoked_only


def test_adding_a_key_shows_it_once_and_it_works(superuser_client, space):
    response = superuser_client.post(
        url("apikey", "add"), {"space": space.pk, "name": "from admin", "expires_at_0": "2100-01-31",
                               "expires_at_1": "12:00:00"}, follow=True
    )
    assert response.status_code == 200
    shown = KEY.findall(response.content.decode())
    assert len(shown) == 1
    raw = shown[0]
    key = ApiKey.objects.get()
    assert (key.prefix, key.name, key.space, key.created_by) == (raw[3:11], "from admin", space, space.owner)
    assert key.expires_at == datetime(2100, 1, 31, 12, tzinfo=UTC)
    assert Api(raw).get("/v1/polls").status_code == 200
    for page in (url("apikey", "changelist"), url("apikey", "change", key.pk)):
        content = superuser_client.get(page).content.decode()
        assert raw not in content and f"sk_{key.prefix}_…" in content
        assert key.hash not in content and key.salt not in content


def test_the_add_form_asks_only_for_space_name_and_expiry(superuser_client, space):
    form = superuser_client.get(url("apikey", "add")).context["adminform"].form
    assert list(form.fields) == ["space", "name", "expires_at"]


@pytest.mark.parametrize(
    "expiry, message", [(("2000-01-01", "00:00:00"), "the expiry must be in the future"), (None, "at most 10 active keys")]
)
def test_adding_a_key_refused_by_the_service_shows_a_form_error(superuser_client, space, expiry, message):
    if expiry is None:
        for _ in range(10):
            services.create_key(space=space)
    before = ApiKey.objects.count()
    date, time = expiry or ("", "")
    response = superuser_client.post(url("apikey", "add"), {"space": space.pk, "name": "", "expires_at_0": date,
                                                        "expires_at_1": time})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert ApiKey.objects.count() == before


def test_the_expiry_is_editable_through_the_service(superuser_client, space, raw_key):
    key = ApiKey.objects.get()
    page = superuser_client.get(url("apikey", "change", key.pk))
    assert list(page.context["adminform"].form.fields) == ["name", "expires_at"]
    data = {**form_data(page), "name": "renamed", "expires_at_0": "2100-06-01", "expires_at_1": "08:30:00"}
    assert superuser_client.post(url("apikey", "change", key.pk), data).status_code == 302
    key.refresh_from_db()
    assert (key.name, key.expires_at) == ("renamed", datetime(2100, 6, 1, 8, 30, tzinfo=UTC))

    data.update({"expires_at_0": "2001-01-01", "expires_at_1": "00:00:00"})
    response = superuser_client.post(url("apikey", "change", key.pk), data)
    assert "the expiry must be in the future" in response.content.decode()
    key.refresh_from_db()
    assert key.expires_at == datetime(2100, 6, 1, 8, 30, tzinfo=UTC)
    assert Api(raw_key).get("/v1/polls").status_code == 200


def test_reviving_an_expired_key_respects_the_ten_key_limit(superuser_client, space):
    expired = services.create_key(space=space, expires_at=datetime(2099, 1, 1, tzinfo=UTC))[0]
    ApiKey.objects.filter(pk=expired.pk).update(expires_at=datetime(2000, 1, 1, tzinfo=UTC))
    for _ in range(10):
        services.create_key(space=space)
    data = {**form_data(superuser_client.get(url("apikey", "change", expired.pk))), "expires_at_0": "", "expires_at_1": ""}
    response = superuser_client.post(url("apikey", "change", expired.pk), data)
    assert "at most 10 active keys" in response.content.decode()
    expired.refresh_from_db()
    assert expired.expires_at == datetime(2000, 1, 1, tzinfo=UTC)


def test_the_revoke_action_revokes(superuser_client, space, raw_key):
    other = services.create_key(space=space, name="other")[1]
    act(superuser_client, "apikey", "revoke", ApiKey.objects.filter(name="first"))
    assert ApiKey.objects.get(name="first").revoked_at is not None
    assert ApiKey.objects.get(name="other").revoked_at is None
    assert Api(raw_key).get("/v1/polls").status_code == 401
    assert Api(other).get("/v1/polls").status_code == 200


def test_keys_are_revoked_never_deleted(superuser_client, raw_key):
    key = ApiKey.objects.get()
    assert superuser_client.get(url("apikey", "delete", key.pk)).status_code == 403
    assert ApiKey.objects.exists()


def test_ban_and_unban_actions(superuser_client, space, raw_key):
    bystander = services.get_or_create_user(email="someone@example.com")
    act(superuser_client, "user", "ban", [space.owner])
    assert User.objects.get(pk=space.owner.pk).is_banned is True
    assert User.objects.get(pk=bystander.pk).is_banned is False
    assert Api(raw_key).get("/v1/polls").status_code == 401
    act(superuser_client, "user", "unban", [space.owner])
    assert User.objects.get(pk=space.owner.pk).is_banned is False
    assert Api(raw_key).get("/v1/polls").status_code == 200


def test_a_user_e_mail_is_unique_in_any_letter_case(superuser_client, space):
    response = superuser_client.post(url("user", "add"), {"name": "Clone", "email": "BOSS@example.com", "image": ""})
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert User.objects.count() == 1


def test_adding_a_space_creates_owner_membership_and_plan(superuser_client, space):
    response = superuser_client.post(url("space", "add"), {"name": "Beta", "owner": space.owner.pk, "pro": "on"})
    assert response.status_code == 302
    beta = Space.objects.get(name="Beta")
    assert list(beta.members.all()) == [space.owner]
    assert beta.subscription.is_active is True


def test_the_subscription_inline_switches_the_plan(superuser_client, space, raw_key):
    page = superuser_client.get(url("space", "change", space.pk))
    assert {inline.formset.prefix for inline in page.context["inline_admin_formsets"]} == {"subscription", "memberships"}
    data = form_data(page)
    del data["subscription-0-is_active"]
    assert superuser_client.post(url("space", "change", space.pk), data).status_code == 302
    assert Subscription.objects.get(space=space).is_active is False
    assert Api(raw_key).get("/v1/polls").body["error"]["code"] == "SPACE_NOT_PRO"


def test_the_space_page_lists_its_members(superuser_client, space):
    services.add_member(space=space, email="alice@example.com")
    page = superuser_client.get(url("space", "change", space.pk)).content.decode()
    assert "alice@example.com" in page and "boss@example.com" in page


def test_members_are_added_and_removed_but_never_the_owner(superuser_client, space):
    alice = services.get_or_create_user(email="alice@example.com")
    response = superuser_client.post(url("membership", "add"), {"space": space.pk, "user": alice.pk})
    assert response.status_code == 302
    assert set(space.members.all()) == {space.owner, alice}

    owner_membership = Membership.objects.get(space=space, user=space.owner)
    assert superuser_client.get(url("membership", "delete", owner_membership.pk)).status_code == 403
    response = superuser_client.post(
        url("membership", "changelist"),
        {"action": "remove_members", "_selected_action": list(Membership.objects.values_list("pk", flat=True))},
        follow=True,
    )
    assert "the owner of a space cannot be removed from it" in response.content.decode()
    assert list(space.members.all()) == [space.owner]


def test_spaces_cannot_be_deleted_from_the_back_office(superuser_client, space):
    response = superuser_client.post(url("space", "delete", space.pk), {"post": "yes"})
    assert response.status_code == 403
    assert Space.objects.filter(pk=space.pk).exists()


def test_the_index_is_branded_with_one_users_entry_and_no_view_site_link(superuser_client):
    page = superuser_client.get(reverse("admin:index")).content.decode()
    assert "<title>Spaces, polls, webhooks and limits | Scheduling Poll back office</title>" in page
    assert "Django administration" not in page
    assert ">View site<" not in page
    assert page.count(">Users<") == 1  # the staff logins of Django's authentication app
    assert ">App users<" in page  # the people of the app (spaces.User)


def test_bans_revocations_and_plan_changes_are_recorded_in_the_history(superuser_client, space, raw_key):
    user = space.owner
    act(superuser_client, "user", "ban", [user])
    act(superuser_client, "user", "unban", [user])
    assert admin_history(user) == [("operator", "Banned"), ("operator", "Unbanned")]
    assert "Unbanned" in superuser_client.get(url("user", "history", user.pk)).content.decode()
    key = ApiKey.objects.get()
    act(superuser_client, "apikey", "revoke", [key])
    act(superuser_client, "apikey", "revoke", [key])  # revoked already: nothing done, nothing recorded
    assert admin_history(key) == [("operator", "Revoked")]
    act(superuser_client, "subscription", "deactivate", [space.subscription])
    assert admin_history(space.subscription) == [("operator", "Deactivated Pro")]
