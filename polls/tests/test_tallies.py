"""Tallies (votes per option and type), participants' answers and polls' participant counts
agree with the votes and participants after every kind of change, and after many concurrent
ones from several processes; `manage.py polls recount` repairs them."""

import json
import os
import subprocess
import sys
from datetime import date

import pytest
from django.core.management import call_command
from django.db.models import Count

from polls import services
from polls.models import Option, Participant, Poll, Tally, Vote
from polls.tests.factories import date_poll_body, make_poll, option_ids, respond
from polls.tests.tally_worker import PROCESSES, ROUNDS, THREADS
from tests.hammer import BASE_DIR, release_together, shared_database


def recounted(poll) -> dict:
    rows = Vote.objects.filter(option__poll=poll).values_list("option_id", "type").annotate(n=Count("*"))
    return {(option_id, kind): n for option_id, kind, n in rows}


def tallies(poll) -> dict:
    rows = Tally.objects.filter(poll=poll, count__gt=0).values_list("option_id", "type", "count")
    return {(option_id, kind): n for option_id, kind, n in rows}


def answers(poll) -> dict:
    """Each participant's stored answers (`Participant.answers`) naming options of the poll,
    as a set of option ids, each followed by `+` for ifNeedBe."""
    ids = set(option_ids(poll))
    rows = Participant.objects.filter(poll=poll).values_list("pk", "answers")
    return {pk: {token for token in text.split(",") if token.rstrip("+") in ids} for pk, text in rows}


def from_votes(poll) -> dict:
    """What each participant's answers are by their votes."""
    found = {pk: set() for pk in Participant.objects.filter(poll=poll).values_list("pk", flat=True)}
    votes = Vote.objects.filter(participant__poll=poll, type__in=("yes", "ifNeedBe"))
    for pk, option_id, kind in votes.values_list("participant_id", "option_id", "type"):
        found[pk].add(option_id + "+" if kind == "ifNeedBe" else option_id)
    return found


def participant_count(poll) -> tuple[int, int]:
    """The poll's stored participant count, and its participants counted."""
    return Poll.objects.get(pk=poll.pk).participant_count, Participant.objects.filter(poll=poll).count()


def test_every_response_added_or_removed_moves_the_participant_count(space, api):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    assert participant_count(poll) == (0, 0)
    ann = respond(poll, "yes", "no", name="Ann")
    respond(poll, None, None, name="Bob")
    assert participant_count(poll) == (2, 2)
    services.update_response(participant=ann, name="Anna", votes={option_ids(poll)[0]: "no"})
    assert participant_count(poll) == (2, 2)
    services.delete_response(participant=ann)
    assert participant_count(poll) == (1, 1)
    for path in (f"/v1/polls/{poll.pk}", f"/v1/polls/{poll.pk}/results"):
        assert api.get(path).body["data"]["participantCount"] == 1
    assert api.get("/v1/polls").body["data"][0]["participantCount"] == 1
    assert services.recount_tallies(poll=poll) == 0


def test_recount_repairs_a_participant_count_written_behind_the_services_back(space):
    poll = make_poll(space, date_poll_body("2030-01-01"))
    respond(poll, "yes", name="Ann")
    Participant.objects.create(poll=poll, name="Imported")  # not through the services: not counted
    Poll.objects.filter(pk=poll.pk).update(participant_count=7)
    assert _command("recount", poll.pk) == {"pollId": poll.pk, "repaired": 1}
    assert participant_count(poll) == (2, 2)
    assert _command("recount", poll.pk) == {"pollId": poll.pk, "repaired": 0}


def test_recount_repairs_options_shown_written_behind_the_services_back(space):
    poll = make_poll(space, date_poll_body("2030-01-02", "2030-01-01"))
    first, second = option_ids(poll)
    Option.objects.filter(pk=second).delete()  # not through the services: still shown
    assert _command("recount", poll.pk) == {"pollId": poll.pk, "repaired": 1}
    assert Poll.objects.get(pk=poll.pk).shown_options == [{"id": first, "date": "2030-01-01"}]
    assert _command("recount", poll.pk) == {"pollId": poll.pk, "repaired": 0}


def test_every_change_of_votes_keeps_the_tallies(space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02", "2030-01-03"))
    first, second, third = option_ids(poll)
    ann = respond(poll, "yes", "ifNeedBe", "no", name="Ann")
    bob = respond(poll, "yes", None, "yes", name="Bob")
    assert tallies(poll) == recounted(poll) == {
        (first, "yes"): 2, (second, "ifNeedBe"): 1, (third, "no"): 1, (third, "yes"): 1,
    }
    services.update_response(participant=ann, votes={first: "no", second: None, third: "no"})
    assert tallies(poll) == recounted(poll)
    services.delete_response(participant=bob)
    assert tallies(poll) == recounted(poll) == {(first, "no"): 1, (third, "no"): 1}
    # Options removed by an edit take their tallies with their votes.
    services.update_poll(poll=poll, options=[{"id": third, "date": date(2030, 1, 3)}, {"date": date(2030, 1, 5)}])
    assert tallies(poll) == recounted(poll) == {(third, "no"): 1}
    assert not Tally.objects.filter(option_id__in=[first, second]).exists()
    assert services.recount_tallies(poll=poll) == 0


def test_every_change_of_votes_keeps_the_participants_answers(space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02", "2030-01-03"))
    first, second, third = option_ids(poll)
    ann = respond(poll, "yes", "ifNeedBe", "no", name="Ann")
    bob = respond(poll, "ifNeedBe", None, "yes", name="Bob")
    assert answers(poll) == from_votes(poll) == {ann.pk: {first, second + "+"}, bob.pk: {first + "+", third}}
    services.update_response(participant=ann, votes={first: "no", second: "yes", third: "ifNeedBe"})
    assert answers(poll) == from_votes(poll) == {ann.pk: {second, third + "+"}, bob.pk: {first + "+", third}}
    services.update_response(participant=bob, name="Bobby", votes={third: None})
    assert answers(poll) == from_votes(poll) == {ann.pk: {second, third + "+"}, bob.pk: {first + "+"}}
    # Options removed by an edit leave the answers of those who gave them, and only theirs.
    services.update_poll(poll=poll, options=[{"id": second, "date": date(2030, 1, 2)}, {"date": date(2030, 1, 5)}])
    assert answers(poll) == from_votes(poll) == {ann.pk: {second}, bob.pk: set()}
    services.delete_response(participant=ann)
    assert answers(poll) == from_votes(poll) == {bob.pk: set()}
    assert services.recount_tallies(poll=poll) == 0


def test_recount_repairs_answers_written_behind_the_services_back(space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    first, second = option_ids(poll)
    ann = respond(poll, "yes", "no", name="Ann")
    bob = respond(poll, "no", "ifNeedBe", name="Bob")
    # The second option's yes and an option that is not the poll's.
    Participant.objects.filter(pk=ann.pk).update(answers=f"{second},gone")
    Vote.objects.filter(participant=bob, option_id=first).update(type="yes")  # a tally wrong twice, an answer once
    assert _command("recount", poll.pk) == {"pollId": poll.pk, "repaired": 4}
    assert answers(poll) == from_votes(poll) == {ann.pk: {first}, bob.pk: {first, second + "+"}}
    assert tallies(poll) == recounted(poll)
    assert _command("recount", poll.pk) == {"pollId": poll.pk, "repaired": 0}


def test_recount_repairs_tallies_and_reports_what_was_wrong(space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    first, second = option_ids(poll)
    respond(poll, "yes", "no", name="Ann")
    Tally.objects.filter(option_id=first).update(count=7)
    Tally.objects.filter(option_id=second).delete()
    Vote.objects.create(participant=respond(poll, None, None, name="Bob"), option_id=second, type="legacy")
    out = _command("recount", poll.pk)
    assert out == {"pollId": poll.pk, "repaired": 3}
    assert tallies(poll) == recounted(poll) == {(first, "yes"): 1, (second, "no"): 1, (second, "legacy"): 1}
    assert _command("recount") == {"pollId": None, "repaired": 0}  # every poll, all right now


def _command(*args) -> dict:
    from io import StringIO

    out = StringIO()
    call_command("polls", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


# --- Concurrent answers from several processes -----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_answers_edits_and_removals_keep_exact_tallies(space, tmp_path, settings):
    poll = make_poll(space, date_poll_body(*(f"2030-02-{day:02d}" for day in range(1, 9))))
    respond(poll, *["yes"] * 8, name="First")
    with shared_database(tmp_path) as database_url:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test", "DATABASE_URL": database_url,
               "REDIS_URL": settings.REDIS_URL}
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "polls.tests.tally_worker", poll.pk, str(seed)], cwd=BASE_DIR, env=env,
                text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
            for seed in range(PROCESSES)
        ]
        try:
            done = [json.loads(out) for out in release_together(workers, timeout=180)]
        finally:
            for worker in workers:
                worker.kill()
    assert sum(n for n in done) == PROCESSES * THREADS * ROUNDS
    assert Vote.objects.filter(option__poll=poll).exists()
    assert tallies(poll) == recounted(poll)
    assert answers(poll) == from_votes(poll)
    stored, counted = participant_count(poll)
    assert stored == counted
    assert services.recount_tallies(poll=poll) == 0


@pytest.mark.django_db(transaction=True)
def test_the_migrations_fill_the_tallies_and_answers_of_existing_polls(space):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    poll = make_poll(space, date_poll_body("2030-03-01", "2030-03-02"))
    first, second = option_ids(poll)
    ann = respond(poll, "yes", "no", name="Ann").pk
    bob = respond(poll, "yes", "ifNeedBe", name="Bob").pk
    executor = MigrationExecutor(connection)
    executor.migrate([("polls", "0009_scheduled_option_index_partial")])  # answers as option ids
    stored = dict(Participant.objects.filter(poll=poll).values_list("pk", "answers"))
    assert {pk: set(text.split(",")) for pk, text in stored.items()} == {ann: {first}, bob: {first, second + "+"}}
    Tally.objects.all().delete()  # as before the tallies existed
    executor = MigrationExecutor(connection)
    executor.migrate([("polls", "0003_comment")])
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert tallies(poll) == recounted(poll) == {(first, "yes"): 2, (second, "no"): 1, (second, "ifNeedBe"): 1}
    assert answers(poll) == from_votes(poll) == {ann: {first}, bob: {first, second + "+"}}
    assert participant_count(poll) == (2, 2)
