"""The authentication matrix, at the HTTP level: every form of `Authorization` header and
every state of a key, and the order of the authentication's own checks: header (400), key
(401), Pro (403). Where they stand among the checks every request passes (route,
maintenance, the endpoint's validation and lookup): tests/test_check_order.py."""

from datetime import UTC, datetime

import pytest

from conftest import Api
from spaces import services
from spaces.models import ApiKey, Subscription

CHALLENGE = 'Bearer realm="api"'
INVALID_TOKEN = 'Bearer realm="api", error="invalid_token"'
RATELIMIT_HEADERS = ("RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
UNKNOWN_KEY = "sk_AAAAAAAA_" + "A" * 32


def call(path: str = "/v1/polls", authorization: str | None = None, method: str = "GET", body=None):
    headers = {} if authorization is None else {"Authorization": authorization}
    return Api(None).request(method, path, body, headers=headers)


def assert_error(response, status: int, code: str):
    assert response.status_code == status, response.body
    assert response.body["error"]["code"] == code


def assert_unauthorized(response, challenge: str):
    assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"] == challenge
    assert not any(name in response for name in RATELIMIT_HEADERS)


def tampered(key: str) -> str:
    return key[:-1] + ("B" if key[-1] != "B" else "C")


def test_no_header_is_401_with_a_bare_challenge(db):
    assert_unauthorized(call(), CHALLENGE)


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "",
        "Basic xyz",
        "Basic {key}",
        "Token {key}",
        "{key}",
        "Bearer {key} extra",
        "Bearer {key} {key}",
        "Bearer  {key}",
        "Bearer\t{key}",
        "Bearer,{key}",
    ],
    ids=["scheme-alone", "empty", "basic", "basic-with-key", "other-scheme", "key-alone", "extra-words",
         "two-keys", "double-space", "tab", "comma"],
)
def test_a_header_not_of_the_form_bearer_key_is_400(space_and_key, header):
    response = call(authorization=header.format(key=space_and_key[1]))
    assert_error(response, 400, "INVALID_AUTHORIZATION_HEADER")
    assert "WWW-Authenticate" not in response


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_scheme_word_is_matched_in_any_case(space_and_key, scheme):
    response = call(authorization=f"{scheme} {space_and_key[1]}")
    assert response.status_code == 200
    assert all(name in response for name in RATELIMIT_HEADERS)


def revoke(space, key):
    services.revoke_key(key=key)


def expire(space, key):
    ApiKey.objects.filter(pk=key.pk).update(expires_at=datetime(2000, 1, 1, tzinfo=UTC))


def ban_owner(space, key):
    services.set_banned(user=space.owner, banned=True)


def ban_creator(space, key):
    """The creator, no longer the owner, is banned: their key stops working."""
    creator = space.owner
    space.owner = services.get_or_create_user(email="new-owner@example.com")
    space.save(update_fields=["owner"])
    services.set_banned(user=creator, banned=True)


@pytest.mark.parametrize(
    "make_header",
    [
        lambda key: f"Bearer {UNKNOWN_KEY}",
        lambda key: "Bearer not-a-key",
        lambda key: "Bearer sk_short",
        lambda key: f"Bearer {key}x",
        lambda key: f"Bearer {key[:-1]}",
        lambda key: f"Bearer {key.replace('sk_', 'pk_')}",
        lambda key: f"Bearer {tampered(key)}",
        lambda key: f"Bearer {key[:11]}-{key[12:]}",
    ],
    ids=["unknown", "malformed", "short", "too-long", "truncated", "wrong-type", "tampered-secret", "bad-separator"],
)
def test_a_key_that_is_not_a_valid_key_is_401_invalid_token(space_and_key, make_header):
    assert_unauthorized(call(authorization=make_header(space_and_key[1])), INVALID_TOKEN)


@pytest.mark.parametrize("arrange", [revoke, expire, ban_owner, ban_creator])
def test_a_key_that_no_longer_works_is_401_invalid_token(space_and_key, arrange):
    space, raw = space_and_key
    arrange(space, ApiKey.objects.get(prefix=raw[3:11]))
    assert_unauthorized(call(authorization=f"Bearer {raw}"), INVALID_TOKEN)


@pytest.mark.parametrize("plan", ["free", "no subscription row"])
def test_a_key_of_a_space_without_pro_is_403(make_space, plan):
    space, raw = make_space(pro=plan != "free")
    if plan != "free":
        Subscription.objects.filter(space=space).delete()
    response = call(authorization=f"Bearer {raw}")
    assert_error(response, 403, "SPACE_NOT_PRO")
    assert not any(name in response for name in RATELIMIT_HEADERS)


def test_the_header_is_checked_before_the_key_and_the_key_before_pro(make_space):
    _, free_key = make_space(pro=False)
    assert_error(call(authorization=f"Basic {free_key}"), 400, "INVALID_AUTHORIZATION_HEADER")
    assert_error(call(authorization=f"Bearer {tampered(free_key)}"), 401, "UNAUTHORIZED")
    assert_error(call(authorization=f"Bearer {free_key}"), 403, "SPACE_NOT_PRO")
