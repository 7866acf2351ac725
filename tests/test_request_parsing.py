"""The strict JSON request parser and content handling: every refusal is a precise
VALIDATION_ERROR that stores nothing."""

import pytest

from polls.models import Poll

VALID = b'{"title": "x", "kind": "date", "options": [{"date": "2026-12-01"}]}'


@pytest.mark.parametrize(
    "raw, message",
    [
        (b'{"title": "x",', "body: not valid JSON"),
        (b"[1, 2]", "body: must be a JSON object"),
        (b'"text"', "body: must be a JSON object"),
        (b"null", "body: must be a JSON object"),
        (b'{"title": "x", "title": "y", "kind": "date", "options": []}', "body: duplicate key 'title'"),
        (b'{"title": "x", "kind": "date", "options": [{"date": "2026-12-01", "date": "2026-12-02"}]}', "body: duplicate key 'date'"),
        (b'{"title": NaN}', "body: NaN is not valid JSON"),
        (b'{"title": Infinity}', "body: Infinity is not valid JSON"),
        (b'{"title": -Infinity}', "body: -Infinity is not valid JSON"),
        (b'{"title": 1e400}', "body: number 1e400 is out of range"),
        (b'{"title": "\xff"}', "body: not valid UTF-8"),
        (b"   ", "body: a JSON object is required"),
        (b"[" * 100_000 + b"]" * 100_000, "body: not valid JSON"),
    ],
)
def test_malformed_bodies(api, raw, message):
    r = api.post("/v1/polls", raw=raw)
    assert (r.status_code, r.body["error"]["code"], r.body["error"]["message"]) == (400, "VALIDATION_ERROR", message)
    assert Poll.objects.count() == 0


def test_empty_body(api):
    r = api.post("/v1/polls", raw=b"")
    assert (r.status_code, r.body["error"]["message"]) == (400, "body: a JSON object is required")


def test_oversized_body(api, settings):
    settings.MAX_REQUEST_BODY_BYTES = 1000
    raw = b'{"title": "x", "kind": "date", "description": "' + b"a" * 1000 + b'", "options": []}'
    r = api.post("/v1/polls", raw=raw)
    assert (r.status_code, r.body["error"]["code"], r.body["error"]["message"]) == (400, "VALIDATION_ERROR", "body: larger than 1000 bytes")
    assert Poll.objects.count() == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""])
def test_wrong_content_type(api, content_type):
    r = api.post("/v1/polls", raw=VALID, content_type=content_type)
    assert (r.status_code, r.body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert r.body["error"]["message"] == "body: Content-Type must be application/json"
    assert Poll.objects.count() == 0


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"])
def test_json_content_types_are_accepted(api, content_type):
    assert api.post("/v1/polls", raw=VALID, content_type=content_type).status_code == 201


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "*/*", "application/json;q=0", "garbage"])
def test_accept_header_never_changes_the_answer(api, accept):
    r = api.post("/v1/polls", raw=VALID, headers={"Accept": accept})
    assert r.status_code == 201 and r["Content-Type"] == "application/json"
    r = api.get("/v1/polls/nope", headers={"Accept": accept})
    assert (r.status_code, r.body["error"]["code"]) == (404, "POLL_NOT_FOUND")


def test_non_ascii_text_round_trips(api):
    r = api.post("/v1/polls", {"title": "Café 🍰 — 会議", "kind": "date", "options": [{"date": "2026-12-01"}]})
    assert r.status_code == 201 and r.body["data"]["title"] == "Café 🍰 — 会議"
    assert "Café 🍰".encode() in r.content  # UTF-8, not \\u escapes
