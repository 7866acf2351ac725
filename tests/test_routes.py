"""Routes and methods: anything without a route is the JSON 404 `NOT_FOUND`."""

import pytest


@pytest.mark.parametrize(
    "method, path",
    [
        ("HEAD", "/v1/polls"),
        ("OPTIONS", "/v1/polls"),
        ("PUT", "/v1/polls"),
        ("PATCH", "/v1/polls/AAAAAAAAAAAA"),
        ("PUT", "/v1/polls/AAAAAAAAAAAA"),
        ("POST", "/v1/polls/AAAAAAAAAAAA"),
        ("GET", "/v1/polls/"),
        ("GET", "/v1/poll"),
        ("DELETE", "/v1/polls"),
        ("POST", "/v1/openapi"),
    ],
)
def test_no_route_is_not_found_before_authentication(anon, api, method, path):
    for client in (anon, api):
        r = client.request(method, path) if method != "HEAD" else client.client.head(path)
        assert r.status_code == 404
        if method != "HEAD":
            assert r.body == {"error": {"code": "NOT_FOUND", "message": "No route matches this method and path."}}
        assert "Allow" not in r


def test_request_id_is_echoed_or_made(api):
    r = api.get("/v1/polls", headers={"X-Request-ID": "abc-123"})
    assert r["X-Request-ID"] == "abc-123"
    r = api.get("/v1/polls", headers={"X-Request-ID": "bad id with spaces"})
    assert r["X-Request-ID"] != "bad id with spaces" and len(r["X-Request-ID"]) == 32
