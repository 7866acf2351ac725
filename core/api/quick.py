"""A quick pass over a request body before DRF's validation, for the bodies that are valid.

DRF validates a field through half a dozen calls (`get_value`, `run_validation`,
`validate_empty_values`, `to_internal_value`, `run_validators` and each validator), which on
`POST /v1/polls` came to a fifth of the request. `quick_validator(cls)` builds, once per
`StrictSerializer` class, a function doing what DRF does for a body without a mistake, with
each field's own settings (`required`, lengths, bounds, choices, the parser of a parsed
field) and the class's own `validate`. It gives up at the first doubt: a missing required
field, a null, a wrong type, a bound crossed, any error raised. DRF then validates the body
again from the start and gives its usual errors, so a bad body's answer is DRF's own, and a
good one's validated data the same as DRF's (tests/test_quick_validation.py compares them
over thousands of bodies).

A field of a class it does not know (a subclass with checks of its own, say) runs DRF's
`run_validation` itself; a serializer class with `validate_<field>` methods, validators or
its own `to_internal_value` gets no quick pass.
"""

from collections.abc import Callable

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import (
    MaxLengthValidator,
    MaxValueValidator,
    MinLengthValidator,
    MinValueValidator,
    ProhibitNullCharactersValidator,
)
from rest_framework import serializers
from rest_framework.fields import SkipField, empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator


class GiveUp(Exception):
    """The quick pass cannot vouch for this body: DRF validates it."""


QUICK_GIVES_UP = (GiveUp, ValueError, serializers.ValidationError, DjangoValidationError, SkipField)
# The validators DRF adds from a field's arguments, whose checks the quick pass makes itself.
_KNOWN_VALIDATORS = (MaxLengthValidator, MinLengthValidator, MaxValueValidator, MinValueValidator,
                     ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator)


def quick_validator(cls) -> Callable[[object], dict] | None:
    """The quick pass of a `StrictSerializer` class (raising `GiveUp`), or None when it has
    none. Built once per class."""
    if "_quick" not in cls.__dict__:
        cls._quick = _serializer(cls())
    return cls._quick


def _serializer(serializer) -> Callable[[object], dict] | None:
    from core.api.fields import StrictSerializer

    cls = type(serializer)
    if (
        cls.to_internal_value is not StrictSerializer.to_internal_value
        or cls.run_validation is not serializers.Serializer.run_validation
        or serializer.validators
        or any(hasattr(serializer, f"validate_{name}") for name in serializer.fields)
    ):
        return None
    fields = serializer.fields
    checks = []
    for name, field in fields.items():
        if field.read_only:
            continue
        if field.source_attrs != [name] or field.default is not empty:
            return None
        checks.append((name, field.required, _field(field)))
    validate = None if cls.validate is serializers.Serializer.validate else serializer.validate
    # DRF's `fields` is a Mapping whose `in` runs in Python (a lookup and a caught KeyError);
    # the names as a set are compared with the body's keys at once.
    names = frozenset(fields)

    def check(data) -> dict:
        if type(data) is not dict or not data.keys() <= names:
            raise GiveUp
        value = {}
        for name, required, check_field in checks:
            item = data.get(name, empty)
            if item is empty:
                if required:
                    raise GiveUp
            else:
                value[name] = check_field(item)
        if validate is not None:
            value = validate(value)
            if value is None:
                raise GiveUp
        return value

    return check


def _field(field) -> Callable[[object], object]:
    """The check of one field's value (never absent), giving the field's validated value."""
    from core.api import fields as strict

    kind = type(field)
    known = all(isinstance(validator, _KNOWN_VALIDATORS) for validator in field.validators)
    if isinstance(field, strict.StrictSerializer):
        nested = _serializer(field)
        if nested is not None:
            return _not_null(nested)
    elif known and isinstance(field, strict.StrictCharField):
        if kind.to_internal_value is strict.StrictCharField.to_internal_value:
            return _char(field, kind.convert)
    elif known and kind is strict.StrictBooleanField:
        return _exact(bool)
    elif known and kind is strict.StrictIntegerField:
        return _integer(field)
    elif known and kind is strict.StrictChoiceField:
        choices = field.choices

        def choice(value):
            if type(value) is not str or value not in choices:
                raise GiveUp
            return value

        return choice
    elif isinstance(field, strict.ParsedField) and not field.validators:
        if kind.to_internal_value is strict.ParsedField.to_internal_value:
            return _not_null(kind.parse)  # its ValueError gives up
    elif known and kind is strict.StrictListField:
        return _list(field)
    return _drf(field)


def _not_null(function):
    def check(value):
        if value is None:
            raise GiveUp
        return function(value)

    return check


def _exact(type_):
    def check(value):
        if type(value) is not type_:
            raise GiveUp
        return value

    return check


def _char(field, convert=None):
    # DRF: a blank value ('' or, trimmed, only whitespace) is '' when allowed and nothing
    # else is checked; otherwise the value trimmed, then its length, then the field's
    # conversion (StrictCharField.convert), whose ValueError gives up.
    trim, allow_blank = field.trim_whitespace, field.allow_blank
    max_length, min_length = field.max_length, field.min_length

    def check(value):
        if type(value) is not str or "\x00" in value:
            raise GiveUp
        if not value.isascii():
            value.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate
        if trim:
            value = value.strip()
        if not value:
            if not allow_blank:
                raise GiveUp
            return ""
        if max_length is not None and len(value) > max_length or min_length is not None and len(value) < min_length:
            raise GiveUp
        return value if convert is None else convert(value)

    return check


def _integer(field):
    max_value, min_value = field.max_value, field.min_value
    if max_value is None or min_value is None:
        return _drf(field)  # DRF refuses an integer too long to write out: leave that to it

    def check(value):
        if type(value) is not int or value > max_value or value < min_value:
            raise GiveUp
        return value

    return check


def _list(field):
    child = _field(field.child)
    allow_empty, max_length, min_length = field.allow_empty, field.max_length, field.min_length

    def check(value):
        if type(value) is not list:
            raise GiveUp
        count = len(value)
        if not count and not allow_empty or max_length is not None and count > max_length:
            raise GiveUp
        if min_length is not None and count < min_length:
            raise GiveUp
        return [child(item) for item in value]

    return check


def _drf(field):
    def check(value):
        if value is None:
            raise GiveUp
        return field.run_validation(value)

    return check
