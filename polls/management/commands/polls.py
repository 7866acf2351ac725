"""`manage.py polls ...`: the poll lifecycle and responses for operators. Every action calls
the same service function as the back office, so it records the same event."""

from django.core.management.base import CommandError

from core.commands import GroupCommand, optional_instant
from core.formats import instant
from polls import selectors, services
from polls.models import Participant, Poll
from polls.rules import PURGE_AFTER


def poll_summary(poll: Poll) -> dict:
    return {
        "id": poll.id,
        "spaceId": poll.space_id,
        "title": poll.title,
        "status": poll.status,
        "scheduledOptionId": poll.scheduled_option_id,
        "updatedAt": instant(poll.updated_at),
        "deletedAt": optional_instant(poll.deleted_at),
    }


def participant_summary(participant: Participant) -> dict:
    return {
        "id": participant.id,
        "pollId": participant.poll_id,
        "name": participant.name,
        "email": participant.email,
        "createdAt": instant(participant.created_at),
        "updatedAt": instant(participant.updated_at),
        "votes": selectors.participant_votes(participant),
    }


def poll_or_error(poll_id: str, *, include_deleted: bool = False) -> Poll:
    poll = selectors.find_poll(poll_id, include_deleted=include_deleted)
    if poll is None:
        raise CommandError(f"no poll with id {poll_id!r}")
    return poll


def participant_or_error(participant_id: str) -> Participant:
    participant = selectors.find_participant(participant_id)
    if participant is None:
        raise CommandError(f"no participant with id {participant_id!r}")
    return participant


def parse_votes(values: list[str] | None) -> dict[str, str]:
    """`OPTION_ID=TYPE` arguments as {option id: type}; the service judges ids and types."""
    votes = {}
    for value in values or ():
        option_id, sep, kind = value.partition("=")
        if not sep or not option_id or not kind:
            raise CommandError(f"--vote: expected OPTION_ID=yes|ifNeedBe|no, got {value!r}")
        if option_id in votes:
            raise CommandError(f"--vote: option {option_id} given more than once")
        votes[option_id] = kind
    return votes


def _vote_argument(parser, required: bool) -> None:
    parser.add_argument(
        "--vote", action="append", required=required, metavar="OPTION_ID=TYPE",
        help="an answer: yes, ifNeedBe or no (repeat for several options)",
    )


class Command(GroupCommand):
    help = "Close, reopen, schedule, cancel and delete polls; add, change and remove responses; run the periodic jobs."
    actions = {
        "close": "Close an open poll (event poll.closed, reason manual).",
        "reopen": "Reopen a closed, scheduled or canceled poll (event poll.reopened).",
        "schedule": "Schedule an open or closed poll at one of its options (event poll.scheduled).",
        "cancel": "Cancel the event of a scheduled poll (event poll.canceled).",
        "delete": f"Delete a poll: gone from the API at once, purged after {PURGE_AFTER.days} days (event poll.deleted).",
        "respond": "Add a response to an open poll; prints the participant id (event poll.participant.created).",
        "update-response": "Change a response's name, e-mail or votes (event poll.participant.updated).",
        "remove-response": "Remove a response (event poll.participant.deleted).",
        "close-past": "Close every open poll whose options are all in the past (reason auto); runs periodically.",
        "recount": "Rebuild the tallies (votes per option and type), the participants' answers, the participant "
                   "count and the options as shown of a poll, or of every poll, from the votes, participants and options; "
                   "prints how many were wrong.",
        "purge-deleted": f"Remove for good the polls deleted more than {PURGE_AFTER.days} days ago; runs periodically.",
    }

    # Status changes ----------------------------------------------------------------------

    def _status_change(self, poll_id: str, service, verb: str):
        poll = poll_or_error(poll_id)
        before = poll.status
        poll = service(poll=poll)
        data = poll_summary(poll)
        if poll.status == before:
            return data, f"Poll {poll.id} was already {poll.status}; nothing changed."
        return data, f"Poll {poll.id} {verb}: {before} -> {poll.status}."

    def arguments_close(self, parser):
        parser.add_argument("poll_id", metavar="POLL_ID")

    def do_close(self, *, poll_id, **_):
        return self._status_change(poll_id, services.close_poll, "closed")

    arguments_reopen = arguments_cancel = arguments_delete = arguments_close

    def do_reopen(self, *, poll_id, **_):
        return self._status_change(poll_id, services.reopen_poll, "reopened")

    def do_cancel(self, *, poll_id, **_):
        return self._status_change(poll_id, services.cancel_poll, "canceled")

    def arguments_schedule(self, parser):
        parser.add_argument("poll_id", metavar="POLL_ID")
        parser.add_argument("--option", required=True, metavar="OPTION_ID", help="the option to schedule the poll at")

    def do_schedule(self, *, poll_id, option, **_):
        return self._status_change(poll_id, lambda poll: services.schedule_poll(poll=poll, option_id=option), "scheduled")

    def do_delete(self, *, poll_id, **_):
        poll = poll_or_error(poll_id, include_deleted=True)
        if poll.deleted_at is not None:
            return poll_summary(poll), f"Poll {poll.id} was already deleted at {instant(poll.deleted_at)}; nothing changed."
        services.delete_poll(poll=poll)
        poll.refresh_from_db()
        return poll_summary(poll), f"Poll {poll.id} deleted; it will be purged after {PURGE_AFTER.days} days."

    # Responses ---------------------------------------------------------------------------

    def arguments_respond(self, parser):
        parser.add_argument("poll_id", metavar="POLL_ID")
        parser.add_argument("--name", required=True)
        parser.add_argument("--email")
        _vote_argument(parser, required=True)

    def do_respond(self, *, poll_id, name, email, vote, **_):
        votes = parse_votes(vote)
        participant = services.create_response(poll=poll_or_error(poll_id), name=name, email=email, votes=votes)
        return participant_summary(participant), participant.id

    def arguments_update_response(self, parser):
        parser.add_argument("participant_id", metavar="PARTICIPANT_ID")
        parser.add_argument("--name")
        parser.add_argument("--email", help='the new address; "" removes it')
        _vote_argument(parser, required=False)

    def do_update_response(self, *, participant_id, name, email, vote, **_):
        votes = parse_votes(vote)
        participant = participant_or_error(participant_id)
        before = participant.updated_at
        participant = services.update_response(participant=participant, name=name, email=email, votes=votes)
        participant = participant_or_error(participant.id)  # with its votes as stored now
        if participant.updated_at == before:
            return participant_summary(participant), f"Participant {participant.id}: nothing to change."
        return participant_summary(participant), f"Participant {participant.id} updated."

    def arguments_remove_response(self, parser):
        parser.add_argument("participant_id", metavar="PARTICIPANT_ID")

    def do_remove_response(self, *, participant_id, **_):
        participant = participant_or_error(participant_id)
        data = participant_summary(participant)
        services.delete_response(participant=participant)
        return {**data, "deleted": True}, f"Participant {participant_id} removed from poll {data['pollId']}."

    # Tallies -----------------------------------------------------------------------------

    def arguments_recount(self, parser):
        parser.add_argument("poll_id", metavar="POLL_ID", nargs="?", help="one poll (deleted ones too); default: every poll")

    def do_recount(self, *, poll_id=None, **_):
        poll = poll_or_error(poll_id, include_deleted=True) if poll_id else None
        repaired = services.recount_tallies(poll=poll)
        where = f"poll {poll_id}" if poll_id else "every poll"
        return {"pollId": poll_id, "repaired": repaired}, (
            f"Tallies, answers, participant count and options shown of {where}: {repaired} repaired." if repaired
            else f"Tallies, answers, participant count and options shown of {where} agree with the rows they count."
        )

    # Periodic jobs -----------------------------------------------------------------------

    def do_close_past(self, **_):
        closed = services.close_past_polls()
        return {"closed": closed}, f"Closed {len(closed)} poll(s) automatically" + (f": {', '.join(closed)}" if closed else ".")

    def do_purge_deleted(self, **_):
        purged = services.purge_deleted_polls()
        return {"purged": purged}, f"Purged {len(purged)} deleted poll(s)" + (f": {', '.join(purged)}" if purged else ".")
