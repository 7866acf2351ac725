"""Rules of polls that the HTTP input (polls.serializers), the back office and the services
share, and the refusals of the services: one place each."""

from datetime import date, datetime, time, timedelta
from typing import NamedTuple

from core.errors import ServiceError
from polls.generators import Generator, matching_days
from polls.models import Poll

MIN_DURATION, MAX_DURATION = 15, 1440  # minutes of a time option or a generator's interval
# A deleted poll stays in the back office (and can be restored) this long, then is purged.
PURGE_AFTER = timedelta(days=30)


def max_length(model, field: str) -> int:
    """A text field's limit, from the model: the table, the API and the forms agree."""
    return model._meta.get_field(field).max_length


TITLE_MAX_LENGTH = max_length(Poll, "title")
LOCATION_MAX_LENGTH = max_length(Poll, "location")
DESCRIPTION_MAX_LENGTH = 1000  # a TextField: the limit is the API's
COMMENT_MAX_LENGTH = 1000  # a TextField: the limit of the invite page's comments

# API field -> (model column, description) of the five poll settings; their defaults are
# the model fields' (`setting_default`).
SETTINGS = {
    "requireEmail": ("require_email", "Respondents must give an e-mail address."),
    "hideParticipants": ("hide_participants", "Respondents cannot see each other."),
    "hideScores": ("hide_scores", "Respondents cannot see the totals."),
    "disableComments": ("disable_comments", "Comments are off."),
    "allowTentativeVotes": ("allow_tentative_votes", "Respondents may answer `ifNeedBe`."),
}
CONFERENCING_PROVIDERS = ("none", "zoom", "meet", "teams", "custom")

SETTING_COLUMNS = tuple(column for column, _ in SETTINGS.values())


def setting_default(column: str) -> bool:
    return Poll._meta.get_field(column).default


class TimeSlot(NamedTuple):
    """A time option as given: `start` aware (an instant) or naive (wall clock in the poll's
    time zone, or floating time without one); `duration` in minutes, None for the poll's. A
    named tuple: made for every option of a new poll's body, where a frozen dataclass's
    `__init__` sets each field through `object.__setattr__`."""

    start: datetime
    duration: int | None = None


# --- Generators ------------------------------------------------------------------------------

MAX_GENERATORS = 10
MAX_GENERATOR_DAYS = 365  # days a generator's range may cover, both ends included


def generator_range_problems(*, start_date: date, end_date: date, start: time, end: time) -> dict[str, str]:
    """What is wrong with a generator's date range and daily window on their own, by the
    field a client gave (`endDate`, `to`); empty when nothing is."""
    problems = {}
    if end_date < start_date:
        problems["endDate"] = "must not be before startDate"
    elif (end_date - start_date).days > MAX_GENERATOR_DAYS - 1:
        problems["endDate"] = f"the range must be fewer than {MAX_GENERATOR_DAYS + 1} days"
    if end <= start:
        problems["to"] = "must be later than from"
    return problems


def _minutes(clock: time) -> int:
    return clock.hour * 60 + clock.minute


def generator_fit_problems(generator: Generator, duration: int) -> dict[str, str]:
    """What keeps a well-formed generator from making a slot of `duration` minutes: a daily
    window shorter than the duration (`to`), a range without one of its days (`days`)."""
    problems = {}
    window = _minutes(generator.end) - _minutes(generator.start)
    if window < duration:
        problems["to"] = f"the daily window ({window} min) is shorter than duration ({duration} min)"
    if next(matching_days(generator), None) is None:
        problems["days"] = "the date range contains none of these days"
    return problems


def check_generators(generators: list[Generator], duration: int) -> None:
    """The generator rules, for the services (the API's input checks the same ones first,
    field by field): at most MAX_GENERATORS, each with a range, window and days that make
    slots. Raises `ServiceError` naming the first generator and field at fault."""
    if len(generators) > MAX_GENERATORS:
        raise ServiceError(f"generators: at most {MAX_GENERATORS}; got {len(generators)}")
    for index, generator in enumerate(generators):
        if not isinstance(generator.interval, int) or not MIN_DURATION <= generator.interval <= MAX_DURATION:
            raise ServiceError(f"generators[{index}].interval: must be {MIN_DURATION}-{MAX_DURATION} minutes")
        problems = generator_range_problems(
            start_date=generator.start_date, end_date=generator.end_date, start=generator.start, end=generator.end
        ) or generator_fit_problems(generator, duration)
        for field, problem in problems.items():
            raise ServiceError(f"generators[{index}].{field}: {problem}")


class PollNotFound(ServiceError):
    """The poll does not exist, was deleted or belongs to another space."""

    code, status = "POLL_NOT_FOUND", 404

    def __init__(self, message: str = "Poll not found."):
        super().__init__(message)


class ParticipantNotFound(ServiceError):
    """The participant does not exist, was deleted or belongs to another poll."""

    code, status = "PARTICIPANT_NOT_FOUND", 404

    def __init__(self, message: str = "Participant not found."):
        super().__init__(message)


class OrganizerNotMember(ServiceError):
    """`organizer.email` is not a member of the space."""

    code = "ORGANIZER_NOT_MEMBER"

    def __init__(self, message: str = "organizer.email: not a member of this space"):
        super().__init__(message)


class TooManyOptions(ServiceError):
    """More options than a poll may have (`MAX_POLL_OPTIONS`, 100 unless configured), counted after
    generators are expanded and duplicates removed; the message gives the count."""

    code = "TOO_MANY_OPTIONS"


class InappropriateContent(ServiceError):
    """Content moderation flagged the title, description or location."""

    code = "INAPPROPRIATE_CONTENT"
