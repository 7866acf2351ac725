"""Request validation for `POST /v1/polls`: the input serializers validate and
`create_poll_arguments` maps the valid body to `services.create_poll`'s arguments. (The
response shapes are in `polls.schema`.)
"""


from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import (
    ParsedField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictClockField,
    StrictDateField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
)
from core.formats import DATE_TIME_PATTERN, EMAIL_MAX_LENGTH, parse_date_time, parse_email
from polls.generators import WEEKDAYS, Generator
from polls.models import Poll
from polls.rules import (
    DESCRIPTION_MAX_LENGTH,
    LOCATION_MAX_LENGTH,
    MAX_DURATION,
    MAX_GENERATORS,
    MIN_DURATION,
    SETTINGS,
    TITLE_MAX_LENGTH,
    TimeSlot,
    generator_fit_problems,
    generator_range_problems,
    max_length,
    setting_default,
)
from polls.timezones import canonical_time_zone

# --- Input fields ------------------------------------------------------------------------


@extend_schema_field(
    {
        "type": "string",
        "pattern": DATE_TIME_PATTERN,
        "description": "RFC 3339 date-time. With `Z` or an offset it is an instant; without one it is "
        "wall-clock time in `timeZone`, or floating time when the poll has no `timeZone`. "
        "Seconds are kept, fractions dropped. From 1000-01-01 to 9998-12-31.",
        "examples": ["2026-12-01T09:00:00Z", "2026-12-01T09:00:00"],
    }
)
class StartTimeField(ParsedField):
    """Returns a naive datetime (wall clock or floating) or an aware one (instant)."""

    parse = parse_date_time


@extend_schema_field({"type": "string", "maxLength": max_length(Poll, "time_zone"), "examples": ["Europe/Berlin"]})
class TimeZoneField(StrictCharField):
    convert = canonical_time_zone  # InvalidTimeZone is a ValueError

    def __init__(self, **kwargs):
        super().__init__(max_length=max_length(Poll, "time_zone"), **kwargs)


@extend_schema_field({"type": "string", "format": "email", "maxLength": EMAIL_MAX_LENGTH})
class EmailField(StrictCharField):
    convert = parse_email

    def __init__(self, **kwargs):
        super().__init__(max_length=EMAIL_MAX_LENGTH, **kwargs)


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
        problems = generator_range_problems(
            start_date=attrs["startDate"], end_date=attrs["endDate"], start=attrs["from"], end=attrs["to"]
        )
        errors = {"endDate": problems["endDate"]} if "endDate" in problems else {}
        days = attrs.get("days")
        if days:
            for index, name in enumerate(days):
                if name in days[:index]:
                    errors[f"days[{index}]"] = "repeated"
        if "to" in problems:
            errors["to"] = problems["to"]
        if errors:
            raise serializers.ValidationError(errors)
        attrs["days"] = tuple(days or WEEKDAYS)
        return attrs


class PollTextsInput(StrictSerializer):
    title = StrictCharField(max_length=TITLE_MAX_LENGTH,
                            help_text=f"Trimmed; 1-{TITLE_MAX_LENGTH} characters; no control characters or line breaks.")
    description = StrictCharField(
        max_length=DESCRIPTION_MAX_LENGTH, required=False, allow_blank=True, multiline=True,
        help_text=f"Trimmed; at most {DESCRIPTION_MAX_LENGTH} characters; line breaks and tabs are kept, other "
        "control characters refused.")
    location = StrictCharField(
        max_length=LOCATION_MAX_LENGTH, required=False, allow_blank=True,
        help_text=f"Trimmed; at most {LOCATION_MAX_LENGTH} characters; no control characters or line breaks.")


# The five settings, after the texts (DRF keeps a base class's fields first).
PollSettingsInput = type("PollSettingsInput", (PollTextsInput,), {
    name: StrictBooleanField(required=False, help_text=f"Default {str(setting_default(column)).lower()}.")
    for name, (column, _) in SETTINGS.items()
})


class PollInputBase(PollSettingsInput):
    organizer = OrganizerInput(required=False, help_text="Left out: the space owner organises the poll.")


class DatePollInput(PollInputBase):
    """A date poll: respondents pick calendar days. `timeZone`, `duration` and `generators` are not part of it."""

    kind = StrictChoiceField(choices=[Poll.Kind.DATE.value])
    options = StrictListField(child=DateOptionInput(), min_length=1, help_text="Duplicate dates are removed.")


class TimePollInput(PollInputBase):
    """A time poll: respondents pick time slots, given as `options`, `generators` or both."""

    kind = StrictChoiceField(choices=[Poll.Kind.TIME.value])
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
                for field, problem in generator_fit_problems(as_generator(item, duration), duration).items():
                    errors[f"generators[{index}].{field}"] = problem
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class UnknownKindPollInput(PollInputBase):
    """Used when `kind` is missing or wrong: checks the shared fields and reports `kind`,
    without judging the kind-specific ones."""

    kind = StrictChoiceField(choices=Poll.Kind.values)
    options = serializers.JSONField(required=False)
    generators = serializers.JSONField(required=False)
    timeZone = serializers.JSONField(required=False)
    duration = serializers.JSONField(required=False)


def as_generator(item: dict, duration: int) -> Generator:
    """A valid generator of the API (camelCase, `from`/`to`, `interval` optional) as the domain's."""
    return Generator(
        start_date=item["startDate"],
        end_date=item["endDate"],
        days=item["days"],
        start=item["from"],
        end=item["to"],
        interval=item.get("interval") or duration,
    )


_FORMS = {Poll.Kind.DATE: DatePollInput, Poll.Kind.TIME: TimePollInput}


def validated_poll_input(data) -> dict:
    """The validated `POST /v1/polls` body, by its `kind`, or the ValidationError raised."""
    kind = data.get("kind") if isinstance(data, dict) else None
    cls = _FORMS[kind] if isinstance(kind, str) and kind in _FORMS else UnknownKindPollInput
    return cls.validated(data)


def create_poll_arguments(data: dict) -> dict:
    """A valid `POST /v1/polls` body as `services.create_poll`'s keyword arguments."""
    duration = data.get("duration")
    options = data.get("options") or ()
    arguments = {
        "title": data["title"],
        "kind": data["kind"],
        "description": data.get("description"),
        "location": data.get("location"),
        "time_zone": data.get("timeZone"),
        "duration": duration,
        "organizer_email": (data.get("organizer") or {}).get("email"),
        **{column: data[name] for name, (column, _) in SETTINGS.items() if name in data},
    }
    if data["kind"] == Poll.Kind.DATE:
        arguments["dates"] = [option["date"] for option in options]
    else:
        arguments["slots"] = [TimeSlot(option["startTime"], option.get("duration")) for option in options]
        arguments["generators"] = [as_generator(item, duration) for item in data.get("generators") or ()]
    return arguments
