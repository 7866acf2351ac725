"""A new poll: `create_poll`, from typed arguments (the API's body is mapped to them by
`polls.serializers.create_poll_arguments`; the back office's form builds them itself)."""

from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import NamedTuple

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone

from core.errors import ServiceError
from core.ids import grouped_ids
from polls.generators import Generator, slot_ranges, wall_clock_to_utc
from polls.models import Option, Poll, shown_options
from polls.moderation import flagged_fields
from polls.rules import (
    MAX_DURATION,
    MIN_DURATION,
    SETTING_COLUMNS,
    InappropriateContent,
    OrganizerNotMember,
    TimeSlot,
    TooManyOptions,
    check_generators,
)
from polls.services.editing import clean_details
from polls.services.lifecycle import options_past_at
from polls.timezones import InvalidTimeZone, canonical_time_zone, get_zone
from spaces.models import Membership, Space, User
from webhooks.models import Event
from webhooks.services import announce, poll_event


class OptionValues(NamedTuple):
    """An option's values before the poll is made (`options_past_at` reads them too)."""

    date: date | None
    start_time: datetime | None
    duration: int | None


def create_poll(
    *,
    space: Space,
    title: str,
    kind: str,
    dates: Iterable[date] = (),
    slots: Iterable[TimeSlot] = (),
    generators: Iterable[Generator] = (),
    duration: int | None = None,
    time_zone: str | None = None,
    description: str | None = None,
    location: str | None = None,
    organizer_email: str | None = None,
    endpoints_enabled: bool = True,
    conferencing: dict | None = None,
    **poll_settings: bool,
) -> tuple[Poll, list[Option]]:
    """Create a poll and its options (`poll.created`). A date poll takes `dates`; a time poll
    takes `slots` and/or `generators`, with `duration` (minutes) for slots without their own
    and for every generated one, and `time_zone` (an IANA name; None: floating times).
    `poll_settings` are the five settings by model field name (`require_email`...); those
    left out take the model's default. The organizer is the member with `organizer_email`
    (any case), else the space owner. `endpoints_enabled=False`: the caller read that the
    space has no enabled webhook endpoint (`webhooks.selectors.has_enabled_endpoint`), so
    `poll.created` is recorded as fanned out already (`webhooks.services.poll_event`).

    Returns the poll and its options in display order. Raises `ServiceError` (texts, kinds,
    durations, time zone), ORGANIZER_NOT_MEMBER, TOO_MANY_OPTIONS or INAPPROPRIATE_CONTENT
    before anything is stored. Duplicate options (same day; same start and duration) count once."""
    unknown = sorted(set(poll_settings) - set(SETTING_COLUMNS))
    if unknown:
        raise ServiceError(f"{', '.join(unknown)}: not a setting of a poll")
    details = clean_details({"title": title, "description": description, "location": location, **poll_settings,
                             **({"conferencing": conferencing} if conferencing else {})})
    time_zone = _canonical_zone(time_zone)
    organizer = _resolve_organizer(space, organizer_email)
    limit = settings.MAX_POLL_OPTIONS
    if kind == Poll.Kind.DATE:
        if slots or generators or duration is not None or time_zone:
            raise ServiceError("a date poll has dates only: no time slots, generators, duration or time zone")
        days = dict.fromkeys(dates)
        count = len(days)
        options = [OptionValues(day, None, None) for day in days] if count <= limit else None
    elif kind == Poll.Kind.TIME:
        if dates:
            raise ServiceError("a time poll has time slots, not dates")
        options, count = _time_options(list(slots), list(generators), duration, time_zone, limit)
    else:
        raise ServiceError(f"kind: must be one of {', '.join(Poll.Kind.values)}")
    if options is None:
        raise TooManyOptions(
            f"options: a poll may have at most {limit} options; this one has {count} after removing duplicates"
        )
    if not options:
        raise ServiceError("options: a poll needs at least one option")
    flagged = flagged_fields({name: details[name] or "" for name in ("title", "description", "location")})
    if flagged:
        raise InappropriateContent("; ".join(f"{field}: flagged by content moderation" for field in flagged))

    now = timezone.now()
    poll = Poll(
        space=space,
        organizer=organizer,
        **details,
        time_zone=time_zone,
        kind=kind,
        created_at=now,
        updated_at=now,
        past_at=options_past_at(kind=kind, time_zone=time_zone, options=options),
    )
    # In display order (OPTION_ORDER): the values are unique, so no None is ever compared.
    options = [
        Option(id=option_id, poll=poll, date=day, start_time=start, duration=minutes)
        for option_id, (day, start, minutes) in zip(grouped_ids(len(options)), sorted(options), strict=True)
    ]
    poll.shown_options = shown_options(kind, options)
    event = poll_event(space_id=space.pk, type="poll.created", poll_id=poll.pk, at=now, fan_out=endpoints_enabled)
    with transaction.atomic():  # all or none
        Poll.objects.bulk_create([poll])
        Option.objects.bulk_create(options)
        Event.objects.bulk_create([event])
    announce(event)
    return poll, options


def duplicate_poll(*, poll: Poll, title: str | None = None) -> tuple[Poll, list[Option]]:
    """A new poll in `poll`'s space with its details (`title` if given), conferencing,
    settings, time zone and options, and no participants, comments or deadline
    (`poll.created`). Its organizer is `poll`'s, or the space's owner when they are no longer
    a member."""
    options = list(Option.objects.filter(poll=poll))
    organizer = poll.organizer
    member = Membership.objects.filter(space_id=poll.space_id, user=organizer).exists()
    return create_poll(
        space=poll.space, title=poll.title if title is None else title, kind=poll.kind,
        dates=[option.date for option in options if option.date is not None],
        slots=[TimeSlot(option.start_time, option.duration) for option in options if option.date is None],
        time_zone=poll.time_zone, description=poll.description, location=poll.location,
        organizer_email=organizer.email if member else None, conferencing=poll.conferencing,
        **{column: getattr(poll, column) for column in SETTING_COLUMNS},
    )


def _canonical_zone(time_zone: str | None) -> str | None:
    if not time_zone:
        return None
    try:
        return canonical_time_zone(time_zone)
    except InvalidTimeZone as exc:
        raise ServiceError(f"timeZone: {exc}")


def _resolve_organizer(space: Space, email: str | None) -> User:
    if not email:
        return space.owner
    user = (
        User.objects.annotate(email_lower=Lower("email"))
        .filter(email_lower=email.strip().lower(), memberships__space=space)
        .first()
    )
    if user is None:
        raise OrganizerNotMember()
    return user


def _check_duration(what: str, minutes: int | None) -> None:
    if minutes is None:
        raise ServiceError(f"duration: required because {what} has no duration of its own")
    if not isinstance(minutes, int) or not MIN_DURATION <= minutes <= MAX_DURATION:
        raise ServiceError(f"{what}: the duration must be {MIN_DURATION}-{MAX_DURATION} minutes")


def _time_options(
    slots: list[TimeSlot], generators: list[Generator], duration: int | None, time_zone: str | None, limit: int
) -> tuple[list[OptionValues] | None, int]:
    """Slots and generated slots, in UTC, without duplicates (same start and same
    duration), and how many there are. Slots are counted as Unix seconds in sets (a year of
    quarter-hours from ten generators is about 350,000 integers: milliseconds); the options'
    values are made only when the poll is within `limit` (None otherwise), with the slot's own
    start where it was given in UTC (the same value as `fromtimestamp` makes)."""
    zone = get_zone(time_zone) if time_zone else None
    starts: dict[int, set[int]] = {}  # duration -> start instants
    in_utc: dict[int, datetime] = {}  # start instant -> a slot's start that is that instant in UTC already
    for index, slot in enumerate(slots):
        minutes = slot.duration or duration
        if type(minutes) is not int or not MIN_DURATION <= minutes <= MAX_DURATION:
            _check_duration(f"options[{index}]", minutes)  # names the option only when it is wrong
        start = slot.start
        if start.tzinfo is None:  # wall clock in the poll's zone, or floating
            start = wall_clock_to_utc(start.date(), start.time(), zone)
        seconds = int(start.timestamp())
        instants = starts.get(minutes)
        if instants is None:
            instants = starts[minutes] = set()
        instants.add(seconds)
        if start.tzinfo is UTC and not start.microsecond:
            in_utc[seconds] = start
    if generators:
        _check_duration("a generator", duration)
        check_generators(generators, duration)
        generated = starts.setdefault(duration, set())
        for generator in generators:
            for seconds in slot_ranges(generator, duration, zone):
                generated.update(seconds)
    count = sum(len(instants) for instants in starts.values())
    if count > limit:
        return None, count
    return [
        OptionValues(None, in_utc.get(start) or datetime.fromtimestamp(start, UTC), minutes)
        for minutes, instants in starts.items()
        for start in instants
    ], count
