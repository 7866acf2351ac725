"""The authentication matrix, at the HTTP level: every form of `Authorization` header and
every state of a key, and the order in which the checks apply: route (404), maintenance
(503), header (400), key (401), Pro (403), then the endpoint."""

from datetime import UTC, datetime

import pytest
from django.test import Client

from conftest import Api
from core.maintenance import set_maintenance
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


# --- Order of checks ----------------------------------------------------------------------


def no_header(key):
    return None


def bad_header(key):
    return "Basic xyz"


def bad_key(key):
    return f"Bearer {UNKNOWN_KEY}"


def good_key(key):
    return f"Bearer {key}"


ANY_AUTH = [no_header, bad_header, bad_key, good_key]


@pytest.mark.parametrize("make_header", ANY_AUTH)
@pytest.mark.parametrize(
    "method, path",
    [("GET", "/v1/nope"), ("GET", "/v1"), ("GET", "/v1/polls/abc/nope"), ("PATCH", "/v1/polls/abcdefghijkl"),
     ("PUT", "/v1/polls"), ("PATCH", "/v1/polls"), ("POST", "/v1/polls/abcdefghijkl"), ("GET", "/polls")],
)
def test_an_unknown_route_or_method_is_404_before_any_other_check(space_and_key, make_header, method, path):
    response = call(path, make_header(space_and_key[1]), method=method)
    assert_error(response, 404, "NOT_FOUND")


@pytest.mark.parametrize("make_header", ANY_AUTH)
def test_maintenance_is_503_before_the_header_and_key_checks(make_space, make_header):
    _, raw = make_space(pro=False)
    set_maintenance(True)
    response = call(authorization=make_header(raw), method="POST", body={"bad": True})
    assert_error(response, 503, "SERVICE_UNAVAILABLE")
    assert response["Retry-After"] == "300"
    assert not any(name in response for name in RATELIMIT_HEADERS)
    assert_error(call("/v1/nope", make_header(raw)), 404, "NOT_FOUND")  # the route still comes first


@pytest.mark.parametrize("make_header", [no_header, bad_header, bad_key])
def test_the_openapi_document_needs_no_key_even_in_maintenance(db, make_header):
    set_maintenance(True)
    headers = {} if make_header(None) is None else {"HTTP_AUTHORIZATION": make_header(None)}
    assert Client().get("/v1/openapi", **headers).status_code == 200


def test_the_header_is_checked_before_the_key_and_the_key_before_pro(make_space):
    _, free_key = make_space(pro=False)
    assert_error(call(authorization=f"Basic {free_key}"), 400, "INVALID_AUTHORIZATION_HEADER")
    assert_error(call(authorization=f"Bearer {tampered(free_key)}"), 401, "UNAUTHORIZED")
    assert_error(call(authorization=f"Bearer {free_key}"), 403, "SPACE_NOT_PRO")


@pytest.mark.parametrize(
    "method, path, body",
    [("POST", "/v1/polls", {"unknown": 1}), ("GET", "/v1/polls?limit=abc", None), ("GET", "/v1/polls/x", None),
     ("DELETE", "/v1/polls/x", None)],
)
def test_authentication_comes_before_validation_and_lookup(make_space, method, path, body):
    _, free_key = make_space(pro=False)
    assert_unauthorized(call(path, None, method=method, body=body), CHALLENGE)
    assert_error(call(path, f"Bearer {free_key}", method=method, body=body), 403, "SPACE_NOT_PRO")


def test_a_poll_of_another_space_is_poll_not_found(make_space):
    (_, mine), (_, theirs) = make_space(), make_space()
    created = Api(theirs).post("/v1/polls", {"title": "Theirs", "kind": "date", "options": [{"date": "2100-01-01"}]})
    assert created.status_code == 201
    poll_id = created.body["data"]["id"]
    assert_error(Api(mine).get(f"/v1/polls/{poll_id}"), 404, "POLL_NOT_FOUND")
    assert_error(Api(mine).delete(f"/v1/polls/{poll_id}"), 404, "POLL_NOT_FOUND")
    assert Api(theirs).get(f"/v1/polls/{poll_id}").status_code == 200
