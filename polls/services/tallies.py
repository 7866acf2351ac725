"""Tallies: the votes per option and type, kept in the same transaction as the votes.

The consistency rule: every service that adds, changes or removes votes calls `count_votes`
with the difference, inside its transaction and after `locked_poll` (one writer per poll at
a time); removing an option or a poll removes its tallies with its votes (CASCADE). Votes
written any other way (a bulk load, a hand-made fix) leave the tallies wrong until
`recount_tallies` (`manage.py polls recount`) rebuilds them."""

from collections import Counter

from django.db import connection, transaction
from django.db.models import Count

from polls.models import Poll, Tally, Vote


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
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (poll_id, option_id, type, count) VALUES {values} "
            f"ON CONFLICT (option_id, type) DO UPDATE SET count = {table}.count + excluded.count",
            params,
        )


def recount_tallies(*, poll: Poll | None = None) -> int:
    """Rebuild the tallies of `poll` (or of every poll, deleted ones included) from the
    votes, one poll at a time under its lock; returns how many tallies were wrong or missing
    (0: they agreed with the votes)."""
    polls = [poll.pk] if poll is not None else Poll.objects.order_by("pk").values_list("pk", flat=True).iterator()
    return sum(_recount(poll_id) for poll_id in polls)


@transaction.atomic
def _recount(poll_id: str) -> int:
    if not Poll.objects.select_for_update().filter(pk=poll_id).exists():
        return 0
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
    return wrong
