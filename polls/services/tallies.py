"""What the votes sum up to, kept in the same transaction as the votes: the tallies (votes
per option and type, for results), each participant's answers (`Participant.answers`,
for the participant list) and each poll's participant count (`Poll.participant_count`,
for every poll read).

The consistency rule: every service that adds, changes or removes votes calls `count_votes`
with the difference and stores the participant's `answers_text`, inside its transaction
and after `locked_poll` (one writer per poll at a time); adding or removing a participant
moves the poll's count by one in the same transaction (`responses._touch`); removing
options calls `drop_answers` before they go; removing an option or a poll removes its
tallies with its votes (CASCADE). Votes or participants written any other way (a bulk
load, a hand-made fix) leave tallies, answers and counts wrong until `recount_tallies`
(`manage.py polls recount`) rebuilds them."""

from collections import Counter

from django.db import connection, transaction
from django.db.models import Count

from core import versions
from core.statements import statement_cursor
from polls.models import Participant, Poll, Tally, Vote
from polls.queries import ANSWER_MARKS


def answers_text(votes) -> str:
    """`Participant.answers` for these `(option id, type)` votes (types without a mark in
    ANSWER_MARKS left out)."""
    return ",".join(option_id + ANSWER_MARKS[kind] for option_id, kind in votes if kind in ANSWER_MARKS)


def _answers_sql(participant: str, extra: str = "") -> str:
    """The SQL expression of `answers_text` for the participant whose id is `participant`,
    from its votes (and the condition `extra` on them, alias `v`); its parameters are
    `_ANSWERS_PARAMS` (then those of `extra`)."""
    votes = connection.ops.quote_name(Vote._meta.db_table)
    cases = " ".join(["WHEN %s THEN %s"] * len(ANSWER_MARKS))
    code = f"v.option_id || CASE v.type {cases} END"
    aggregate = f"string_agg({code}, ',')" if connection.vendor == "postgresql" else f"group_concat({code}, ',')"
    kinds = ", ".join(["%s"] * len(ANSWER_MARKS))
    return (f"COALESCE((SELECT {aggregate} FROM {votes} v "
            f"WHERE v.participant_id = {participant} AND v.type IN ({kinds}){extra}), '')")


_ANSWERS_PARAMS = [value for pair in ANSWER_MARKS.items() for value in pair] + list(ANSWER_MARKS)


def drop_answers(poll: Poll, option_ids: list[str]) -> None:
    """Options of `poll` are about to be removed with their votes: the participants who
    answered them keep their other answers (one statement, only their rows)."""
    table = connection.ops.quote_name(Participant._meta.db_table)
    votes = connection.ops.quote_name(Vote._meta.db_table)
    marks, kinds = ", ".join(["%s"] * len(option_ids)), ", ".join(["%s"] * len(ANSWER_MARKS))
    with statement_cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET answers = {_answers_sql(f'{table}.id', f' AND v.option_id NOT IN ({marks})')} "
            f"WHERE poll_id = %s AND id IN "
            f"(SELECT participant_id FROM {votes} WHERE option_id IN ({marks}) AND type IN ({kinds}))",
            [*_ANSWERS_PARAMS, *option_ids, poll.pk, *option_ids, *ANSWER_MARKS],
        )


def count_votes(poll: Poll, added: list[tuple[str, str]] = (), removed: list[tuple[str, str]] = ()) -> None:
    """Add the `(option id, type)` votes `added` and take away those `removed`: one
    statement, whatever the number of options."""
    deltas = Counter(added)
    deltas.subtract(Counter(removed))
    rows = [(option_id, kind, n) for (option_id, kind), n in deltas.items() if n]
    if not rows:
        return
    q = connection.ops.quote_name
    table = q(Tally._meta.db_table)
    values = ", ".join(["(%s, %s, %s, %s)"] * len(rows))
    params = [value for option_id, kind, n in rows for value in (poll.pk, option_id, kind, n)]
    with statement_cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (poll_id, option_id, type, count) VALUES {values} "
            f"ON CONFLICT (option_id, type) DO UPDATE SET count = {table}.count + excluded.count",
            params,
        )


def recount_tallies(*, poll: Poll | None = None) -> int:
    """Rebuild the tallies, the participants' answers and the participant count of `poll`
    (or of every poll, deleted ones included) from the votes and participants, one poll at a
    time under its lock; returns how many tallies, participants' answers and counts were
    wrong or missing (0: they agreed)."""
    polls = [poll.pk] if poll is not None else Poll.objects.order_by("pk").values_list("pk", flat=True).iterator()
    return sum(_recount(poll_id) for poll_id in polls)


@transaction.atomic
def _recount(poll_id: str) -> int:
    stored_participants = Poll.objects.select_for_update().filter(pk=poll_id).values_list("participant_count", flat=True).first()
    if stored_participants is None:
        return 0
    participants = Participant.objects.filter(poll_id=poll_id).count()
    if participants != stored_participants:
        Poll.objects.filter(pk=poll_id).update(participant_count=participants)
        versions.bump(versions.poll(poll_id))
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
    return wrong + (participants != stored_participants) + _recount_answers(poll_id)


def _recount_answers(poll_id: str) -> int:
    """The participants of the poll whose answers disagree with their votes, rebuilt (one
    statement per thousand of them); how many there were."""
    table = connection.ops.quote_name(Participant._meta.db_table)
    with statement_cursor() as cursor:
        cursor.execute(f"SELECT id, answers, {_answers_sql(f'{table}.id')} FROM {table} WHERE poll_id = %s",
                       [*_ANSWERS_PARAMS, poll_id])
        wrong = [pid for pid, stored, counted in cursor.fetchall()
                 if sorted(filter(None, stored.split(","))) != sorted(filter(None, counted.split(",")))]
        for start in range(0, len(wrong), 1000):
            batch = wrong[start:start + 1000]
            cursor.execute(f"UPDATE {table} SET answers = {_answers_sql(f'{table}.id')} "
                           f"WHERE id IN ({', '.join(['%s'] * len(batch))})", [*_ANSWERS_PARAMS, *batch])
    return len(wrong)
