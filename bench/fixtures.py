"""The data the benches read, built the same way every time (the votes follow a fixed
pattern), so that the contract test (tests/test_bench_contract.py) can compare today's
responses with a snapshot of them on the very fixtures the benches time.

- `poll_body(n)`: the body of `POST /v1/polls` with `n` time options.
- `small_polls(space, count)`: `count` polls of 10 options each (the list and `GET` poll).
- `big_poll(space, options, participants)`: a time poll whose participants all answered
  every option (yes, ifNeedBe or no), stored in bulk with raw inserts.
- `other_polls(count)`: polls of another space, stored in bulk (the service's other tenants).

Django must be set up before these are called.
"""

import itertools
from datetime import UTC, datetime, timedelta

KINDS = ("yes", "ifNeedBe", "no")
FIRST_SLOT = datetime(2030, 1, 7, 8, tzinfo=UTC)
CREATED = datetime(2026, 1, 1, tzinfo=UTC)


def poll_body(options: int = 10) -> dict:
    """A time poll with `options` half-hour slots, as a client sends it."""
    return {
        "title": "Bench poll",
        "kind": "time",
        "timeZone": "Europe/Berlin",
        "duration": 30,
        "options": [{"startTime": (FIRST_SLOT + timedelta(minutes=30 * n)).isoformat().replace("+00:00", "Z")}
                    for n in range(options)],
    }


def vote_kind(participant: int, option: int) -> str:
    """The fixed pattern of the votes: every kind appears, unevenly across options."""
    return KINDS[(participant * 7 + option * 3 + (participant * option) % 5) % 3]


def _create_poll(space, options: int):
    from polls import services
    from polls.rules import TimeSlot

    return services.create_poll(
        space=space, title="Bench poll", kind="time", duration=30, time_zone="Europe/Berlin",
        slots=[TimeSlot(FIRST_SLOT + timedelta(minutes=30 * n)) for n in range(options)],
    )


def _add_participants(poll, options: list, participants: int) -> None:
    """Participants created one second apart, each answering every option; inserted with
    raw `executemany` in chunks (Django objects for two million votes take minutes)."""
    from django.db import connection, transaction

    from core.ids import random_id
    from polls.models import Participant, Vote

    if not participants:
        return
    people = [
        Participant(poll=poll, name=f"Participant {n}", email=f"p{n}@example.com",
                    created_at=CREATED + timedelta(seconds=n), updated_at=CREATED + timedelta(seconds=n))
        for n in range(participants)
    ]
    for person in people:
        person.id = random_id()
    option_ids = [option.id for option in options]
    rows = ((person.id, option_id, vote_kind(p, o)) for p, person in enumerate(people)
            for o, option_id in enumerate(option_ids))
    table = connection.ops.quote_name(Vote._meta.db_table)
    with transaction.atomic():
        Participant.objects.bulk_create(people, batch_size=2000)
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":  # COPY: several times faster than inserts
                with cursor.cursor.copy(f"COPY {table} (participant_id, option_id, type) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                sql = f"INSERT INTO {table} (participant_id, option_id, type) VALUES (%s, %s, %s)"
                while chunk := list(itertools.islice(rows, 20000)):
                    cursor.executemany(sql, chunk)
    after_bulk_load(poll)


def after_bulk_load(poll) -> None:
    """What the services keep up to date on every response, for votes inserted behind their
    back (the poll's tallies), and the statistics autovacuum would gather on PostgreSQL."""
    from django.db import connection

    from polls import services

    recount = getattr(services, "recount_tallies", None)
    if recount is not None:
        recount(poll=poll)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def small_polls(space, count: int, options: int = 10, participants: int = 3) -> list:
    """`count` polls of `options` options, each with a few participants."""
    polls = []
    for _ in range(count):
        poll, option_rows = _create_poll(space, options)
        _add_participants(poll, option_rows, participants)
        polls.append(poll)
    return polls


def big_poll(space, options: int, participants: int):
    poll, option_rows = _create_poll(space, options)
    _add_participants(poll, option_rows, participants)
    return poll


def other_polls(count: int, options: int = 10, chunk: int = 2000) -> None:
    """`count` polls of `options` options each in another space, stored in bulk
    (bulk_create, no events): the other tenants of a service in use. On a nearly empty
    polls table PostgreSQL plans the foreign-key check of each new option (its poll, by id)
    as a sequential scan, and keeps that plan while the table grows, until autovacuum next
    analyzes it: a `POST /v1/polls` on a fresh database then reads every poll once per
    option created."""
    from django.db import transaction
    from django.utils import timezone

    from polls.models import Option, Poll, shown_options

    if not count:
        return
    space, _ = bench_space("Others")
    now = timezone.now()
    starts = [FIRST_SLOT + timedelta(minutes=30 * n) for n in range(options)]
    for first in range(0, count, chunk):
        polls = [Poll(space=space, organizer=space.owner, title="Another space's poll", kind="time",
                      time_zone="Europe/Berlin", created_at=now, updated_at=now)
                 for _ in range(min(chunk, count - first))]
        options = {poll: [Option(poll=poll, start_time=start, duration=30) for start in starts] for poll in polls}
        for poll in polls:
            poll.shown_options = shown_options(poll.kind, options[poll])
        with transaction.atomic():
            Poll.objects.bulk_create(polls)
            Option.objects.bulk_create([option for each in options.values() for option in each], batch_size=5000)


def bench_space(name: str = "Bench"):
    """A Pro space and an API key for it."""
    import time

    from spaces import services as space_services

    space = space_services.create_space(name=name, owner_email=f"bench-{time.time_ns()}@example.com", pro=True)
    _, key = space_services.create_key(space=space, name="bench")
    return space, key
