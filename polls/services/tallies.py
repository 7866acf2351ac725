"""What the votes sum up to, kept in the same transaction as the votes: the tallies (votes
per option and type, for results), each participant's answers (`Participant.answers`,
for the participant list) and each poll's participant count (`Poll.participant_count`,
for every poll read).

The consistency rule: every service that adds, changes or removes votes calls `count_votes`
with the difference and stores the participant's `answers_text`, inside its transaction
and after `locked_poll` (one writer per poll at a time); adding or removing a participant
moves the poll's count by one in the same transaction (`responses._touch`); answers name
options by their place in display order (`queries.ANSWER_OFFSETS`), so changing options in
a way that moves one (removing one, adding one before another, rescheduling one) calls
`write_answers` after the change; removing an option or a poll removes its tallies with its
votes (CASCADE). Votes or participants written any other way (a bulk
load, a hand-made fix) leave tallies, answers and counts wrong until `recount_tallies`
(`manage.py polls recount`) rebuilds them."""

from collections import Counter

from django.db import connection, transaction
from django.db.models import Count

from core.statements import statement_cursor
from polls.models import OPTION_ORDER, Option, Participant, Poll, Tally, Vote
from polls.queries import ANSWER_BASE, ANSWER_OFFSETS, ANSWER_STRIDE


def answers_text(votes, positions: dict[str, int]) -> str:
    """`Participant.answers` for these `(option id, type)` votes (types without an offset in
    ANSWER_OFFSETS left out), `positions` giving each option's place in the poll's display
    order (`option_positions`)."""
    return "".join(sorted(chr(ANSWER_BASE + ANSWER_STRIDE * positions[option_id] + ANSWER_OFFSETS[kind])
                          for option_id, kind in votes if kind in ANSWER_OFFSETS))


def option_positions(poll: Poll) -> dict[str, int]:
    """Each option of the poll (by id) -> its place in display order, from 0 (one query)."""
    return {option_id: n for n, option_id in enumerate(Option.objects.filter(poll=poll).values_list("pk", flat=True))}


def _fresh_answers() -> tuple[str, str, str]:
    """SQL computing each participant's answers from their votes (what `answers_text`
    makes): `(head, source, expression)` for a statement `{head}... {table} AS p
    [FROM|,] {source} ... WHERE p.poll_id = %s` whose `expression` is the answers of the
    participant `p`; its parameters are the poll's id twice (the options', then the
    participants'). Each participant's votes are read through their own index, whatever the
    planner knows of the tables: joined as one set with the participants, freshly loaded
    votes without statistics were planned as an aggregate over all of them per participant.
    PostgreSQL looks each vote's option up in a JSON object made once, SQLite in the
    options' positions (made once: a window function keeps SQLite from folding them into
    the subquery; no MATERIALIZED, which SQLite before 3.35 refuses)."""
    q = connection.ops.quote_name
    options, votes = q(Option._meta.db_table), q(Vote._meta.db_table)
    order = ", ".join(q(Option._meta.get_field(name).column) for name in OPTION_ORDER)
    positions = (f"SELECT id, {ANSWER_BASE} + {ANSWER_STRIDE} * (row_number() OVER (ORDER BY {order}) - 1) AS code "
                 f"FROM {options} WHERE poll_id = %s")
    offset = "CASE v.type " + " ".join(f"WHEN '{kind}' THEN {n}" for kind, n in ANSWER_OFFSETS.items()) + " END"
    kinds = ", ".join(f"'{kind}'" for kind in ANSWER_OFFSETS)
    if connection.vendor == "postgresql":
        code = f"chr(CAST((codes.of ->> v.option_id)::int + {offset} AS integer))"
        return (f"WITH codes AS MATERIALIZED (SELECT jsonb_object_agg(id, code) AS of FROM ({positions}) o) ", "codes",
                f"COALESCE((SELECT string_agg({code}, '') FROM {votes} v "
                f"WHERE v.participant_id = p.id AND v.type IN ({kinds})), '')")
    return (f"WITH positions AS ({positions}) ", "",
            f"COALESCE((SELECT group_concat(char(positions.code + {offset}), '') FROM {votes} v "
            f"JOIN positions ON positions.id = v.option_id "
            f"WHERE v.participant_id = p.id AND v.type IN ({kinds})), '')")


def write_answers(poll: Poll) -> None:
    """Every participant's answers of `poll` written afresh from their votes (one statement):
    for after its options changed in a way that moved one's position (`update_poll`)."""
    head, source, expression = _fresh_answers()
    table = connection.ops.quote_name(Participant._meta.db_table)
    with statement_cursor() as cursor:
        cursor.execute(f"{head}UPDATE {table} AS p SET answers = {expression} {source and 'FROM ' + source} "
                       f"WHERE p.poll_id = %s", [poll.pk, poll.pk])


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
    """The participants of the poll whose answers disagree with their votes, rebuilt; how
    many there were."""
    table = connection.ops.quote_name(Participant._meta.db_table)
    with statement_cursor() as cursor:
        head, source, expression = _fresh_answers()
        cursor.execute(f"{head}SELECT p.id, p.answers, {expression} FROM {table} AS p{source and ', ' + source} "
                       f"WHERE p.poll_id = %s", [poll_id, poll_id])
        wrong = [(counted, pid) for pid, stored, counted in cursor.fetchall() if sorted(stored) != sorted(counted)]
        if wrong:
            cursor.executemany(f"UPDATE {table} SET answers = %s WHERE id = %s", wrong)
    return len(wrong)
