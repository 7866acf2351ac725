"""The strict JSON request parser and content handling: every refusal is a precise
VALIDATION_ERROR that stores nothing."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ParseError

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


# --- orjson's reading against the standard parser's ------------------------------------------

_KEYS = st.sampled_from(["a", "b", "a:b", ":", "title", "\u00e9", "k\\u003a"])
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
    st.sampled_from(["2026-12-01T09:00:00Z", "a:b:c", "\ud800", "\\u003a"]),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    # A list of members written out as they come: a key may be there twice.
    st.lists(st.tuples(_KEYS, inner), max_size=4).map(lambda members: ("object", members)),
), max_leaves=20)


def _written(value, escape: bool) -> str:
    """JSON text of `value`, where ("object", members) is an object written member by member
    (duplicates kept), strings escaped or not, with a little whitespace."""
    if isinstance(value, tuple):
        return "{" + ", ".join(f"{_written(key, escape)} :{_written(item, escape)}" for key, item in value[1]) + "}"
    if isinstance(value, list):
        return "[ " + ",".join(_written(item, escape) for item in value) + "]"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=escape)
        return text.replace(":", "\\u003a") if escape and ":" in value and len(value) % 2 else text
    return json.dumps(value)


def _outcome(read, raw: bytes):
    try:
        return "value", json.dumps(read(raw))  # order, types (true is not 1) and values
    except ParseError as error:
        return "refused", str(error.detail)


@settings(max_examples=3000, deadline=None)
@given(_VALUES, st.booleans(), st.sampled_from(["", " ", "\n"]))
def test_the_quick_reading_is_the_standard_one(value, escape, padding):
    from core.api.parsers import _loads_standard, loads_strict

    try:
        raw = (padding + _written(value, escape) + padding).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate written raw: not UTF-8, as no client can send it
        raw = (padding + _written(value, True) + padding).encode("utf-8")
    assert _outcome(loads_strict, raw) == _outcome(_loads_standard, raw)


@pytest.mark.parametrize("raw", [
    b'{"a": 1, "a": 2}', b'{"a": "x:y", "a": "z"}', b'{"a": {"b": 1, "b": 1}}', b'[{"a": 1}, {"a": 1, "a": 1}]',
    b'{"a\\u003a": 1, "a\\u003a": 2}', b'{"a": "\\u003a", "a": 2}', b'{"n": 123456789012345678901234567890}',
    b'[1234567890123456789, 18446744073709551616]', b'{"n": 1.5}', b'{"n": 1e400}', b'{"s": "\\ud800"}',
    b'{"\\ud800": 1}', b"[" * 70 + b"]" * 70, b'{"a": ' * 70 + b"1" + b"}" * 70, b"[" * 300 + b"]" * 300,
    b'{"t": "2026-12-01T09:00:00Z", "u": "a:b"}', b"\xef\xbb\xbf{}", b'"\xff"',
])
def test_the_quick_reading_on_its_edges(raw):
    from core.api.parsers import _loads_standard, loads_strict

    assert _outcome(loads_strict, raw) == _outcome(_loads_standard, raw)
