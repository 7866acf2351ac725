"""The poll list reads a space's polls in index order, on both databases: no sort of every
poll of the space, no scan of the polls before a cursor, however many polls the space has;
the webhooks' fan-out takes the oldest events still to fan out from an index of those alone
(the database's own plan of the statements the service runs).

On PostgreSQL the plan is asked for with sequential scans and sorts priced out: a test's
few polls would make any plan cheap, and what is checked is that an index gives the order
and finds the cursor's position at all (it did not, and every page sorted the space's
polls)."""

import json

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from bench import fixtures
from webhooks.models import Event
from webhooks.services.delivery import _oldest_unlocked

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
            steps.add(node["Node Type"])
            nodes += node.get("Plans", [])
            if node.get("Relation Name") == table:
                read = f"{node['Node Type']} {node.get('Index Name')} {node.get('Index Cond')} filter={node.get('Filter')}"
        return read, steps


def page_statement(api, path: str) -> tuple[str, dict]:
    with CaptureQueriesContext(connection) as captured:
        response = api.get(path)
    assert response.status_code == 200, response.content
    pages = [query["sql"] for query in captured.captured_queries if '"polls_poll" p' in query["sql"] and "LIMIT" in query["sql"]]
    assert len(pages) == 1, pages
    return pages[0], response.json()


def test_every_page_of_the_poll_list_reads_its_index_in_order(api, space):
    fixtures.small_polls(space, 60, options=1, participants=0)
    first, answer = page_statement(api, "/v1/polls?limit=50")
    after, _ = page_statement(api, f"/v1/polls?limit=50&cursor={answer['nextCursor']}")
    by_status, _ = page_statement(api, "/v1/polls?limit=50&status=open")

    for sql, index in ((first, "poll_space_live"), (after, "poll_space_live"), (by_status, "poll_space_status_live")):
        polls, steps = plan_of(sql)
        assert index in polls, polls
        assert not steps & {"Sort", "Incremental Sort"} and not any("TEMP B-TREE" in step for step in steps), steps
    polls, _ = plan_of(after)
    assert "created_at" in polls.split(" filter=")[0], polls  # the cursor's position is sought in the index


def test_the_fan_out_takes_the_oldest_pending_events_from_their_own_index(api, space):
    fixtures.small_polls(space, 5, options=1, participants=0)  # an event each, not fanned out yet
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        assert len(list(_oldest_unlocked(Event.objects.filter(dispatched_at__isnull=True), "created_at", 500))) == 5
    read, steps = plan_of(captured.captured_queries[-1]["sql"], "webhooks_event", "webhooks_event")
    assert "event_pending" in read, read
    assert not steps & {"Sort", "Incremental Sort"} and not any("TEMP B-TREE" in step for step in steps), steps
