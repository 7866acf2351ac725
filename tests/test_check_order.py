"""The order in which every request's checks apply, across the apps that make them: route
(404), maintenance (503), header (400), key (401), Pro (403), then the endpoint's validation
and lookup. The authentication's own matrix: spaces/tests/test_authentication.py."""

import pytest
from django.test import Client

from conftest import Api
from core.maintenance import set_maintenance
from spaces.tests.test_authentication import (
    CHALLENGE,
    RATELIMIT_HEADERS,
    UNKNOWN_KEY,
    assert_error,
    assert_unauthorized,
    call,
)


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



@pytest.mark.parametrize(
    "method, path, body",
    [("POST", "/v1/polls", {"unknown": 1}), ("GET", "/v1/polls?limit=abc", None), ("GET", "/v1/polls/x", None),
     ("DELETE", "/v1/polls/x", None)],
)
def test_authentication_comes_before_validation_and_lookup(make_space, method, path, body):
    _, free_key = make_space(pro=False)
    assert_unauthorized(call(path, None, method=method, body=body), CHALLENGE)
    assert_error(call(path, f"Bearer {free_key}", method=method, body=body), 403, "SPACE_NOT_PRO")


@pytest.mark.parametrize(
    "query", ["limit=abc", "status=gone", "cursor=forged", "page=2", "&".join(f"a{i}=1" for i in range(1200))]
)
def test_a_list_query_is_refused_only_after_the_key_and_pro(make_space, query):
    # A bad query comes after the key and Pro checks.
    _, free_key = make_space(pro=False)
    _, key = make_space()
    response = call(f"/v1/polls?{query}", f"Bearer {UNKNOWN_KEY}")
    assert response.status_code == 401 and response.json()["error"]["code"] == "UNAUTHORIZED"
    assert_error(call(f"/v1/polls?{query}", f"Bearer {free_key}"), 403, "SPACE_NOT_PRO")
    assert_error(call(f"/v1/polls?{query}", f"Bearer {key}"), 400, "VALIDATION_ERROR")


def test_a_poll_of_another_space_is_poll_not_found(make_space):
    (_, mine), (_, theirs) = make_space(), make_space()
    created = Api(theirs).post("/v1/polls", {"title": "Theirs", "kind": "date", "options": [{"date": "2100-01-01"}]})
    assert created.status_code == 201
    poll_id = created.body["data"]["id"]
    assert_error(Api(mine).get(f"/v1/polls/{poll_id}"), 404, "POLL_NOT_FOUND")
    assert_error(Api(mine).delete(f"/v1/polls/{poll_id}"), 404, "POLL_NOT_FOUND")
    assert Api(theirs).get(f"/v1/polls/{poll_id}").status_code == 200
