"""Functions that change polls. Keyword-only, transactional; views, the back office and
`manage.py` commands call these and nothing else."""

from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator, validate_email
from django.db import transaction
from django.db.models.functions import Lower
from django.utils import timezone

from core.errors import ServiceError
from core.formats import instant
from polls.generators import slot_ranges, wall_clock_to_utc
from polls.models import Option, Participant, Poll, Vote
from polls.moderation import flagged_fields
from polls.rules import (
    MAX_DURATION,
    MIN_DURATION,
    SETTINGS,
    InappropriateContent,
    OrganizerNotMember,
    TooManyOptions,
    as_generator,
)
from polls.selectors import option_span, span_dict
from polls.timezones import get_zone
from spaces.models import Space, User
from webhooks.services import record_event


def create_poll(*, space: Space, data: dict) -> tuple[Poll, list[Option]]:
    """Create a poll from validated `POST /v1/polls` input. Returns the poll and its
    options in display order. Raises ORGANIZER_NOT_MEMBER, TOO_MANY_OPTIONS or
    INAPPROPRIATE_CONTENT before anything is stored."""
    organizer = _resolve_organizer(space, data.get("organizer"))
    kind = data["kind"]
    time_zone = data.get("timeZone")
    limit = settings.MAX_POLL_OPTIONS
    if kind == Poll.Kind.DATE:
        dates = dict.fromkeys(option["date"] for option in data["options"])
        count = len(dates)
        options = [Option(date=day) for day in dates] if count <= limit else None
    else:
        options, count = _time_options(data, time_zone, limit)
    if options is None:
        raise TooManyOptions(
            f"options: a poll may have at most {limit} options; this one has {count} after removing duplicates"
        )
    texts = {"title": data["title"], "description": data.get("description") or "", "location": data.get("location") or ""}
    flagged = flagged_fields(texts)
    if flagged:
        raise InappropriateContent("; ".join(f"{field}: flagged by content moderation" for field in flagged))

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
        past_at=options_past_at(kind=kind, time_zone=time_zone, options=options),
        **{column: data.get(name, default) for name, (column, default, _) in SETTINGS.items()},
    )
    for option in options:
        option.poll = poll
    with transaction.atomic():
        poll.save(force_insert=True)
        Option.objects.bulk_create(options)
        record_event(space_id=space.pk, type="poll.created", poll_id=poll.pk, at=now)
    poll.participant_count = 0
    options.sort(key=lambda o: (o.date or o.start_time, o.duration or 0, o.id))
    return poll, options


@transaction.atomic
def delete_poll(*, poll: Poll) -> None:
    """Soft delete: the poll disappears from the API at once; staff still see it in the
    back office until the purge job removes it after 30 days. Nothing when it is deleted
    already. Like every change, it holds the poll before it reads the time of the change."""
    if Poll.objects.select_for_update().filter(pk=poll.pk, deleted_at__isnull=True).exists():
        now = timezone.now()
        Poll.objects.filter(pk=poll.pk).update(deleted_at=now, updated_at=now)
        record_event(space_id=poll.space_id, type="poll.deleted", poll_id=poll.pk, at=now)


def _resolve_organizer(space: Space, organizer: dict | None) -> User:
    if organizer is None:
        return space.owner
    user = (
        User.objects.annotate(email_lower=Lower("email"))
        .filter(email_lower=organizer["email"].lower(), memberships__space=space)
        .first()
    )
    if user is None:
        raise OrganizerNotMember()
    return user


def _time_options(data: dict, time_zone: str | None, limit: int) -> tuple[list[Option] | None, int]:
    """Explicit options and generated slots, in UTC, without duplicates (same start and
    same duration), and how many there are. Slots are counted as Unix seconds in sets (a
    year of quarter-hours from ten generators is about 350,000 integers: milliseconds);
    the Option objects, which cost far more, are built only when the poll is within
    `limit` (None otherwise)."""
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
    count = sum(len(instants) for instants in starts.values())
    if count > limit:
        return None, count
    return [
        Option(start_time=datetime.fromtimestamp(start, UTC), duration=duration)
        for duration, instants in starts.items()
        for start in instants
    ], count


# --- The lifecycle -------------------------------------------------------------------------
#
# Every function below runs in one transaction, locks the poll row first (so concurrent
# actions on one poll queue up), refuses a transition the lifecycle table does not allow
# with `ServiceError` (nothing changed, nothing recorded), does nothing when the target
# state already holds, and otherwise records exactly one event beside the change.

# A date option is past once its day is over everywhere; a floating time option gets the
# same grace, since its wall clock may be anywhere.
AUTO_CLOSE_GRACE = timedelta(hours=12)
PURGE_AFTER = timedelta(days=30)

Status = Poll.Status


def options_past_at(*, kind: str, time_zone: str | None, options) -> datetime | None:
    """The instant from which every option is in the past (None without options): a time
    option has ended; a date option's day plus 12 hours has ended; a floating time option
    (time poll without a time zone) gets the 12 hours too."""
    floating = kind == Poll.Kind.TIME and not time_zone
    ends = []
    for option in options:
        _, end, all_day = option_span(option.date, option.start_time, option.duration)
        ends.append(end + AUTO_CLOSE_GRACE if all_day or floating else end)
    return max(ends, default=None)


def _locked(poll: Poll) -> Poll:
    """The poll's current row, locked for this transaction; refused when deleted."""
    current = Poll.objects.select_for_update().filter(pk=poll.pk, deleted_at__isnull=True).first()
    if current is None:
        raise ServiceError(f"poll {poll.pk} does not exist or has been deleted")
    return current


def _refuse(poll: Poll, action: str, allowed: str) -> ServiceError:
    return ServiceError(f"cannot {action} poll {poll.pk}: it is {poll.status} (allowed only when {allowed})")


def _change(poll: Poll, event: str, *, extra: dict | None = None, **fields) -> Poll:
    """Save `fields` and a new `updatedAt` on the locked poll and record `event`."""
    now = timezone.now()
    for name, value in fields.items():
        setattr(poll, name, value)
    poll.updated_at = now
    poll.save(update_fields=[*fields, "updated_at"])
    record_event(space_id=poll.space_id, type=event, poll_id=poll.pk, extra=extra, at=now)
    return poll


def _move(poll: Poll, action: str, source: str, target: str, event: str, extra: dict | None = None) -> Poll:
    """`source` -> `target` for the locked poll; nothing when `target` holds already."""
    if poll.status == target:
        return poll
    if poll.status != source:
        raise _refuse(poll, action, source)
    return _change(poll, event, extra=extra, status=target)


@transaction.atomic
def close_poll(*, poll: Poll) -> Poll:
    """open -> closed (`poll.closed`, reason `manual`)."""
    return _move(_locked(poll), "close", Status.OPEN, Status.CLOSED, "poll.closed", {"reason": "manual"})


@transaction.atomic
def reopen_poll(*, poll: Poll) -> Poll:
    """closed, scheduled or canceled -> open (`poll.reopened`). Reopened after every option
    passed, it is not closed automatically again until its options change."""
    poll = _locked(poll)
    if poll.status == Status.OPEN:
        return poll
    held = poll.past_at is not None and poll.past_at <= timezone.now()
    return _change(poll, "poll.reopened", status=Status.OPEN, scheduled_option=None, auto_close_held=held)


@transaction.atomic
def schedule_poll(*, poll: Poll, option_id: str) -> Poll:
    """open or closed -> scheduled at one of its options (`poll.scheduled`, `data.event` =
    that option's span)."""
    poll = _locked(poll)
    option = Option.objects.filter(poll=poll, pk=option_id).first()
    if option is None:
        raise ServiceError(f"{option_id!r} is not an option of poll {poll.pk}")
    if poll.status == Status.SCHEDULED:
        if poll.scheduled_option_id == option.pk:
            return poll
        raise ServiceError(f"poll {poll.pk} is already scheduled at another option; reopen it to pick a different one")
    if poll.status not in (Status.OPEN, Status.CLOSED):
        raise _refuse(poll, "schedule", "open or closed")
    span = span_dict(option.date, option.start_time, option.duration)
    return _change(poll, "poll.scheduled", extra={"event": span}, status=Status.SCHEDULED, scheduled_option=option)


@transaction.atomic
def cancel_poll(*, poll: Poll) -> Poll:
    """scheduled -> canceled (`poll.canceled`): the scheduled event is called off."""
    return _move(_locked(poll), "cancel", Status.SCHEDULED, Status.CANCELED, "poll.canceled")


@transaction.atomic
def restore_poll(*, poll: Poll) -> Poll:
    """Undo a delete within the purge period (`poll.restored`, an added event type): the poll
    is back in the API as it was."""
    current = Poll.objects.select_for_update().filter(pk=poll.pk).first()
    if current is None:
        raise ServiceError(f"poll {poll.pk} does not exist (purged?)")
    if current.deleted_at is None:
        return current
    if current.deleted_at <= timezone.now() - PURGE_AFTER:
        raise ServiceError(f"poll {poll.pk} was deleted more than {PURGE_AFTER.days} days ago and is due to be purged")
    return _change(current, "poll.restored", deleted_at=None)


def _due_for_auto_close(polls, now: datetime):
    return polls.filter(status=Status.OPEN, deleted_at__isnull=True, auto_close_held=False, past_at__lte=now)


def close_past_polls() -> list[str]:
    """The auto-close sweep: close (reason `auto`) every open poll whose options are all in
    the past, each in its own transaction, re-checked under the lock. Returns their ids."""
    closed = []
    for poll_id in list(_due_for_auto_close(Poll.objects, timezone.now()).values_list("pk", flat=True)):
        with transaction.atomic():
            poll = _due_for_auto_close(Poll.objects.select_for_update(), timezone.now()).filter(pk=poll_id).first()
            if poll is not None:  # else changed meanwhile
                _change(poll, "poll.closed", extra={"reason": "auto"}, status=Status.CLOSED)
                closed.append(poll_id)
    return closed


def purge_deleted_polls() -> list[str]:
    """Remove for good the polls deleted more than 30 days ago, with their options and
    responses (no event: `poll.deleted` was recorded at the delete). One transaction per
    poll. Returns their ids."""
    cutoff = timezone.now() - PURGE_AFTER
    purged = []
    for poll_id in list(Poll.objects.filter(deleted_at__lte=cutoff).values_list("pk", flat=True)):
        with transaction.atomic():
            if Poll.objects.filter(pk=poll_id, deleted_at__lte=cutoff).delete()[0]:
                purged.append(poll_id)
    return purged


# --- Editing details, options and settings --------------------------------------------------

DETAILS = ("title", "description", "location", "conferencing")
SETTING_COLUMNS = tuple(column for column, _, _ in SETTINGS.values())
CONFERENCING_PROVIDERS = ("none", "zoom", "meet", "teams", "custom")


def clean_details(details: dict) -> dict:
    """Trimmed and checked `details` (model field names: title, description, location,
    conferencing and the five settings); `ServiceError` names every bad field."""
    problems, cleaned = [], {}
    for field, value in details.items():
        if field in SETTING_COLUMNS:
            if not isinstance(value, bool):
                problems.append(f"{field}: must be true or false")
            cleaned[field] = value
        elif field == "conferencing":
            try:
                cleaned[field] = clean_conferencing(value)
            except ServiceError as exc:
                problems.append(str(exc))
        elif field in ("title", "description", "location"):
            text = (value or "").strip()
            limit = 1000 if field == "description" else 255
            if field == "title" and not text:
                problems.append("title: required")
            elif len(text) > limit:
                problems.append(f"{field}: at most {limit} characters")
            cleaned[field] = text if field == "title" else text or None
        else:
            problems.append(f"{field}: cannot be changed")
    if problems:
        raise ServiceError("; ".join(problems))
    return cleaned


def clean_conferencing(value) -> dict:
    """`{"provider": "none"|"zoom"|"meet"|"teams"}` or
    `{"provider": "custom", "label": "<1-100 chars>", "uri": "<url, optional>"}`."""
    if not isinstance(value, dict) or value.get("provider") not in CONFERENCING_PROVIDERS:
        raise ServiceError(f"conferencing: provider must be one of {', '.join(CONFERENCING_PROVIDERS)}")
    provider = value["provider"]
    allowed = {"provider", "label", "uri"} if provider == "custom" else {"provider"}
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ServiceError(f"conferencing: {', '.join(unknown)} not allowed with provider {provider}")
    if provider != "custom":
        return {"provider": provider}
    label = value.get("label")
    if not isinstance(label, str) or not 1 <= len(label.strip()) <= 100:
        raise ServiceError("conferencing: a custom provider needs a label of 1-100 characters")
    cleaned = {"provider": "custom", "label": label.strip()}
    uri = value.get("uri")
    if uri not in (None, ""):
        try:
            URLValidator(schemes=["http", "https"])(uri)
        except (DjangoValidationError, TypeError):
            raise ServiceError("conferencing: uri must be an http(s) URL")
        cleaned["uri"] = uri
    return cleaned


def clean_options(*, kind: str, options: list[dict]) -> list[dict]:
    """The wanted options of a poll: `{"id"?: existing, "date"}` for a date poll,
    `{"id"?: existing, "start_time": aware datetime, "duration": minutes}` for a time poll.
    At least one, at most MAX_POLL_OPTIONS, no two alike. Fractions of seconds dropped."""
    limit = settings.MAX_POLL_OPTIONS
    if not options:
        raise ServiceError("options: a poll needs at least one option")
    if len(options) > limit:
        raise ServiceError(f"options: a poll may have at most {limit} options; {len(options)} given")
    cleaned, seen, problems = [], set(), []
    for index, option in enumerate(options):
        if kind == Poll.Kind.DATE:
            day = option.get("date")
            if not isinstance(day, date) or isinstance(day, datetime) or option.get("start_time") or option.get("duration"):
                problems.append(f"options[{index}]: a date poll's option is a date only")
                continue
            item, key = {"date": day}, day.isoformat()
        else:
            start, duration = option.get("start_time"), option.get("duration")
            if not isinstance(start, datetime) or timezone.is_naive(start) or option.get("date"):
                problems.append(f"options[{index}]: a time poll's option needs a start time with a time zone")
                continue
            if not isinstance(duration, int) or not MIN_DURATION <= duration <= MAX_DURATION:
                problems.append(f"options[{index}].duration: {MIN_DURATION}-{MAX_DURATION} minutes")
                continue
            start = start.astimezone(UTC).replace(microsecond=0)
            item, key = {"start_time": start, "duration": duration}, f"{instant(start)} for {duration} min"
        if key in seen:
            problems.append(f"options[{index}]: {key} is listed twice")
            continue
        seen.add(key)
        if option.get("id"):
            item["id"] = option["id"]
        cleaned.append(item)
    if problems:
        raise ServiceError("; ".join(problems))
    return cleaned


@transaction.atomic
def update_poll(*, poll: Poll, details: dict | None = None, options: list[dict] | None = None) -> Poll:
    """Change details and settings (`details`, see `clean_details`) and/or replace the
    options by `options` (see `clean_options`; entries with an `id` keep that option and its
    votes, the others are added, options left out are removed with their votes). Records
    one `poll.updated` when anything changed, nothing otherwise."""
    poll = _locked(poll)
    fields = {name: value for name, value in clean_details(details or {}).items() if getattr(poll, name) != value}
    if options is not None and _replace_options(poll, clean_options(kind=poll.kind, options=options)):
        current = list(Option.objects.filter(poll=poll))
        fields["past_at"] = options_past_at(kind=poll.kind, time_zone=poll.time_zone, options=current)
        fields["auto_close_held"] = False  # options changed: auto-close applies again
    elif not fields:
        return poll
    return _change(poll, "poll.updated", **fields)


def _replace_options(poll: Poll, wanted: list[dict]) -> bool:
    current = {option.pk: option for option in Option.objects.filter(poll=poll)}
    kept = {item["id"] for item in wanted if "id" in item}
    unknown = sorted(kept - set(current))
    if unknown:
        raise ServiceError(f"options: {', '.join(unknown)} not an option of poll {poll.pk}")
    removed = set(current) - kept
    if poll.status == Status.SCHEDULED and poll.scheduled_option_id in removed:
        raise ServiceError("options: the option the poll is scheduled at cannot be removed; reopen the poll first")
    changed = bool(removed)
    Option.objects.filter(pk__in=removed).delete()
    for item in wanted:
        values = {name: item.get(name) for name in ("date", "start_time", "duration")}
        if "id" not in item:
            Option.objects.create(poll=poll, **values)
            changed = True
            continue
        option = current[item["id"]]
        if any(getattr(option, name) != value for name, value in values.items()):
            Option.objects.filter(pk=option.pk).update(**values)
            changed = True
    return changed


# --- Responses --------------------------------------------------------------------------------

VOTE_TYPES = (Vote.YES, Vote.IF_NEED_BE, Vote.NO)


def clean_response(*, poll: Poll, name: str, email: str | None, votes: dict, current: dict | None = None) -> tuple:
    """(name, email, votes) checked against the poll: a name of 1-255 characters; an e-mail
    address (required when the poll requires one); votes `option id -> yes|ifNeedBe|no`
    (or None: no answer) on options of this poll, `ifNeedBe` only when tentative votes are
    allowed. A vote left as it is in `current` is not judged again (older data may hold
    other types). `ServiceError` names every problem."""
    current = current or {}
    problems = []
    name = (name or "").strip()
    if not name or len(name) > 255:
        problems.append("name: 1-255 characters required")
    email = (email or "").strip() or None
    if email is None and poll.require_email:
        problems.append("email: this poll requires an e-mail address")
    elif email is not None:
        try:
            validate_email(email)
            if len(email) > 254:
                raise DjangoValidationError("too long")
        except DjangoValidationError:
            problems.append(f"email: not a valid e-mail address: {email!r}")
    option_ids = set(Option.objects.filter(poll=poll).values_list("pk", flat=True))
    for option_id, kind in votes.items():
        if option_id not in option_ids:
            problems.append(f"votes: {option_id!r} is not an option of poll {poll.pk}")
        elif kind is None or current.get(option_id) == kind:
            continue
        elif kind not in VOTE_TYPES:
            problems.append(f"votes: {kind!r} (option {option_id}) is not a vote (use yes, ifNeedBe or no)")
        elif kind == Vote.IF_NEED_BE and not poll.allow_tentative_votes:
            problems.append(f"votes: ifNeedBe (option {option_id}) is not allowed: the poll does not allow tentative votes")
    if problems:
        raise ServiceError("; ".join(problems))
    return name, email, votes


def check_accepts_responses(poll: Poll) -> None:
    """Only an open poll accepts new responses."""
    if poll.status != Status.OPEN:
        raise ServiceError(f"poll {poll.pk} is {poll.status}: only an open poll accepts new responses")


def _touch(poll: Poll, now: datetime) -> None:
    """A response changed: the poll's `updatedAt` follows."""
    Poll.objects.filter(pk=poll.pk).update(updated_at=now)
    poll.updated_at = now


@transaction.atomic
def create_response(*, poll: Poll, name: str, email: str | None = None, votes: dict | None = None) -> Participant:
    """A new participant with their votes (`poll.participant.created`); only an open poll
    accepts new responses."""
    poll = _locked(poll)
    check_accepts_responses(poll)
    name, email, votes = clean_response(poll=poll, name=name, email=email, votes=votes or {})
    now = timezone.now()
    participant = Participant.objects.create(poll=poll, name=name, email=email, created_at=now, updated_at=now)
    Vote.objects.bulk_create(
        Vote(participant=participant, option_id=option_id, type=kind) for option_id, kind in votes.items() if kind
    )
    _touch(poll, now)
    record_event(space_id=poll.space_id, type="poll.participant.created", poll_id=poll.pk,
                 participant_id=participant.pk, at=now)
    return participant


def _locked_participant(participant: Participant) -> tuple[Poll, Participant]:
    poll = _locked(participant.poll)
    current = Participant.objects.filter(pk=participant.pk, poll=poll).first()
    if current is None:
        raise ServiceError(f"participant {participant.pk} does not exist")
    return poll, current


@transaction.atomic
def update_response(
    *, participant: Participant, name: str | None = None, email: str | None = None, votes: dict | None = None
) -> Participant:
    """Change a participant's name, e-mail (`""` removes it) and/or votes (`option id ->
    type`, None removes that answer; options not named keep theirs), in any poll state.
    Records `poll.participant.updated` when anything changed, nothing otherwise."""
    poll, participant = _locked_participant(participant)
    current = dict(Vote.objects.filter(participant=participant).values_list("option_id", "type"))
    name, email, votes = clean_response(
        poll=poll,
        name=participant.name if name is None else name,
        email=participant.email if email is None else email,
        votes=votes or {},
        current=current,
    )
    changed_votes = {option_id: kind for option_id, kind in votes.items() if current.get(option_id) != kind}
    if name == participant.name and email == participant.email and not changed_votes:
        return participant
    now = timezone.now()
    Vote.objects.filter(participant=participant, option_id__in=changed_votes).delete()
    Vote.objects.bulk_create(
        Vote(participant=participant, option_id=option_id, type=kind) for option_id, kind in changed_votes.items() if kind
    )
    participant.name, participant.email, participant.updated_at = name, email, now
    participant.save(update_fields=["name", "email", "updated_at"])
    _touch(poll, now)
    record_event(space_id=poll.space_id, type="poll.participant.updated", poll_id=poll.pk,
                 participant_id=participant.pk, at=now)
    return participant


@transaction.atomic
def delete_response(*, participant: Participant) -> None:
    """Remove a response and its votes (`poll.participant.deleted`)."""
    poll, participant = _locked_participant(participant)
    now = timezone.now()
    participant_id = participant.pk
    participant.delete()
    _touch(poll, now)
    record_event(space_id=poll.space_id, type="poll.participant.deleted", poll_id=poll.pk,
                 participant_id=participant_id, at=now)
