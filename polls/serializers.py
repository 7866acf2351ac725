"""Request validation for `POST /v1/polls`, and response shapes for the OpenAPI document.

Input serializers validate only; the service builds the poll. Output serializers are never
run: reads build plain dicts (see selectors) and these describe them in the schema, where
tests hold every response to them.
"""

import re
from datetime import UTC, datetime, timedelta, timezone

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from core.api.fields import (
    MAX_DATE,
    MIN_DATE,
    RANGE_MESSAGE,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictClockField,
    StrictDateField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
)
from polls.generators import WEEKDAYS, matching_days
from polls.rules import MAX_DURATION, MIN_DURATION, as_generator
from polls.timezones import InvalidTimeZone, canonical_time_zone

MAX_GENERATORS = 10
MAX_GENERATOR_DAYS = 365

# --- Input fields ------------------------------------------------------------------------

_START_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})?$",
    re.ASCII,  # `\d` as in the JSON Schema pattern: 0-9 only
)
START_TIME_PATTERN = _START_TIME.pattern


@extend_schema_field(
    {
        "type": "string",
        "pattern": START_TIME_PATTERN,
        "description": "RFC 3339 date-time. With `Z` or an offset it is an instant; without one it is "
        "wall-clock time in `timeZone`, or floating time when the poll has no `timeZone`. "
        "Seconds are kept, fractions dropped. From 1000-01-01 to 9998-12-31.",
        "examples": ["2026-12-01T09:00:00Z", "2026-12-01T09:00:00"],
    }
)
class StartTimeField(serializers.Field):
    """Returns a naive datetime (wall clock or floating) or an aware one (instant)."""

    default_error_messages = {
        "required": "required", "null": "must not be null", "invalid": "must be an RFC 3339 date-time", "range": RANGE_MESSAGE,
    }

    def to_internal_value(self, data):
        match = _START_TIME.fullmatch(data) if isinstance(data, str) else None  # `$` alone allows a final "\n"
        if not match:
            self.fail("invalid")
        year, month, day, hour, minute, second, offset = match.groups()
        try:
            value = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0))
            if offset and offset not in "Zz":
                hours, minutes = int(offset[1:3]), int(offset[4:6])
                if hours > 23 or minutes > 59:
                    raise ValueError
                delta = timedelta(hours=hours, minutes=minutes)
                value = value.replace(tzinfo=timezone(delta if offset[0] == "+" else -delta))
            elif offset:
                value = value.replace(tzinfo=UTC)
        except ValueError:
            self.fail("invalid")
        if not MIN_DATE <= value.date() <= MAX_DATE:
            self.fail("range")
        return value


@extend_schema_field({"type": "string", "maxLength": 64, "examples": ["Europe/Berlin"]})
class TimeZoneField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=64, **kwargs)

    def to_internal_value(self, data):
        name = super().to_internal_value(data)
        try:
            return canonical_time_zone(name)
        except InvalidTimeZone as exc:
            raise serializers.ValidationError(str(exc))


@extend_schema_field({"type": "string", "format": "email", "maxLength": 254})
class EmailField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=254, **kwargs)

    def to_internal_value(self, data):
        email = super().to_internal_value(data)
        try:
            validate_email(email)
        except DjangoValidationError:
            raise serializers.ValidationError("must be an e-mail address")
        return email


def duration_field(**kwargs):
    return StrictIntegerField(min_value=MIN_DURATION, max_value=MAX_DURATION, **kwargs)


# --- Input objects -----------------------------------------------------------------------


class OrganizerInput(StrictSerializer):
    """The organizer, a member of the space, by e-mail."""

    email = EmailField(help_text="E-mail of a member of the space; matched case-insensitively.")


class DateOptionInput(StrictSerializer):
    """One calendar day."""

    date = StrictDateField(help_text="A floating calendar date, `YYYY-MM-DD`.")


class TimeOptionInput(StrictSerializer):
    """One time slot."""

    startTime = StartTimeField()
    duration = duration_field(required=False, help_text="Minutes, 15-1440; overrides the poll's `duration`.")


class GeneratorInput(StrictSerializer):
    """Expands to daily slots over a date range (see the rules in the API description)."""

    startDate = StrictDateField(help_text="First day of the range.")
    endDate = StrictDateField(help_text="Last day of the range (inclusive); fewer than 366 days after startDate.")
    days = StrictListField(
        child=StrictChoiceField(choices=WEEKDAYS),
        min_length=1,
        max_length=7,
        required=False,
        help_text="Weekdays to use, no repeats; left out: every day.",
    )
    interval = StrictIntegerField(
        min_value=MIN_DURATION, max_value=MAX_DURATION, required=False,
        help_text="Minutes between slot starts, 15-1440; default: the poll's `duration`.",
    )

    def get_fields(self):
        fields = super().get_fields()
        # `from` is a Python keyword, so these two are declared here.
        fields["from"] = StrictClockField(help_text="Daily window start, `HH:MM` wall-clock time.")
        fields["to"] = StrictClockField(help_text="Daily window end, `HH:MM`; later than `from`.")
        return fields

    def validate(self, attrs):
        errors = {}
        start, end = attrs["startDate"], attrs["endDate"]
        if end < start:
            errors["endDate"] = "must not be before startDate"
        elif (end - start).days > MAX_GENERATOR_DAYS - 1:
            errors["endDate"] = f"the range must be fewer than {MAX_GENERATOR_DAYS + 1} days"
        days = attrs.get("days")
        if days:
            for index, name in enumerate(days):
                if name in days[:index]:
                    errors[f"days[{index}]"] = "repeated"
        if attrs["to"] <= attrs["from"]:
            errors["to"] = "must be later than from"
        if errors:
            raise serializers.ValidationError(errors)
        attrs["days"] = tuple(days or WEEKDAYS)
        return attrs


class PollInputBase(StrictSerializer):
    title = StrictCharField(max_length=255, help_text="Trimmed; 1-255 characters.")
    description = StrictCharField(max_length=1000, required=False, allow_blank=True, help_text="Trimmed; at most 1000 characters.")
    location = StrictCharField(max_length=255, required=False, allow_blank=True, help_text="Trimmed; at most 255 characters.")
    requireEmail = StrictBooleanField(required=False, help_text="Default false.")
    hideParticipants = StrictBooleanField(required=False, help_text="Default false.")
    hideScores = StrictBooleanField(required=False, help_text="Default false.")
    disableComments = StrictBooleanField(required=False, help_text="Default true.")
    allowTentativeVotes = StrictBooleanField(required=False, help_text="Default true.")
    organizer = OrganizerInput(required=False, help_text="Left out: the space owner organises the poll.")


class DatePollInput(PollInputBase):
    """A date poll: respondents pick calendar days. `timeZone`, `duration` and `generators` are not part of it."""

    kind = StrictChoiceField(choices=["date"])
    options = StrictListField(child=DateOptionInput(), min_length=1, help_text="Duplicate dates are removed.")


class TimePollInput(PollInputBase):
    """A time poll: respondents pick time slots, given as `options`, `generators` or both."""

    kind = StrictChoiceField(choices=["time"])
    options = StrictListField(child=TimeOptionInput(), min_length=1, required=False)
    generators = StrictListField(child=GeneratorInput(), min_length=1, max_length=MAX_GENERATORS, required=False)
    timeZone = TimeZoneField(required=False, help_text="IANA name; fixed-offset zones are refused.")
    duration = duration_field(required=False, help_text="Minutes, 15-1440. Required with generators or when an option has no duration.")

    def validate(self, attrs):
        options, generators = attrs.get("options"), attrs.get("generators")
        duration = attrs.get("duration")
        errors = {}
        if not options and not generators:
            errors["options"] = "required (give options, generators or both)"
        if duration is None:
            if generators:
                errors["duration"] = "required when generators are given"
            elif options and any("duration" not in option for option in options):
                first = next(i for i, option in enumerate(options) if "duration" not in option)
                errors["duration"] = f"required because options[{first}] has no duration"
        elif generators:
            for index, item in enumerate(generators):
                window = _minutes(item["to"]) - _minutes(item["from"])
                if window < duration:
                    errors[f"generators[{index}].to"] = f"the daily window ({window} min) is shorter than duration ({duration} min)"
                generator = as_generator(item, duration)
                if next(matching_days(generator), None) is None:
                    errors[f"generators[{index}].days"] = "the date range contains none of these days"
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class UnknownKindPollInput(PollInputBase):
    """Used when `kind` is missing or wrong: checks the shared fields and reports `kind`,
    without judging the kind-specific ones."""

    kind = StrictChoiceField(choices=["date", "time"])
    options = serializers.JSONField(required=False)
    generators = serializers.JSONField(required=False)
    timeZone = serializers.JSONField(required=False)
    duration = serializers.JSONField(required=False)


def _minutes(clock) -> int:
    return clock.hour * 60 + clock.minute


def poll_input_serializer(data) -> StrictSerializer:
    kind = data.get("kind") if isinstance(data, dict) else None
    forms = {"date": DatePollInput, "time": TimePollInput}
    cls = forms[kind] if isinstance(kind, str) and kind in forms else UnknownKindPollInput
    return cls(data=data)


# --- Response shapes (documentation only) -------------------------------------------------


class ConferencingSerializer(serializers.Serializer):
    """The video call: `{"provider": "none"}` when there is none."""

    provider = serializers.ChoiceField(choices=["none", "zoom", "meet", "teams", "custom"])
    label = serializers.CharField(required=False, help_text="Only with provider `custom`.")
    uri = serializers.CharField(required=False, help_text="Only with provider `custom`, when set.")


class OrganizerSerializer(serializers.Serializer):
    """The member who organises the poll."""

    id = serializers.CharField()
    name = serializers.CharField()
    email = serializers.CharField()
    image = serializers.CharField(allow_null=True, help_text="Avatar URL on the CDN, or null.")


class DateOptionSerializer(serializers.Serializer):
    """An option of a date poll."""

    id = serializers.CharField()
    date = serializers.DateField(help_text="Floating calendar date; never convert it through a time zone.")


class TimeOptionSerializer(serializers.Serializer):
    """An option of a time poll."""

    id = serializers.CharField()
    startTime = serializers.DateTimeField(help_text="UTC instant, `YYYY-MM-DDTHH:MM:SS.sssZ`.")
    duration = serializers.IntegerField(help_text="Minutes.")


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="Option",
        serializers=[DateOptionSerializer, TimeOptionSerializer],
        resource_type_field_name=None,
    )
)
class OptionField(serializers.JSONField):
    pass


class PollSerializer(serializers.Serializer):
    """A scheduling poll. Every field is present on every poll response."""

    id = serializers.CharField(help_text="12 characters `[A-Za-z0-9]`.")
    title = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    location = serializers.CharField(allow_null=True)
    conferencing = ConferencingSerializer()
    timeZone = serializers.CharField(allow_null=True, help_text="IANA name; null for floating times and date polls.")
    status = serializers.ChoiceField(choices=["open", "closed", "scheduled", "canceled"])
    kind = serializers.ChoiceField(choices=["date", "time"])
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField(help_text="Changes whenever anything readable about the poll changes, responses included.")
    organizer = OrganizerSerializer()
    requireEmail = serializers.BooleanField()
    hideParticipants = serializers.BooleanField()
    hideScores = serializers.BooleanField()
    disableComments = serializers.BooleanField()
    allowTentativeVotes = serializers.BooleanField()
    participantCount = serializers.IntegerField()
    options = serializers.ListField(child=OptionField(), help_text="Date options (date polls) or time options (time polls), sorted.")
    adminUrl = serializers.URLField()
    inviteUrl = serializers.URLField()


# --- Results and participants (documentation only) -----------------------------------------


class VoteCountSerializer(serializers.Serializer):
    """How many participants gave one vote type for an option."""

    type = serializers.CharField(help_text="Open set: `yes`, `ifNeedBe`, `no`, and possibly others; tolerate unknown types.")
    count = serializers.IntegerField(min_value=0)


class ResultFieldsSerializer(serializers.Serializer):
    """The counted part of a result option."""

    votes = VoteCountSerializer(
        many=True,
        help_text="Dense: every vote type the poll offers, in display order (`yes`, `ifNeedBe`, `no`, then any "
        "other type in order of first appearance), with `count` 0 where nobody chose it. `ifNeedBe` is left out "
        "when the poll does not allow tentative votes and nobody holds one.",
    )
    score = serializers.FloatField(
        help_text="Opaque ranking number: sorting by it orders options from best to worst. Do not decode it, "
        "compare it across polls or threshold it."
    )
    isTopChoice = serializers.BooleanField(help_text="The option has the highest score and somebody can make it.")


class DateResultOptionSerializer(DateOptionSerializer, ResultFieldsSerializer):
    """A date option with its counts."""


class TimeResultOptionSerializer(TimeOptionSerializer, ResultFieldsSerializer):
    """A time option with its counts."""


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="ResultOption",
        serializers=[DateResultOptionSerializer, TimeResultOptionSerializer],
        resource_type_field_name=None,
    )
)
class ResultOptionField(serializers.JSONField):
    pass


class ResultsSerializer(serializers.Serializer):
    """Counts per option of one poll, without individual participant data."""

    pollId = serializers.CharField()
    kind = serializers.ChoiceField(choices=["date", "time"])
    status = serializers.ChoiceField(choices=["open", "closed", "scheduled", "canceled"])
    participantCount = serializers.IntegerField(min_value=0)
    options = serializers.ListField(child=ResultOptionField(), help_text="In the poll's option order.")
    highScore = serializers.FloatField(help_text="The highest `score` among the options; 0 without options.")


class AvailabilitySpanSerializer(serializers.Serializer):
    """A time the participant can make: one per option answered `yes` or `ifNeedBe`."""

    start = serializers.DateTimeField(help_text="Inclusive. For an all-day span, 00:00:00.000Z of the date.")
    end = serializers.DateTimeField(help_text="Exclusive. For an all-day span, 00:00:00.000Z of the next date.")
    allDay = serializers.BooleanField(help_text="A whole calendar day: read the date from `start`.")
    modifiers = serializers.ListField(
        child=serializers.CharField(),
        help_text="Open set. `ifNeedBe`: can make it but would rather not. An unrecognised modifier still means available.",
    )


class ParticipantSerializer(serializers.Serializer):
    """A response to a poll."""

    id = serializers.CharField()
    name = serializers.CharField()
    email = serializers.CharField(allow_null=True)
    createdAt = serializers.DateTimeField()
    availability = AvailabilitySpanSerializer(
        many=True, help_text="Ordered by start; not merged. Options answered `no` or left unanswered are absent."
    )
