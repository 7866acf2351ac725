"""The poll list reads a space's polls in index order, on both databases: no sort of every
poll of the space, no scan of the polls before a cursor, however many polls the space has;
the webhooks' fan-out takes the oldest events still to fan out from an index of those alone
(the database's own plan of the statements the service runs); every foreign key is looked
up through an index, partial where most rows have none.

On PostgreSQL the plan is asked for with sequential scans and sorts priced out: a test's
few polls would make any plan cheap, and what is checked is that an index gives the order
and finds the cursor's position at all (it did not, and every page sorted the space's
polls)."""

import json
import re
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from bench import fixtures
from polls.models import Comment, Option, Participant, Poll, Tally, Vote
from spaces.models import ApiKey, Membership
from webhooks import services
from webhooks.models import Attempt, Delivery, Endpoint, Event

pytestmark = pytest.mark.django_db


def plan_of(sql: str, table: str = "polls_poll", alias: str = "p") -> tuple[str, set[str]]:
    """How the statement `sql` (parameters written in) reads `table`, as the database words
    it (its index and conditions), and every kind of step of its plan."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            details = [row[-1] for row in cursor.fetchall()]
            return next(detail for detail in details if detail.startswith((f"SEARCH {alias} ", f"SCAN {alias} "))), set(details)
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
        nodes, steps, read = [cursor.fetchone()[0][0]["Plan"]], set(), None
        while nodes:
            node = nodes.pop()
            kind = node["Node Type"]
            steps.add(kind)
            nodes += node.get("Plans", [])
            if node.get("Relation Name") == table:
                read = f"{node['Node Type']} {node.get('Index Name')} {node.get('Index Cond')} filter={node.get('Filter')}"
        return read, steps


def page_statement(api, path: str) -> tuple[str, dict]:
    with CaptureQueriesContext(connection) as captured:
        response = api.get(path)
    assert response.status_code == 200, response.content
    pages = [query["sql"] for query in captured.captured_queries if 'FROM "polls_poll"' in query["sql"] and "LIMIT" in query["sql"]]
    assert len(pages) == 1, pages
    return pages[0], response.json()


def test_every_page_of_the_poll_list_reads_its_index_in_order(api, space):
    fixtures.small_polls(space, 60, options=1, participants=0)
    first, answer = page_statement(api, "/v1/polls?limit=50")
    after, _ = page_statement(api, f"/v1/polls?limit=50&cursor={answer['nextCursor']}")
    by_status, _ = page_statement(api, "/v1/polls?limit=50&status=open")

    # By status: its own index, or the space's with the status checked as read (both in order:
    # which is cheaper depends on how many of the space's polls have that status).
    for sql, indexes in ((first, ["poll_space_created"]), (after, ["poll_space_created"]),
                         (by_status, ["poll_space_status_live", "poll_space_created"])):
        polls, steps = plan_of(sql, alias="polls_poll")
        assert any(index in polls for index in indexes), polls
        assert not steps & {"Sort", "Incremental Sort"} and not any("TEMP B-TREE" in step for step in steps), steps
    polls, _ = plan_of(after, alias="polls_poll")
    assert "created_at" in polls.split(" filter=")[0], polls  # the cursor's position is sought in the index


def test_the_fan_out_takes_the_oldest_pending_events_from_their_own_index(api, space):
    fixtures.small_polls(space, 5, options=1, participants=0)  # an event each, not fanned out yet
    with CaptureQueriesContext(connection) as captured:
        assert services.fan_out_all() == 5
    statement = next(query["sql"] for query in captured.captured_queries if "ORDER BY" in query["sql"])
    assert '"webhooks_event"' in statement.split(" WHERE ")[0], statement  # the index gives the order it asks for
    read, steps = plan_of(statement, "webhooks_event", "webhooks_event")
    assert "event_pending" in read, read
    assert not steps & {"Sort", "Incremental Sort"} and not any("TEMP B-TREE" in step for step in steps), steps


# Foreign keys without an index of their own (the index named leads with the key): each
# lookup by the key, the ORM's cascades among them, is still an index search.
KEYS_IN_COMPOSITE_INDEXES = [
    (Poll, "space_id", "poll_space_created"),
    (Option, "poll_id", "option_poll_order"),
    (Participant, "poll_id", "participant_poll_order"),
    (Vote, "participant_id", "vote_unique"),
    (Vote, "option_id", "vote_option_type"),
    (Tally, "option_id", "tally_unique"),
    (Comment, "poll_id", "comment_poll_order"),
    (Event, "space_id", "event_space_created"),
    (Endpoint, "space_id", "endpoint_space_enabled"),
    (Delivery, "endpoint_id", "delivery_endpoint_recent"),
    (Attempt, "delivery_id", "attempt_delivery_started"),
    (Membership, "space_id", "membership_unique"),
    (ApiKey, "space_id", "apikey_space_revoked"),
]


@pytest.mark.parametrize(("model", "column", "index"), KEYS_IN_COMPOSITE_INDEXES,
                         ids=[f"{model.__name__}.{column}" for model, column, _ in KEYS_IN_COMPOSITE_INDEXES])
def test_a_foreign_key_without_its_own_index_is_searched_through_the_composite_one(model, column, index):
    assert not model._meta.get_field(column.removesuffix("_id")).db_index
    sql = str(model.objects.filter(**{f"{column}__in": ["AbCdEf123456", "GhIjKl789012"]}).only("pk").query)
    sql = sql.replace("AbCdEf123456", "'AbCdEf123456'").replace("GhIjKl789012", "'GhIjKl789012'")
    assert indexes_searched(sql, model._meta.db_table) == {index}


def test_the_purge_finds_deleted_polls_in_an_index_of_those_alone():
    sql = str(Poll.objects.filter(deleted_at__lte=datetime(2030, 1, 1, tzinfo=UTC)).only("pk").query)
    sql = re.sub(r"(2030-01-01 00:00:00(?:\+00:00)?)", r"'\1'", sql)
    assert indexes_searched(sql, "polls_poll") == {"poll_deleted"}


def test_an_options_deletion_finds_the_polls_scheduled_at_it_in_an_index_of_scheduled_polls_alone():
    # The ORM's SET NULL, and on PostgreSQL the foreign key's own check, look polls up by
    # their scheduled option; a new poll has none and adds no entry to the index.
    assert not Poll._meta.get_field("scheduled_option").db_index
    sql = str(Poll.objects.filter(scheduled_option_id__in=["AbCdEf123456", "GhIjKl789012"]).only("pk").query)
    sql = sql.replace("AbCdEf123456", "'AbCdEf123456'").replace("GhIjKl789012", "'GhIjKl789012'")
    assert indexes_searched(sql, "polls_poll") == {"poll_scheduled_option"}


def indexes_searched(sql: str, table: str) -> set[str]:
    """The indexes the plan of `sql` searches; fails if it scans `table` whole instead."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            details = [row[-1] for row in cursor.fetchall()]
            assert not any(detail.startswith(f"SCAN {table}") for detail in details), details
            return {match for detail in details for match in re.findall(r"USING (?:COVERING )?INDEX (\w+)", detail)}
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
        nodes, found = [cursor.fetchone()[0][0]["Plan"]], set()
        while nodes:
            node = nodes.pop()
            assert node["Node Type"] != "Seq Scan", node
            found |= {node["Index Name"]} if "Index Name" in node else set()
            nodes += node.get("Plans", [])
        return found


@pytest.mark.postgresql
@pytest.mark.parametrize("query", ["limit=50"])
def test_the_list_statements_are_planned_once_however_many_polls_the_table_holds(api, space, query):
    """A prepared statement's generic plan takes a LIMIT parameter for a tenth of the rows:
    with thousands of other spaces' polls it looked dearer than a plan made for each
    execution, and PostgreSQL planned the list's statements anew on every request. The page
    size is written into them (Django writes LIMIT as a number). (By status, PostgreSQL may
    still plan each request: a generic plan's guess of a status's share of a space's polls
    looks dearer than a plan for this few polls, whichever index it reads.)"""
    fixtures.other_polls(4000, options=1)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE polls_poll")
    for _ in range(12):  # psycopg prepares on the 5th run, PostgreSQL plans generically from the 6th
        assert api.get(f"/v1/polls?{query}").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements "
                       "WHERE statement LIKE '%%FROM \"polls_poll\"%%LIMIT 51%%'")
        [(statement, generic, custom)] = cursor.fetchall()
    assert generic >= 1, (generic, custom, statement)


@pytest.mark.postgresql
def test_a_space_that_grew_since_its_statistics_is_still_listed_in_index_order(api, space):
    """Statistics taken while the space had a few polls (autovacuum analyzes a table only now
    and then, or not at all) put a page of its polls at a few rows: PostgreSQL read all of them
    through the narrowest index leading with the space and sorted them, on every page, a
    cost that grew with the space. Planned here with PostgreSQL's own costs, nothing priced
    out, as each request plans it (a custom plan) and as a prepared statement may (generic)."""
    fixtures.other_polls(2000, options=1)
    fixtures.small_polls(space, 3, options=1, participants=0)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE polls_poll")
    now = datetime.now(UTC)
    Poll.objects.bulk_create([Poll(space=space, organizer=space.owner, title="Grown", kind="time", created_at=now,
                                   updated_at=now) for _ in range(3000)])
    sql, answer = page_statement(api, "/v1/polls?limit=50")
    assert len(answer["data"]) == 50 and answer["nextCursor"]
    for mode in ("force_custom_plan", "force_generic_plan"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL plan_cache_mode = {mode}")
            cursor.execute("PREPARE grown_list AS " + sql)
            cursor.execute("EXPLAIN (FORMAT JSON) EXECUTE grown_list")
            nodes, steps, read = [cursor.fetchone()[0][0]["Plan"]], set(), None
            cursor.execute("DEALLOCATE grown_list")
        while nodes:
            node = nodes.pop()
            steps.add(node["Node Type"])
            nodes += node.get("Plans", [])
            if node.get("Relation Name") == "polls_poll":
                read = node.get("Index Name")
        assert read == "poll_space_created" and not steps & {"Sort", "Incremental Sort"}, (mode, read, steps)
