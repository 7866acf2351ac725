"""Rules of polls that the HTTP input (polls.serializers) and the services share, and the
refusals of the services: one place each."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from core.errors import ServiceError
from polls.generators import Generator
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


@dataclass(frozen=True)
class TimeSlot:
    """A time option as given: `start` aware (an instant) or naive (wall clock in the poll's
    time zone, or floating time without one); `duration` in minutes, None for the poll's."""

    start: datetime
    duration: int | None = None


def as_generator(item: dict, duration: int) -> Generator:
    return Generator(
        start_date=item["startDate"],
        end_date=item["endDate"],
        days=item["days"],
        start=item["from"],
        end=item["to"],
        interval=item.get("interval") or duration,
    )


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
