"""Building polls and responses for tests through the same service functions the API, the
back office and `manage.py` use."""

from datetime import date

from polls import services
from polls.models import Poll, Vote
from polls.serializers import create_poll_arguments, validated_poll_input


def make_poll(space, body: dict | None = None, **fields) -> Poll:
    """A poll created as `POST /v1/polls` would create it (default: a date poll with three
    dates); `fields` are then written to the row directly (e.g. status for a test setup)."""
    body = body or {"title": "Team dinner", "kind": "date",
                    "options": [{"date": "2030-01-01"}, {"date": "2030-01-02"}, {"date": "2030-01-03"}]}
    poll, _ = services.create_poll(space=space, **create_poll_arguments(validated_poll_input(body)))
    if fields:
        Poll.objects.filter(pk=poll.pk).update(**fields)
    return Poll.objects.get(pk=poll.pk)


def time_poll_body(*starts: str, duration: int = 60, time_zone: str | None = "Europe/Berlin", **extra) -> dict:
    body = {"title": "Call", "kind": "time", "duration": duration, "options": [{"startTime": s} for s in starts], **extra}
    if time_zone:
        body["timeZone"] = time_zone
    return body


def date_poll_body(*days: str, **extra) -> dict:
    return {"title": "Dinner", "kind": "date", "options": [{"date": d} for d in days], **extra}


def option_ids(poll: Poll) -> list[str]:
    """The poll's option ids in display order."""
    return list(poll.options.order_by("date", "start_time", "duration", "id").values_list("pk", flat=True))


def respond(poll: Poll, *votes: str | None, name: str = "Ann", email: str | None = None):
    """A response voting `votes[i]` on the i-th option (None: no answer)."""
    ids = option_ids(poll)
    return services.create_response(
        poll=poll, name=name, email=email, votes={ids[i]: kind for i, kind in enumerate(votes) if kind is not None}
    )


def today_plus(days: int) -> str:
    return date.fromordinal(date.today().toordinal() + days).isoformat()


def stored_vote(participant, option_id: str, kind: str) -> Vote:
    """A vote as older data holds it (any type), written behind the services' back, with the
    poll's tallies rebuilt as the migration that introduced them did."""
    vote = Vote.objects.create(participant=participant, option_id=option_id, type=kind)
    services.recount_tallies(poll=participant.poll)
    return vote
