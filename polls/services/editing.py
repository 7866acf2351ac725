"""Editing an existing poll: its details and settings, and its options (kept, changed,
added, removed). The `clean_*` functions are also what the back office's forms validate
with, so a refusal shows there before anything is saved."""

from datetime import UTC, date, datetime

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from core.errors import ServiceError
from core.formats import instant, text_problem
from polls.models import Option, Poll, shown_options
from polls.rules import (
    CONFERENCING_PROVIDERS,
    DESCRIPTION_MAX_LENGTH,
    LOCATION_MAX_LENGTH,
    MAX_DURATION,
    MIN_DURATION,
    SETTING_COLUMNS,
    TITLE_MAX_LENGTH,
)
from polls.services.lifecycle import locked_poll, options_past_at, record_change

DETAILS = ("title", "description", "location", "conferencing")
TEXT_LIMITS = {"title": TITLE_MAX_LENGTH, "description": DESCRIPTION_MAX_LENGTH, "location": LOCATION_MAX_LENGTH}


def clean_details(details: dict) -> dict:
    """Trimmed and checked `details` (model field names: title, description, location,
    conferencing, the five settings and `closes_at`, the organizer's deadline: a future
    instant or None); `ServiceError` names every bad field."""
    problems, cleaned = [], {}
    for field, value in details.items():
        if field in SETTING_COLUMNS:
            if not isinstance(value, bool):
                problems.append(f"{field}: must be true or false")
            cleaned[field] = value
        elif field == "closes_at":
            if value is None:
                cleaned[field] = None
            elif not isinstance(value, datetime) or timezone.is_naive(value):
                problems.append("closes_at: a date and time with a time zone, or none")
            elif value <= timezone.now():
                problems.append("closes_at: the deadline must be in the future")
            else:
                cleaned[field] = value.astimezone(UTC).replace(microsecond=0)
        elif field == "conferencing":
            try:
                cleaned[field] = clean_conferencing(value)
            except ServiceError as exc:
                problems.append(str(exc))
        elif field in ("title", "description", "location"):
            text = (value or "").strip()
            limit = TEXT_LIMITS[field]
            problem = text_problem(text, multiline=field == "description")
            if field == "title" and not text:
                problems.append("title: required")
            elif len(text) > limit:
                problems.append(f"{field}: at most {limit} characters")
            elif problem:
                problems.append(f"{field}: {problem}")
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
    if text_problem(label):
        raise ServiceError(f"conferencing: the label {text_problem(label)}")
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
    poll = locked_poll(poll)
    fields = {name: value for name, value in clean_details(details or {}).items() if getattr(poll, name) != value}
    replaced = _replace_options(poll, clean_options(kind=poll.kind, options=options)) if options is not None else None
    if replaced is not None:
        fields["past_at"] = options_past_at(kind=poll.kind, time_zone=poll.time_zone, options=replaced)
        fields["auto_close_held"] = False  # options changed: auto-close applies again
        fields["options_changed_at"] = timezone.now()  # participants who answered before are told
        fields["shown_options"] = shown_options(poll.kind, replaced)
    elif not fields:
        return poll
    return record_change(poll, "poll.updated", **fields)


OPTION_FIELDS = ("date", "start_time", "duration")


def _replace_options(poll: Poll, wanted: list[dict]) -> list[Option] | None:
    """Make the poll's options `wanted` (cleaned): at most one query each to delete, add and
    change. Returns the options now, or None when nothing changed."""
    current = {option.pk: option for option in Option.objects.filter(poll=poll)}
    kept = {item["id"] for item in wanted if "id" in item}
    unknown = sorted(kept - set(current))
    if unknown:
        raise ServiceError(f"options: {', '.join(unknown)} not an option of poll {poll.pk}")
    removed = set(current) - kept
    if poll.status == Poll.Status.SCHEDULED and poll.scheduled_option_id in removed:
        raise ServiceError("options: the option the poll is scheduled at cannot be removed; reopen the poll first")
    options, added, changed = [], [], []
    for item in wanted:
        values = {name: item.get(name) for name in OPTION_FIELDS}
        if "id" not in item:
            option = Option(poll=poll, **values)
            added.append(option)
        else:
            option = current[item["id"]]
            if any(getattr(option, name) != value for name, value in values.items()):
                for name, value in values.items():
                    setattr(option, name, value)
                changed.append(option)
        options.append(option)
    if not (removed or added or changed):
        return None
    if removed:
        Option.objects.filter(pk__in=removed).delete()
    Option.objects.bulk_create(added)
    Option.objects.bulk_update(changed, OPTION_FIELDS)
    return options
