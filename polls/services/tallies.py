"""What the votes sum up to, kept in the same transaction as the votes: the tallies (votes
per option and type, for results), each participant's answers (`Participant.answers`,
for the participant list) and each poll's participant count (`Poll.participant_count`,
for every poll read).

The consistency rule: every service that adds, changes or removes votes calls `count_votes`
with the difference and stores the participant's `answers_text` (polls.answers), inside its
transaction and after `locked_poll` (one writer per poll at a time); adding or removing a
participant moves the poll's count by one in the same transaction (`responses._touch`);
removing an option or a poll removes its tallies with its votes (CASCADE). Answers name
options by id, so changing options rewrites none. Votes or participants written any other
way (a bulk load, a hand-made fix) leave tallies, answers and counts wrong until
`recount_tallies` (`manage.py polls recount`) rebuilds them."""

from collections import Counter

from django.db import connection, transaction
from django.db.models import Count

from polls.answers import ANSWER_MARKS, answers_text
from polls.models import Option, Participant, Poll, Tally, Vote, shown_options


def option_places(poll: Poll) -> dict[str, int]:
    """Each option of the poll (by id) -> its place in display order, from 0 (one query)."""
    return {option_id: n for n, option_id in enumerate(Option.objects.filter(poll=poll).values_list("pk", flat=True))}


def count_votes(poll: Poll, added: list[tuple[str, str]] = (), removed: list[tuple[str, str]] = ()) -> None:
    """Add the `(option id, type)` votes `added` and take away those `removed`: one
    statement, whatever the number of options."""
    deltas = Counter(added)
    deltas.subtract(Counter(removed))
    rows = [(option_id, kind, n) for (option_id, kind), n in deltas.items() if n]
    if not rows:
        return
    # An upsert adding to the stored count (`count = count + excluded.count`): the ORM's
    # bulk_create can only replace it.
    q = connection.ops.quote_name
    table = q(Tally._meta.db_table)
    poll_id, option_id, kind, count = (q(Tally._meta.get_field(name).column) for name in ("poll", "option", "type", "count"))
    values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
    params = [value for option, vote_type, n in rows for value in (poll.pk, option, vote_type, n)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({poll_id}, {option_id}, {kind}, {count}) VALUES {values} "
            f"ON CONFLICT ({option_id}, {kind}) DO UPDATE SET {count} = {table}.{count} + excluded.{count}",
            params,
        )


def recount_tallies(*, poll: Poll | None = None) -> int:
    """Rebuild the tallies, the participants' answers, the participant count and the options
    as shown of `poll` (or of every poll, deleted ones included) from the votes, participants
    and options, one poll at a time under its lock; returns how many of them were wrong or
    missing (0: they agreed)."""
    polls = [poll.pk] if poll is not None else Poll.objects.order_by("pk").values_list("pk", flat=True).iterator()
    return sum(_recount(poll_id) for poll_id in polls)


@transaction.atomic
def _recount(poll_id: str) -> int:
    stored = Poll.objects.select_for_update().filter(pk=poll_id).values_list("participant_count", "kind", "shown_options").first()
    if stored is None:
        return 0
    stored_participants, kind, stored_shown = stored
    participants = Participant.objects.filter(poll_id=poll_id).count()
    if participants != stored_participants:
        Poll.objects.filter(pk=poll_id).update(participant_count=participants)
    shown = shown_options(kind, Option.objects.filter(poll_id=poll_id))
    if shown != stored_shown:
        Poll.objects.filter(pk=poll_id).update(shown_options=shown)
    counted = dict(
        ((option_id, kind), n) for option_id, kind, n in
        Vote.objects.filter(option__poll_id=poll_id).order_by().values_list("option_id", "type").annotate(n=Count("*"))
    )
    tallies = Tally.objects.filter(poll_id=poll_id)
    stored = {(option_id, kind): n for option_id, kind, n in tallies.filter(count__gt=0).values_list("option_id", "type", "count")}
    wrong = sum(1 for key in counted.keys() | stored.keys() if counted.get(key) != stored.get(key))
    if wrong:
        tallies.delete()
        Tally.objects.bulk_create(
            [Tally(poll_id=poll_id, option_id=option_id, type=kind, count=n) for (option_id, kind), n in counted.items()],
            batch_size=1000,
        )
    return wrong + (participants != stored_participants) + (shown != stored_shown) + _recount_answers(poll_id)


def _recount_answers(poll_id: str) -> int:
    """The participants of the poll whose answers disagree with their votes, rebuilt, a
    thousand at a time; how many there were."""
    places = {option_id: n for n, option_id in enumerate(Option.objects.filter(poll_id=poll_id).values_list("pk", flat=True))}
    participants = list(Participant.objects.filter(poll_id=poll_id).order_by().values_list("pk", "answers"))
    wrong = 0
    for start in range(0, len(participants), 1000):
        chunk = dict(participants[start:start + 1000])
        votes: dict[str, list] = {participant_id: [] for participant_id in chunk}
        for participant_id, option_id, kind in (Vote.objects.filter(participant_id__in=chunk, type__in=ANSWER_MARKS)
                                                .order_by().values_list("participant_id", "option_id", "type")):
            votes[participant_id].append((option_id, kind))
        fixed = []
        for participant_id, stored in chunk.items():
            counted = answers_text(votes[participant_id], places)
            # Tokens of an option removed since name nothing: not wrong (polls.answers).
            if sorted(token for token in stored.split(",") if token.rstrip("+") in places) != sorted(filter(None, counted.split(","))):
                fixed.append(Participant(id=participant_id, answers=counted))
        Participant.objects.bulk_update(fixed, ["answers"])
        wrong += len(fixed)
    return wrong
