"""Responses: a participant's name, e-mail and votes, added, changed and removed."""

from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.errors import ServiceError
from core.formats import parse_email, text_problem
from polls.answers import answers_text
from polls.models import Activity, Participant, Poll, Vote
from polls.rules import max_length
from polls.services.lifecycle import locked_poll
from polls.services.notices import note_activity
from polls.services.tallies import count_votes, option_places
from webhooks.services import record_event

NAME_MAX_LENGTH = max_length(Participant, "name")

VOTE_TYPES = (Vote.YES, Vote.IF_NEED_BE, Vote.NO)


def clean_response(*, poll: Poll, name: str, email: str | None, votes: dict, current: dict | None = None) -> tuple:
    """(name, email, votes) checked against the poll: a name of 1-NAME_MAX_LENGTH characters; an e-mail
    address (required when the poll requires one); votes `option id -> yes|ifNeedBe|no`
    (or None: no answer) on options of this poll, `ifNeedBe` only when tentative votes are
    allowed. A vote left as it is in `current` is not judged again (older data may hold
    other types). `ServiceError` names every problem."""
    return _checked_response(poll=poll, name=name, email=email, votes=votes, current=current)[:3]


def _checked_response(*, poll: Poll, name: str, email: str | None, votes: dict, current: dict | None = None) -> tuple:
    """`clean_response`'s (name, email, votes), and the poll's `option_places`."""
    current = current or {}
    problems = []
    name = (name or "").strip()
    if not name or len(name) > NAME_MAX_LENGTH:
        problems.append(f"name: 1-{NAME_MAX_LENGTH} characters required")
    elif text_problem(name):
        problems.append(f"name: {text_problem(name)}")
    email = (email or "").strip() or None
    if email is None and poll.require_email:
        problems.append("email: this poll requires an e-mail address")
    elif email is not None:
        try:
            parse_email(email)
        except ValueError:
            problems.append(f"email: not a valid e-mail address: {email!r}")
    positions = option_places(poll)
    for option_id, kind in votes.items():
        if option_id not in positions:
            problems.append(f"votes: {option_id!r} is not an option of poll {poll.pk}")
        elif kind is None or current.get(option_id) == kind:
            continue
        elif kind not in VOTE_TYPES:
            problems.append(f"votes: {kind!r} (option {option_id}) is not a vote (use yes, ifNeedBe or no)")
        elif kind == Vote.IF_NEED_BE and not poll.allow_tentative_votes:
            problems.append(f"votes: ifNeedBe (option {option_id}) is not allowed: the poll does not allow tentative votes")
    if problems:
        raise ServiceError("; ".join(problems))
    return name, email, votes, positions


def check_accepts_responses(poll: Poll) -> None:
    """Only an open poll accepts new responses."""
    if poll.status != Poll.Status.OPEN:
        raise ServiceError(f"poll {poll.pk} is {poll.status}: only an open poll accepts new responses")


def _touch(poll: Poll, now: datetime, participants: int = 0) -> None:
    """A response changed: the poll's `updatedAt` follows, and its participant count by
    `participants` (added, or taken away when negative)."""
    changes = {"updated_at": now}
    if participants:
        changes["participant_count"] = F("participant_count") + participants
    Poll.objects.filter(pk=poll.pk).update(**changes)
    poll.updated_at = now
    if participants:
        poll.participant_count += participants


@transaction.atomic
def create_response(*, poll: Poll, name: str, email: str | None = None, votes: dict | None = None) -> Participant:
    """A new participant with their votes (`poll.participant.created`); only an open poll
    accepts new responses."""
    poll = locked_poll(poll)
    check_accepts_responses(poll)
    name, email, votes, positions = _checked_response(poll=poll, name=name, email=email, votes=votes or {})
    now = timezone.now()
    answered = [(option_id, kind) for option_id, kind in votes.items() if kind]
    participant = Participant.objects.create(poll=poll, name=name, email=email, created_at=now, updated_at=now,
                                             answers=answers_text(answered, positions))
    Vote.objects.bulk_create(Vote(participant=participant, option_id=option_id, type=kind) for option_id, kind in answered)
    count_votes(poll, added=answered)
    _touch(poll, now, participants=1)
    record_event(space_id=poll.space_id, type="poll.participant.created", poll_id=poll.pk,
                 participant_id=participant.pk, at=now)
    note_activity(poll, Activity.Kind.ANSWERED, name, now)
    return participant


def _locked_participant(participant: Participant) -> tuple[Poll, Participant]:
    poll = locked_poll(participant.poll)
    current = Participant.objects.filter(pk=participant.pk, poll=poll).first()
    if current is None:
        raise ServiceError(f"participant {participant.pk} does not exist")
    return poll, current


@transaction.atomic
def update_response(
    *, participant: Participant, name: str | None = None, email: str | None = None, votes: dict | None = None,
    open_only: bool = False,
) -> Participant:
    """Change a participant's name, e-mail (`""` removes it) and/or votes (`option id ->
    type`, None removes that answer; options not named keep theirs), in any poll state
    (only while the poll is open with `open_only`, as participants themselves may).
    Records `poll.participant.updated` when anything changed, nothing otherwise."""
    poll, participant = _locked_participant(participant)
    if open_only:
        check_accepts_responses(poll)
    current = dict(Vote.objects.filter(participant=participant).values_list("option_id", "type"))
    name, email, votes, positions = _checked_response(
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
    answered = [(option_id, kind) for option_id, kind in changed_votes.items() if kind]
    Vote.objects.bulk_create(Vote(participant=participant, option_id=option_id, type=kind) for option_id, kind in answered)
    count_votes(poll, added=answered,
                removed=[(option_id, current[option_id]) for option_id in changed_votes if option_id in current])
    participant.name, participant.email, participant.updated_at = name, email, now
    participant.answers = answers_text({**current, **changed_votes}.items(), positions)
    participant.save(update_fields=["name", "email", "updated_at", "answers"])
    _touch(poll, now)
    record_event(space_id=poll.space_id, type="poll.participant.updated", poll_id=poll.pk,
                 participant_id=participant.pk, at=now)
    note_activity(poll, Activity.Kind.CHANGED, name, now)
    return participant


@transaction.atomic
def delete_response(*, participant: Participant, open_only: bool = False) -> None:
    """Remove a response and its votes (`poll.participant.deleted`); only while the poll is
    open with `open_only`."""
    poll, participant = _locked_participant(participant)
    if open_only:
        check_accepts_responses(poll)
    now = timezone.now()
    participant_id = participant.pk
    count_votes(poll, removed=list(Vote.objects.filter(participant=participant).values_list("option_id", "type")))
    participant.delete()
    _touch(poll, now, participants=-1)
    record_event(space_id=poll.space_id, type="poll.participant.deleted", poll_id=poll.pk,
                 participant_id=participant_id, at=now)
