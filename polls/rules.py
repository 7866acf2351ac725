"""Rules of polls that the HTTP input (polls.serializers) and the services share, and the
refusals of the services: one place each."""

from core.errors import ServiceError
from polls.generators import Generator

MIN_DURATION, MAX_DURATION = 15, 1440  # minutes of a time option or a generator's interval

# API field -> (model column, default, description) of the five poll settings.
SETTINGS = {
    "requireEmail": ("require_email", False, "Respondents must give an e-mail address."),
    "hideParticipants": ("hide_participants", False, "Respondents cannot see each other."),
    "hideScores": ("hide_scores", False, "Respondents cannot see the totals."),
    "disableComments": ("disable_comments", True, "Comments are off."),
    "allowTentativeVotes": ("allow_tentative_votes", True, "Respondents may answer `ifNeedBe`."),
}


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
    code = "ORGANIZER_NOT_MEMBER"

    def __init__(self, message: str = "organizer.email: not a member of this space"):
        super().__init__(message)


class TooManyOptions(ServiceError):
    code = "TOO_MANY_OPTIONS"


class InappropriateContent(ServiceError):
    code = "INAPPROPRIATE_CONTENT"
