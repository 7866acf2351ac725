"""The operator commands: output (plain and `--json`), what they store, and refusals that
exit non-zero (CommandError) with a clear message and store nothing."""

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management.base import CommandError

from core.models import ServiceSwitch
from spaces import services
from spaces.models import ApiKey, Membership, Space, Subscription, User

KEY = re.compile(r"^sk_[A-Za-z0-9_-]{8}_[A-Za-z0-9_-]{32}$")
INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def counts():
    return (User.objects.count(), Space.objects.count(), Membership.objects.count(), Subscription.objects.count(),
            ApiKey.objects.count())


@pytest.fixture
def space(db):
    return services.create_space(name="Acme", owner_email="boss@example.com", owner_name="Boss", pro=True)


# --- spaces -------------------------------------------------------------------------------


def test_spaces_create_prints_the_id_and_stores_owner_membership_and_free_plan(run):
    out = run.text("spaces", "create", "--name", "  Acme  ", "--owner-email", "Boss@Example.com", "--owner-name", "Boss")
    space = Space.objects.get()
    assert out.strip() == space.id
    assert space.name == "Acme"
    assert (space.owner.email, space.owner.name) == ("Boss@Example.com", "Boss")
    assert list(space.members.all()) == [space.owner]
    assert space.subscription.is_active is False


def test_spaces_create_json_with_pro_reuses_an_existing_owner_whatever_the_case(run, space):
    data = run("spaces", "create", "--name", "Second", "--owner-email", "BOSS@example.COM", "--pro")
    created = Space.objects.get(pk=data["id"])
    assert data == {
        "id": created.id,
        "name": "Second",
        "owner": {"id": space.owner.id, "name": "Boss", "email": "boss@example.com", "banned": False},
        "plan": "pro",
        "createdAt": data["createdAt"],
    }
    assert INSTANT.match(data["createdAt"])
    assert created.is_pro and created.owner == space.owner
    assert User.objects.count() == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--name", "Acme", "--owner-email", "not-an-email"], "not a valid e-mail address: 'not-an-email'"),
        (["--name", "   ", "--owner-email", "a@example.com"], "the space name must be 1 to 255 characters"),
        (["--name", "x" * 256, "--owner-email", "a@example.com"], "the space name must be 1 to 255 characters"),
        (["--name", "Acme", "--owner-email", "a@example.com", "--owner-name", "n" * 256],
         "a user name must be at most 255 characters"),
        (["--name", "Acme"], "the following arguments are required: --owner-email"),
        (["--owner-email", "a@example.com"], "the following arguments are required: --name"),
    ],
)
def test_spaces_create_refuses_bad_input_and_stores_nothing(run, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run("spaces", "create", *args)
    assert counts() == (0, 0, 0, 0, 0)


def test_a_group_command_needs_an_action(run):
    with pytest.raises(CommandError, match="the following arguments are required: ACTION"):
        run.text("spaces")
    with pytest.raises(CommandError, match="invalid choice: 'delete'"):
        run.text("spaces", "delete")


def test_spaces_add_member_creates_the_user_once(run, space):
    data = run("spaces", "add-member", space.id, "--email", "Alice@Example.com", "--name", "Alice")
    alice = User.objects.get(email="Alice@Example.com")
    assert data == {"spaceId": space.id, "user": {"id": alice.id, "name": "Alice", "email": "Alice@Example.com",
                                                   "banned": False}}
    again = run.text("spaces", "add-member", space.id, "--email", "alice@example.com")
    assert again.strip() == f"Alice@Example.com ({alice.id}) is a member of space {space.id}."
    assert set(space.members.all()) == {space.owner, alice}
    assert User.objects.count() == 2


@pytest.mark.parametrize(
    "space_id, email, message",
    [("nope", "a@example.com", "no space with id 'nope'"), (None, "a@@example.com", "not a valid e-mail address")],
)
def test_spaces_add_member_refuses_bad_input(run, space, space_id, email, message):
    before = counts()
    with pytest.raises(CommandError, match=re.escape(message)):
        run("spaces", "add-member", space_id or space.id, "--email", email)
    assert counts() == before


def test_spaces_set_plan(run, space):
    assert run("spaces", "set-plan", space.id, "free") == {"spaceId": space.id, "plan": "free"}
    assert Subscription.objects.get(space=space).is_active is False
    out = run.text("spaces", "set-plan", space.id, "pro")
    assert out.strip() == f"Space {space.id} is now on the pro plan."
    assert Subscription.objects.get(space=space).is_active is True


@pytest.mark.parametrize(
    "args, message",
    [(["nope", "free"], "no space with id 'nope'"), ([None, "gold"], "invalid choice: 'gold' (choose from 'pro', 'free')")],
)
def test_spaces_set_plan_refuses_bad_input(run, space, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run("spaces", "set-plan", *[a or space.id for a in args])
    assert Subscription.objects.get(space=space).is_active is True


# --- keys ---------------------------------------------------------------------------------


def test_keys_create_prints_the_key_once_and_stores_only_its_hash(run, space):
    out = run.text("keys", "create", space.id, "--name", "CI")
    raw = out.strip()
    assert KEY.match(raw)
    assert "cannot be shown again" in run.stderr
    key = ApiKey.objects.get()
    assert (key.prefix, key.name, key.space, key.created_by) == (raw[3:11], "CI", space, space.owner)
    assert raw[12:] not in (key.hash, key.salt) and raw not in (key.hash, key.salt)
    listed = run("keys", "list", space.id)
    assert raw not in str(listed) and key.hash not in str(listed)


def test_keys_create_json_with_expiry(run, space):
    data = run("keys", "create", space.id, "--expires-at", "2100-01-31T12:00:00+02:00")
    key = ApiKey.objects.get()
    assert data == {
        "id": key.id,
        "spaceId": space.id,
        "name": "",
        "prefix": key.prefix,
        "state": "active",
        "createdAt": data["createdAt"],
        "lastUsedAt": None,
        "expiresAt": "2100-01-31T10:00:00.000Z",
        "revokedAt": None,
        "key": data["key"],
    }
    assert KEY.match(data["key"]) and data["key"][3:11] == key.prefix
    assert key.expires_at == datetime(2100, 1, 31, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    "args, message",
    [
        (["nope"], "no space with id 'nope'"),
        ([None, "--expires-at", "tomorrow"], "--expires-at: not an ISO 8601 date and time: 'tomorrow'"),
        ([None, "--expires-at", "2100-02-30T00:00:00Z"], "--expires-at: not an ISO 8601 date and time"),
        ([None, "--expires-at", "2100-01-01T00:00:00"], "--expires-at: give a time zone"),
        ([None, "--expires-at", "2000-01-01T00:00:00Z"], "the expiry must be in the future"),
        ([None, "--name", "n" * 101], "the key name must be at most 100 characters"),
    ],
)
def test_keys_create_refuses_bad_input_and_stores_nothing(run, space, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run("keys", "create", *[a or space.id for a in args])
    assert not ApiKey.objects.exists()


def test_keys_create_refuses_an_eleventh_active_key_but_revoked_and_expired_ones_do_not_count(run, space):
    ids = [run("keys", "create", space.id)["id"] for _ in range(10)]
    with pytest.raises(CommandError, match="a space may have at most 10 active keys; revoke one first"):
        run("keys", "create", space.id)
    assert ApiKey.objects.count() == 10

    run("keys", "revoke", ids[0])
    run("keys", "create", space.id, "--expires-at", "2100-01-01T00:00:00Z")
    with pytest.raises(CommandError, match="at most 10 active keys"):
        run("keys", "create", space.id)
    with time_machine.travel(datetime(2100, 1, 2, tzinfo=UTC)):
        run("keys", "create", space.id)  # the one with an expiry has expired
    assert ApiKey.objects.count() == 12


def test_keys_list_shows_every_state_and_never_a_secret(run, space):
    active = run("keys", "create", space.id, "--name", "live")
    revoked = run("keys", "create", space.id, "--name", "gone")
    expiring = run("keys", "create", space.id, "--expires-at", "2100-01-01T00:00:00Z")
    run("keys", "revoke", revoked["id"])
    with time_machine.travel(datetime(2100, 1, 2, tzinfo=UTC)):
        listed = run("keys", "list", space.id)
        table = run.text("keys", "list", space.id)
    assert {row["id"]: row["state"] for row in listed} == {
        active["id"]: "active", revoked["id"]: "revoked", expiring["id"]: "expired"
    }
    for row in listed:
        assert set(row) == {"id", "spaceId", "name", "prefix", "state", "createdAt", "lastUsedAt", "expiresAt",
                            "revokedAt"}
    lines = table.strip().splitlines()
    assert lines[0].split() == ["ID", "PREFIX", "STATE", "NAME", "CREATED", "LAST", "USED", "EXPIRES", "REVOKED"]
    assert len(lines) == 4 and f"{active['prefix']}  active" in table
    for key in ApiKey.objects.all():
        assert key.hash not in table and key.salt not in table


def test_keys_list_of_a_space_without_keys_and_of_an_unknown_space(run, space):
    assert run("keys", "list", space.id) == []
    assert run.text("keys", "list", space.id).strip() == f"Space {space.id} has no keys."
    with pytest.raises(CommandError, match="no space with id 'nope'"):
        run("keys", "list", "nope")


def test_keys_revoke_is_idempotent_and_keeps_the_first_time(run, space):
    key_id = run("keys", "create", space.id)["id"]
    with time_machine.travel(datetime(2099, 5, 1, 12, tzinfo=UTC), tick=False):
        first = run("keys", "revoke", key_id)
    assert (first["state"], first["revokedAt"]) == ("revoked", "2099-05-01T12:00:00.000Z")
    again = run.text("keys", "revoke", key_id)
    prefix = ApiKey.objects.get().prefix
    assert again.strip() == f"Key {key_id} (sk_{prefix}_…) was already revoked at 2099-05-01T12:00:00.000Z."
    with pytest.raises(CommandError, match="no key with id 'nope'"):
        run("keys", "revoke", "nope")


# --- users --------------------------------------------------------------------------------


def test_users_ban_and_unban_by_email_in_any_case(run, space):
    data = run("users", "ban", "BOSS@example.com")
    assert data == {"id": space.owner.id, "name": "Boss", "email": "boss@example.com", "banned": True}
    assert User.objects.get(pk=space.owner.id).is_banned is True
    out = run.text("users", "unban", "boss@example.com")
    assert out.strip() == f"boss@example.com ({space.owner.id}) is no longer banned."
    assert User.objects.get(pk=space.owner.id).is_banned is False


@pytest.mark.parametrize(
    "email, message",
    [("nobody@example.com", "no user with e-mail 'nobody@example.com'"), ("nobody", "not a valid e-mail address")],
)
@pytest.mark.parametrize("action", ["ban", "unban"])
def test_users_ban_refuses_unknown_or_bad_addresses(run, space, action, email, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run("users", action, email)
    assert not User.objects.filter(is_banned=True).exists()
    assert User.objects.count() == 1


# --- maintenance --------------------------------------------------------------------------


def test_maintenance_on_off_status(run):
    assert run("maintenance", "status") == {"enabled": False, "switch": False, "environment": False}
    assert run("maintenance", "on") == {"enabled": True, "switch": True, "environment": False}
    assert ServiceSwitch.enabled(ServiceSwitch.MAINTENANCE)
    assert run.text("maintenance", "status").strip() == (
        "Maintenance is on (switch: on, MAINTENANCE_MODE: off). /v1 answers 503 with Retry-After: 300."
    )
    assert run("maintenance", "off") == {"enabled": False, "switch": False, "environment": False}
    assert run.stderr == ""
    assert not ServiceSwitch.enabled(ServiceSwitch.MAINTENANCE)


def test_maintenance_off_warns_when_the_environment_keeps_it_on(run, settings):
    settings.MAINTENANCE_MODE = True
    assert run("maintenance", "off") == {"enabled": True, "switch": False, "environment": True}
    assert "MAINTENANCE_MODE=true in the environment keeps maintenance on" in run.stderr


def test_maintenance_refuses_an_unknown_action(run):
    with pytest.raises(CommandError, match="invalid choice: 'maybe'"):
        run("maintenance", "maybe")
    assert not ServiceSwitch.objects.exists()


def test_keys_list_shows_the_last_use(run, space):
    """`lastUsedAt` is what the API wrote (see test_key_lifecycle for when it writes)."""
    key_id = run("keys", "create", space.id)["id"]
    used = datetime(2099, 1, 1, tzinfo=UTC) + timedelta(minutes=3)
    ApiKey.objects.filter(pk=key_id).update(last_used_at=used)
    assert run("keys", "list", space.id)[0]["lastUsedAt"] == "2099-01-01T00:03:00.000Z"


# --- spaces list|show, users list -----------------------------------------------------------


def test_spaces_list_shows_plan_owner_members_and_active_keys_and_filters(run, space, django_assert_num_queries):
    free = services.create_space(name="Beta club", owner_email="b@example.com", owner_name="B", pro=False)
    services.add_member(space=space, email="ann@example.com", name="Ann")
    services.create_key(space=space, name="live")
    revoked, _ = services.create_key(space=space, name="old")
    services.revoke_key(key=revoked)
    with django_assert_num_queries(1):
        rows = run("spaces", "list")
    assert [(row["id"], row["plan"], row["members"], row["activeKeys"], row["owner"]["email"]) for row in rows] == [
        (space.id, "pro", 2, 1, "boss@example.com"), (free.id, "free", 1, 0, "b@example.com")]
    assert INSTANT.match(rows[0]["createdAt"])
    assert [row["id"] for row in run("spaces", "list", "--plan", "free")] == [free.id]
    assert [row["id"] for row in run("spaces", "list", "--plan", "pro")] == [space.id]
    assert [row["id"] for row in run("spaces", "list", "--name", "BETA")] == [free.id]
    assert len(run("spaces", "list", "--limit", "1")) == 1
    text = run.text("spaces", "list")
    assert text.splitlines()[0].split() == ["ID", "PLAN", "MEMBERS", "ACTIVE", "KEYS", "OWNER", "NAME"]
    assert space.id in text and "Beta club" in text


def test_spaces_show_lists_members_and_keys_never_a_key(run, space):
    services.add_member(space=space, email="ann@example.com", name="Ann")
    key, raw = services.create_key(space=space, name="live")
    data = run("spaces", "show", space.id)
    assert (data["id"], data["name"], data["plan"], data["owner"]["email"]) == (space.id, "Acme", "pro", "boss@example.com")
    assert [member["email"] for member in data["members"]] == ["boss@example.com", "ann@example.com"]
    assert [(k["id"], k["prefix"], k["state"]) for k in data["keys"]] == [(key.id, key.prefix, "active")]
    text = run.text("spaces", "show", space.id)
    assert raw not in text and raw not in str(data) and key.hash not in str(data)
    assert "members (2):" in text and "ann@example.com" in text and key.prefix in text
    with pytest.raises(CommandError, match="no space with id 'nope'"):
        run("spaces", "show", "nope")


def test_users_list_with_filters(run, space, django_assert_num_queries):
    services.add_member(space=space, email="ann@example.com", name="Ann")
    services.set_banned(user=User.objects.get(email="ann@example.com"), banned=True)
    with django_assert_num_queries(1):
        rows = run("users", "list")
    assert [(row["email"], row["banned"], row["ownedSpaces"], row["memberOf"]) for row in rows] == [
        ("ann@example.com", True, 0, 1), ("boss@example.com", False, 1, 1)]
    assert [row["email"] for row in run("users", "list", "--banned")] == ["ann@example.com"]
    assert [row["email"] for row in run("users", "list", "--not-banned")] == ["boss@example.com"]
    assert [row["email"] for row in run("users", "list", "--email", "BOSS")] == ["boss@example.com"]
    text = run.text("users", "list")
    assert text.splitlines()[0].split() == ["ID", "BANNED", "OWNS", "MEMBER", "OF", "E-MAIL", "NAME"]
    assert "ann@example.com" in text and "yes" in text
    with pytest.raises(CommandError):
        run("users", "list", "--banned", "--not-banned")
