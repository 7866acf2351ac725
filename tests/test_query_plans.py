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

    for sql, index in ((first, "poll_space_live"), (after, "poll_space_live"), (by_status, "poll_space_status_live")):
        polls, steps = plan_of(sql, alias="polls_poll")
        assert index in polls, polls
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
@pytest.mark.parametrize("query", ["limit=50", "limit=50&status=open"])
def test_the_list_statements_are_planned_once_however_many_polls_the_table_holds(api, space, query):
    """A prepared statement's generic plan takes a LIMIT parameter for a tenth of the rows:
    with thousands of other spaces' polls it looked dearer than a plan made for each
    execution, and PostgreSQL planned the list's statements anew on every request. The page
    size is written into them (Django writes LIMIT as a number)."""
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
