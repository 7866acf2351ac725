"""A JSON parser that refuses what Python's `json` quietly accepts.

Rejected with VALIDATION_ERROR: invalid UTF-8 or JSON, duplicate keys at any depth, keys
with an unpaired surrogate escape (`"\\ud800"`), `NaN`,
`Infinity`, numbers that overflow a double (`1e400`), bodies larger than
`MAX_REQUEST_BODY_BYTES`, and a top level that is not an object.

A body is first read by orjson, in C, and its result kept when it is certainly what the
standard parser would give (`loads_strict`); every other body, and every refusal, is the
standard parser's, with its hooks in Python.
"""

import json
import math

import orjson
from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


class _Reject(ValueError):
    pass


def _no_duplicates(pairs):
    obj = {}
    for key, value in pairs:
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:  # an unpaired surrogate (`"\ud800"`): no error message can name it
            raise _Reject("an object key is not valid Unicode text")
        if key in obj:
            raise _Reject(f"duplicate key '{key}'")
        obj[key] = value
    return obj


def _no_constants(name):
    raise _Reject(f"{name} is not valid JSON")


def _finite_float(text):
    value = float(text)
    if math.isinf(value):
        raise _Reject(f"number {text[:20]} is out of range")
    return value


def loads_strict(raw: bytes):
    """The JSON value of `raw`, or ParseError. orjson reads the usual body in C (the
    standard parser calls its hooks in Python for each object), and its value is taken where
    it is certainly the standard parser's: orjson keeps the last of duplicate keys silently, so the value written again
    must hold as many ':' as the body (one per member, and those of the strings: a
    duplicate dropped takes at least its own with it). The standard parser reads the body
    instead where an escape could be a ':' (`\\u003a`), a run of 19 digits could be an
    integer beyond 64 bits (orjson reads one as a float), or orjson refuses the body or
    cannot write the value again (nested 255 deep)."""
    if b"\\u003" not in raw or b"\\u003a" not in raw and b"\\u003A" not in raw:
        try:
            value = orjson.loads(raw)
            written = orjson.dumps(value)
        except (orjson.JSONDecodeError, orjson.JSONEncodeError):
            pass
        else:
            if written.count(b":") == raw.count(b":") and _LONG_NUMBER not in raw.translate(_DIGITS_AS_ZERO):
                return value
    return _loads_standard(raw)


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def _loads_standard(raw: bytes):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError("not valid UTF-8")
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constants,
            parse_float=_finite_float,
        )
    except _Reject as exc:
        raise ParseError(str(exc))
    except (ValueError, RecursionError):
        raise ParseError("not valid JSON")


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.MAX_REQUEST_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise ParseError(f"larger than {limit} bytes")
        if not raw.strip():
            raise ParseError("a JSON object is required")
        data = loads_strict(raw)
        if not isinstance(data, dict):
            raise ParseError("must be a JSON object")
        return data
