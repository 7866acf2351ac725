"""Strict request fields: no type coercion, no unknown keys, messages as `<reason>`.

DRF by default turns `"true"` into True and `"5"` into 5 and ignores unknown keys; the
contract forbids all three. Every input serializer derives from `StrictSerializer` and
uses only these fields.
"""

import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.formats import CLOCK_PATTERN, DATE_PATTERN, parse_clock, parse_date, text_problem

COMMON_MESSAGES = {"required": "required", "null": "must not be null"}


class PlainText:
    """A text field's validator: no control characters (core.formats.text_problem); with
    `multiline`, line breaks and tabs are allowed."""

    def __init__(self, multiline: bool = False):
        self.multiline = multiline

    def __call__(self, value):
        problem = text_problem(value, multiline=self.multiline) if isinstance(value, str) else None
        if problem:
            raise serializers.ValidationError(problem)


class StrictCharField(serializers.CharField):
    """A string; refused when it holds control characters (C0, DEL, C1) or line breaks, unless
    `multiline`, which allows LF, CR and TAB."""

    default_error_messages = {
        **COMMON_MESSAGES,
        "invalid": "must be a string",
        "blank": "must not be empty",
        "max_length": "must be at most {max_length} characters",
        "min_length": "must be at least {min_length} characters",
        "nul": "must not contain NUL characters",
        "surrogate": "must be valid Unicode text",
    }

    #: A function of the text (trimmed) giving the field's value; its ValueError is the
    #: message. None: the text itself.
    convert = None

    def __init__(self, *, multiline: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.validators.append(PlainText(multiline))

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if "\x00" in data:
            self.fail("nul")
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            self.fail("surrogate")
        value = super().to_internal_value(data)
        convert = type(self).convert
        if convert is None:
            return value
        try:
            return convert(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc))


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {**COMMON_MESSAGES, "invalid": "must be a boolean"}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {
        **COMMON_MESSAGES,
        "invalid": "must be an integer",
        "max_value": "must be at most {max_value}",
        "min_value": "must be at least {min_value}",
    }

    def to_internal_value(self, data):
        if not isinstance(data, int) or isinstance(data, bool):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    default_error_messages = {**COMMON_MESSAGES, "invalid_choice": "must be one of: {choices}"}

    def to_internal_value(self, data):
        if not isinstance(data, str) or data not in self.choices:
            self.fail("invalid_choice", choices=", ".join(map(str, self.choices)))
        return data


class ParsedField(serializers.Field):
    """A string read by one of core.formats' parsers; its `ValueError` is the message."""

    default_error_messages = COMMON_MESSAGES
    parse = None  # a function of core.formats

    def to_internal_value(self, data):
        try:
            return type(self).parse(data)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc))


@extend_schema_field({"type": "string", "format": "date", "pattern": DATE_PATTERN})
class StrictDateField(ParsedField):
    """`YYYY-MM-DD`, a real calendar date from MIN_DATE to MAX_DATE."""

    parse = parse_date

    def to_representation(self, value):
        return value.isoformat()


@extend_schema_field({"type": "string", "pattern": CLOCK_PATTERN, "examples": ["09:00"]})
class StrictClockField(ParsedField):
    """`HH:MM`, 00:00 to 23:59; seconds are not accepted."""

    parse = parse_clock

    def to_representation(self, value):
        return value.strftime("%H:%M")


class StrictListField(serializers.ListField):
    default_error_messages = {
        **COMMON_MESSAGES,
        "not_a_list": "must be an array",
        "empty": "must not be empty",
        "min_length": "must have at least {min_length} items",
        "max_length": "must have at most {max_length} items",
    }

    def to_internal_value(self, data):
        if not isinstance(data, list):
            self.fail("not_a_list")
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    # Rejects a non-object and every key it does not declare, at any nesting level. (A
    # comment, not a docstring: the OpenAPI document would repeat a docstring in every
    # subclass's description.)

    default_error_messages = {**COMMON_MESSAGES, "invalid": "must be an object"}

    @property
    def fields(self):
        # DRF deep-copies every declared field (nested serializers and list children with
        # them) for each instance: on `POST /v1/polls` that copying cost more than the
        # validation itself. The fields keep no state while they validate (errors and
        # validated data live on the instance validated, and no serializer here is partial
        # or has a context), so each class binds one set to a prototype instance, once, and
        # every instance shares it.
        cls = type(self)
        shared = cls.__dict__.get("_shared_fields")
        if shared is None:
            shared = serializers.Serializer.fields.func(cls())
            cls._shared_fields = shared
        return shared

    @property
    def _writable_fields(self):
        # The shared fields that take input, listed once per class (DRF picks them out of
        # `fields` again for every object it validates).
        cls = type(self)
        writable = cls.__dict__.get("_shared_writable_fields")
        if writable is None:
            writable = [field for field in self.fields.values() if not field.read_only]
            cls._shared_writable_fields = writable
        return writable

    @classmethod
    def validated(cls, data) -> dict:
        """The validated data of `data`, or DRF's ValidationError raised."""
        serializer = cls(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def run_validators(self, value):
        # DRF gathers the read-only fields' defaults for the serializer's validators before
        # running them, on every object; these serializers have none (their checks across
        # fields are in `validate`), and a subclass that declares some runs them as DRF does.
        if self.validators:
            super().run_validators(value)

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["must be an object"]})
        fields = self.fields
        unknown = [key for key in data if key not in fields]
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            detail = dict(exc.detail)
            detail.update({key: ["unknown field"] for key in unknown})
            raise serializers.ValidationError(detail)
        if unknown:
            raise serializers.ValidationError({key: ["unknown field"] for key in unknown})
        return value



class StrictQuerySerializer(StrictSerializer):
    # Query parameters: each at most once (else "given more than once"); the integer fields
    # take their decimal digits, the only way a query string can carry a number.

    def to_internal_value(self, data):
        data = {key: data.getlist(key) for key in data}
        errors_ = {key: ["given more than once"] for key, values in data.items() if len(values) > 1}
        data = {key: values[-1] for key, values in data.items()}
        for name, field in self.fields.items():
            if isinstance(field, StrictIntegerField) and isinstance(data.get(name), str):
                if re.fullmatch(r"-?[0-9]{1,9}", data[name]):
                    data[name] = int(data[name])
        value = super().to_internal_value(data)
        if errors_:
            raise serializers.ValidationError(errors_)
        return value
