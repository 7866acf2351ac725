"""Functions that change polls. Keyword-only, transactional; views, the back office and
`manage.py` commands call these and nothing else."""

from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone

from config.api import errors
from polls.generators import slot_ranges, wall_clock_to_utc
from polls.models import Option, Poll
from polls.moderation import flagged_fields
from polls.serializers import SETTINGS, as_generator
from polls.timezones import get_zone
from spaces.models import Space, User


def create_poll(*, space: Space, data: dict) -> tuple[Poll, list[Option]]:
    """Create a poll from validated `POST /v1/polls` input. Returns the poll and its
    options in display order. Raises ORGANIZER_NOT_MEMBER, TOO_MANY_OPTIONS or
    INAPPROPRIATE_CONTENT before anything is stored."""
    organizer = _resolve_organizer(space, data.get("organizer"))
    kind = data["kind"]
    time_zone = data.get("timeZone")
    options = _date_options(data) if kind == Poll.Kind.DATE else _time_options(data, time_zone)
    limit = settings.MAX_POLL_OPTIONS
    if len(options) > limit:
        raise errors.TooManyOptions(
            f"options: a poll may have at most {limit} options; this one has {len(options)} after removing duplicates"
        )
    texts = {"title": data["title"], "description": data.get("description") or "", "location": data.get("location") or ""}
    flagged = flagged_fields(texts)
    if flagged:
        raise errors.InappropriateContent("; ".join(f"{field}: flagged by content moderation" for field in flagged))

    now = timezone.now()
    poll = Poll(
        space=space,
        organizer=organizer,
        title=data["title"],
        description=data.get("description") or None,
        location=data.get("location") or None,
        time_zone=time_zone,
        kind=kind,
        created_at=now,
        updated_at=now,
        **{column: data.get(name, default) for name, (column, default, _) in SETTINGS.items()},
    )
    for option in options:
        option.poll = poll
    with transaction.atomic():
        poll.save(force_insert=True)
        Option.objects.bulk_create(options)
    poll.participant_count = 0
    options.sort(key=lambda o: (o.date or o.start_time, o.duration or 0, o.id))
    return poll, options


@transaction.atomic
def delete_poll(*, poll: Poll) -> None:
    """Soft delete: the poll disappears from the API at once; staff still see it in the
    back office until the purge job removes it after 30 days."""
    now = timezone.now()
    Poll.objects.filter(pk=poll.pk, deleted_at__isnull=True).update(deleted_at=now, updated_at=now)


def _resolve_organizer(space: Space, organizer: dict | None) -> User:
    if organizer is None:
        return space.owner
    user = (
        User.objects.annotate(email_lower=Lower("email"))
        .filter(email_lower=organizer["email"].lower(), memberships__space=space)
        .first()
    )
    if user is None:
        raise errors.OrganizerNotMember()
    return user


def _date_options(data: dict) -> list[Option]:
    dates = dict.fromkeys(option["date"] for option in data["options"])
    return [Option(date=day) for day in dates]


def _time_options(data: dict, time_zone: str | None) -> list[Option]:
    """Explicit options and generated slots, in UTC, without duplicates (same start and
    same duration). Slots are handled as Unix seconds so that a generator spanning a year
    costs milliseconds even when the result is refused as too many."""
    zone = get_zone(time_zone) if time_zone else None
    default_duration = data.get("duration")
    starts: dict[int, set[int]] = {}  # duration -> start instants
    for option in data.get("options") or ():
        start = option["startTime"]
        if start.tzinfo is None:  # wall clock in the poll's zone, or floating
            start = wall_clock_to_utc(start.date(), start.time(), zone)
        starts.setdefault(option.get("duration") or default_duration, set()).add(int(start.timestamp()))
    for item in data.get("generators") or ():
        generated = starts.setdefault(default_duration, set())
        for seconds in slot_ranges(as_generator(item, default_duration), default_duration, zone):
            generated.update(seconds)
    return [
        Option(start_time=datetime.fromtimestamp(start, UTC), duration=duration)
        for duration, instants in starts.items()
        for start in instants
    ]
