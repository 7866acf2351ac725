"""A JSON parser that refuses what Python's `json` quietly accepts.

Rejected with VALIDATION_ERROR: invalid UTF-8 or JSON, duplicate keys at any depth, keys
with an unpaired surrogate escape (`"\\ud800"`), `NaN`,
`Infinity`, numbers that overflow a double (`1e400`), bodies larger than
`MAX_REQUEST_BODY_BYTES`, and a top level that is not an object.
"""

import json
import math

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
