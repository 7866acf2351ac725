"""The private API's request rules: types are strict, but fields it does not know are ignored
(not refused, as `/v1` does), and a body whose Content-Type is not JSON counts as `{}`.

Validation gives the issues of `privateapi.errors.InvalidInput`; the mapping to
`polls.services.create_poll` is `create_arguments`."""

import json
import re
from datetime import time

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import (
    ParsedField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictDateField,
    StrictIntegerField,
    StrictListField,
)
from core.formats import DATE_TIME_PATTERN, EMAIL_MAX_LENGTH, parse_date_time, parse_email
from polls.generators import WEEKDAYS, Generator
from polls.models import Poll
from polls.rules import (
    DESCRIPTION_MAX_LENGTH,
    LOCATION_MAX_LENGTH,
    MAX_DURATION,
    MIN_DURATION,
    TITLE_MAX_LENGTH,
    TimeSlot,
    generator_fit_problems,
    generator_range_problems,
)
from polls.timezones import canonical_time_zone
from privateapi.errors import InvalidInput, MalformedJson, issue, issues_of

# Hono's test of a JSON media type: any other body is read as `{}`.
JSON_MEDIA_TYPE = re.compile(r"^application/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$")
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d+)?)?$", re.ASCII)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def json_body(request):
    """The request's JSON body: `{}` unless its Content-Type is JSON; MalformedJson when it
    cannot be read."""
    media_type = request.META.get("CONTENT_TYPE", "")
    if not JSON_MEDIA_TYPE.match(media_type):
        return {}
    try:
        return json.loads(request.body.decode("utf-8"), parse_constant=_no_constant)
    except ValueError:  # not UTF-8 or not JSON (JSONDecodeError is a ValueError)
        raise MalformedJson()


class Lenient(serializers.Serializer):
    # An object whose unknown keys are ignored. (A comment, not a docstring: the OpenAPI
    # document would repeat it in every subclass's description.)

    default_error_messages = {"required": "required", "null": "must not be null", "invalid": "must be an object"}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": [self.error_messages["invalid"]]}, code="invalid")
        return super().to_internal_value(data)


def validated(cls: type[serializers.Serializer], data) -> dict:
    serializer = cls(data=data)
    if not serializer.is_valid():
        raise InvalidInput(issues_of(serializer.errors), data)
    return serializer.validated_data


@extend_schema_field({"type": "string", "format": "email", "maxLength": EMAIL_MAX_LENGTH})
class EmailField(ParsedField):
    parse = staticmethod(parse_email)


@extend_schema_field({"type": "string", "pattern": r"^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?$", "examples": ["09:30"]})
class ClockField(ParsedField):
    """Time in HH:mm (24-hour) format; seconds, if given, are dropped."""

    @staticmethod
    def parse(text):
        match = _TIME.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError("must be a time HH:mm")
        return time(int(match[1]), int(match[2]))


@extend_schema_field({"type": "string", "examples": ["Europe/London"]})
class TimeZoneField(StrictCharField):
    convert = canonical_time_zone  # InvalidTimeZone is a ValueError


@extend_schema_field({"type": "string"})
class IgnoredText(serializers.Field):
    """Any string: accepted, then not used."""

    default_error_messages = {"required": "required", "null": "must not be null", "invalid": "must be a string"}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return data


class OrganizerInput(Lenient):
    """Organizer of the poll. Defaults to the space owner if not provided. The organizer must be a member of the space."""

    email = EmailField(help_text="Email address of the organizer.")


class SlotGenerator(Lenient):
    """Expands to slots of `duration` every `interval` minutes within a daily window, on the listed days of a date range."""

    startDate = StrictDateField()
    endDate = StrictDateField(help_text="On or after startDate, fewer than 366 days after it.")
    days = StrictListField(child=StrictChoiceField(choices=WEEKDAYS))
    startTime = ClockField()
    endTime = ClockField()
    interval = StrictIntegerField(
        min_value=MIN_DURATION, max_value=MAX_DURATION, required=False,
        help_text="Interval in minutes between slots. Defaults to duration.",
    )

    def validate(self, attrs):
        problem = generator_range_problems(
            start_date=attrs["startDate"], end_date=attrs["endDate"], start=attrs["startTime"], end=attrs["endTime"]
        ).get("endDate")
        if problem:
            raise serializers.ValidationError({"endDate": [problem]})
        return attrs


START_TIME = {
    "type": "string",
    "pattern": DATE_TIME_PATTERN,
    "description": "ISO datetime start time. Without an offset it is wall-clock time in `timezone` (floating "
    "time without one); with an offset or `Z` it is an instant.",
    "examples": ["2025-01-15T09:00:00"],
}


class StartTimeField(ParsedField):
    parse = staticmethod(parse_date_time)


class TimeItem(serializers.Field):
    """A start time (a string) or a slot generator (an object)."""

    default_error_messages = {"invalid": "must be a datetime string or a slot generator"}

    def to_internal_value(self, data):
        if isinstance(data, str):
            return StartTimeField().run_validation(data)
        if isinstance(data, dict):
            return validated_nested(SlotGenerator, data)
        self.fail("invalid")


class TimeItemScheme(OpenApiSerializerFieldExtension):
    """How the OpenAPI document describes a `TimeItem`: one of a start time and a slot generator."""

    target_class = TimeItem

    def map_serializer_field(self, auto_schema, direction):
        return {"oneOf": [START_TIME, auto_schema.resolve_serializer(SlotGenerator, direction).ref]}


def validated_nested(cls, data) -> dict:
    serializer = cls(data=data)
    if not serializer.is_valid():
        raise serializers.ValidationError(serializer.errors)
    return serializer.validated_data


class SlotsInput(Lenient):
    """Time-based options that share a fixed `duration`."""

    duration = StrictIntegerField(min_value=MIN_DURATION, max_value=MAX_DURATION, help_text="Duration in minutes for each time slot.")
    timezone = TimeZoneField(
        required=False,
        help_text="IANA timezone. Datetime strings without an offset are interpreted in this timezone. If omitted, "
        "offset-less datetimes are treated as floating times and the poll has no timezone.",
    )
    times = StrictListField(
        child=TimeItem(),
        min_length=1,
        help_text="An array of ISO datetime strings and/or slot generators.",
    )


class CreatePollInput(Lenient):
    """A new poll: `dates` (all-day options) or `slots` (time slots), not both."""

    title = StrictCharField(max_length=TITLE_MAX_LENGTH, help_text="Trimmed; at least one character.")
    description = StrictCharField(max_length=DESCRIPTION_MAX_LENGTH, required=False, allow_blank=True, multiline=True)
    location = StrictCharField(max_length=LOCATION_MAX_LENGTH, required=False, allow_blank=True)
    requireEmail = StrictBooleanField(required=False, help_text="Require participants to provide their email address.")
    hideParticipants = StrictBooleanField(required=False, help_text="Hide participant names from other participants.")
    hideScores = StrictBooleanField(required=False, help_text="Hide vote counts from participants.")
    disableComments = StrictBooleanField(required=False, help_text="Disable the comments section. Defaults to true.")
    spaceId = IgnoredText(required=False, help_text="Accepted and ignored: the poll is created in the API key's space.")
    organizer = OrganizerInput(required=False)
    dates = StrictListField(child=StrictDateField(), min_length=1, required=False,
                            help_text="Array of ISO dates for all-day options.")
    slots = SlotsInput(required=False)

    def validate(self, attrs):
        if "dates" not in attrs and "slots" not in attrs:
            raise serializers.ValidationError("Either 'dates' or 'slots' must be provided", code="custom")
        if "dates" in attrs and "slots" in attrs:
            raise serializers.ValidationError("Cannot provide both 'dates' and 'slots'", code="custom")
        return attrs


class PatchPollInput(Lenient):
    """The status to move the poll to: only `closed` is available."""

    status = StrictChoiceField(choices=Poll.Status.values, help_text="Only `closed` is accepted; the other statuses give 422.")


def create_arguments(data: dict) -> dict:
    """A valid body as `services.create_poll`'s keyword arguments (the refusals particular to
    this API, DUPLICATE_DATES and NO_OPTIONS_GENERATED, are the view's)."""
    arguments = {
        "title": data["title"],
        "description": data.get("description"),
        "location": data.get("location"),
        "organizer_email": (data.get("organizer") or {}).get("email"),
        **{column: data[name] for name, column in (("requireEmail", "require_email"), ("hideParticipants", "hide_participants"),
                                                  ("hideScores", "hide_scores"), ("disableComments", "disable_comments"))
           if name in data},
    }
    if "dates" in data:
        return {**arguments, "kind": Poll.Kind.DATE, "dates": data["dates"]}
    slots = data["slots"]
    duration = slots["duration"]
    times = slots["times"]
    return {
        **arguments,
        "kind": Poll.Kind.TIME,
        "time_zone": slots.get("timezone"),
        "duration": duration,
        "slots": [TimeSlot(item) for item in times if not isinstance(item, dict)],
        "generators": [generator for generator in map(_generator, times, [duration] * len(times)) if generator],
    }


def _generator(item, duration: int) -> Generator | None:
    """A slot generator of `times` as the domain's, or None: a start time, or a generator
    that makes no slot (no listed day in its range, or a window shorter than the duration),
    which the private API let pass."""
    if not isinstance(item, dict) or item["endTime"] <= item["startTime"]:
        return None
    generator = Generator(start_date=item["startDate"], end_date=item["endDate"], days=tuple(dict.fromkeys(item["days"])),
                          start=item["startTime"], end=item["endTime"], interval=item.get("interval") or duration)
    return None if generator_fit_problems(generator, duration) else generator


# --- The poll list's query ----------------------------------------------------------------

LIMIT_DEFAULT, LIMIT_MAX = 20, 100


def list_query(request) -> dict:
    """`status`, `cursor` and `limit` (a number, 1-100, default 20); other parameters are
    ignored. A parameter given twice is an array, which none of them accepts."""
    given = {key: values[0] if len(values) == 1 else values for key, values in request.GET.lists()}
    query, problems = {"limit": LIMIT_DEFAULT}, []
    status = given.get("status")
    if status is not None:
        if status in Poll.Status.values:
            query["status"] = status
        else:
            problems.append(issue(["status"], f"must be one of: {', '.join(Poll.Status.values)}", "invalid_value"))
    cursor = given.get("cursor")
    if cursor is not None:
        if isinstance(cursor, str):
            query["cursor"] = cursor
        else:
            problems.append(issue(["cursor"], "must be a string", "invalid_type"))
    if "limit" in given:
        limit = _number(given["limit"])
        if limit is None or limit != int(limit):
            problems.append(issue(["limit"], "must be an integer", "invalid_type"))
        elif not 1 <= limit <= LIMIT_MAX:
            problems.append(issue(["limit"], f"must be 1-{LIMIT_MAX}", "too_small" if limit < 1 else "too_big"))
        else:
            query["limit"] = int(limit)
    if problems:
        raise InvalidInput(problems, given)
    return query


def _number(value) -> float | None:
    """A query value read as a number, as `Number()` reads it (blank: 0); None when it is none."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return 0.0
    if "_" in text:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None

