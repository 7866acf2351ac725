"""GET /v1/polls/{pollId}/results: dense votes, score, top choices, counted from the tallies."""

from datetime import date

import pytest
from django.db import connection

from polls import services
from polls.models import Option, Poll, Tally, Vote
from polls.tests.factories import date_poll_body, make_poll, option_ids, respond, stored_vote, time_poll_body


def results(api, poll):
    response = api.get(f"/v1/polls/{poll.pk}/results")
    assert response.status_code == 200, response.body
    return response.body["data"]


def counts(option: dict) -> dict:
    return {vote["type"]: vote["count"] for vote in option["votes"]}


def test_counts_every_vote_type_and_ranks_the_options(api, space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02", "2030-01-03", "2030-01-04"))
    respond(poll, "yes", "ifNeedBe", "no", None, name="P1")
    respond(poll, "yes", "yes", "ifNeedBe", "no", name="P2")
    respond(poll, "ifNeedBe", "no", None, "no", name="P3")
    respond(poll, name="P4 answered nothing")
    ids = option_ids(poll)

    def option(i, day, yes, maybe, no, score, top):
        votes = [{"type": "yes", "count": yes}, {"type": "ifNeedBe", "count": maybe}, {"type": "no", "count": no}]
        return {"id": ids[i], "date": day, "votes": votes, "score": score, "isTopChoice": top}

    assert results(api, poll) == {
        "pollId": poll.pk,
        "kind": "date",
        "status": "open",
        "participantCount": 4,
        "options": [
            option(0, "2030-01-01", 2, 1, 0, 3002, True),
            option(1, "2030-01-02", 1, 1, 1, 2001, False),
            option(2, "2030-01-03", 0, 1, 1, 1000, False),
            option(3, "2030-01-04", 0, 0, 2, 0, False),
        ],
        "highScore": 3002,
    }


@pytest.mark.parametrize(
    "vote, tentative, expected, score",
    [
        ("yes", True, {"yes": 1, "ifNeedBe": 0, "no": 0}, 1001),
        ("ifNeedBe", True, {"yes": 0, "ifNeedBe": 1, "no": 0}, 1000),
        ("no", True, {"yes": 0, "ifNeedBe": 0, "no": 1}, 0),
        (None, True, {"yes": 0, "ifNeedBe": 0, "no": 0}, 0),
        ("yes", False, {"yes": 1, "no": 0}, 1001),
        ("no", False, {"yes": 0, "no": 1}, 0),
        (None, False, {"yes": 0, "no": 0}, 0),
        # Tentative votes turned off after someone answered ifNeedBe: the vote still shows.
        ("ifNeedBe", False, {"yes": 0, "ifNeedBe": 1, "no": 0}, 1000),
    ],
)
def test_every_vote_with_tentative_votes_on_and_off(api, space, vote, tentative, expected, score):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    participant = respond(poll, vote if vote != "ifNeedBe" or tentative else None)
    if vote == "ifNeedBe" and not tentative:
        stored_vote(participant, option_ids(poll)[0], "ifNeedBe")
    poll.allow_tentative_votes = tentative
    poll.save(update_fields=["allow_tentative_votes"])

    data = results(api, poll)
    first, second = data["options"]
    assert [vote["type"] for vote in first["votes"]] == list(expected)  # display order
    assert counts(first) == expected
    assert counts(second) == dict.fromkeys(expected, 0)  # dense, although nobody answered
    assert first["score"] == score and second["score"] == 0
    assert data["highScore"] == score
    assert first["isTopChoice"] is (score > 0)
    assert second["isTopChoice"] is False
    assert data["participantCount"] == 1


def test_ties_share_the_top_choice(api, space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02", "2030-01-03"))
    respond(poll, "yes", "no", "yes")
    data = results(api, poll)
    assert [option["isTopChoice"] for option in data["options"]] == [True, False, True]
    assert data["highScore"] == 1001


def test_a_poll_without_responses_has_zero_counts_and_no_top_choice(api, space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    data = results(api, poll)
    assert data["participantCount"] == 0
    assert data["highScore"] == 0
    for option in data["options"]:
        assert option["votes"] == [{"type": t, "count": 0} for t in ("yes", "ifNeedBe", "no")]
        assert option["score"] == 0 and option["isTopChoice"] is False


def test_unknown_vote_types_of_older_data_are_counted_after_the_built_in_ones(api, space):
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"), allow_tentative_votes=False)
    first, second = option_ids(poll)
    ann = respond(poll, "yes", None, name="Ann")
    bob = respond(poll, None, "no", name="Bob")
    carl = respond(poll, name="Carl")
    # Older data: types this service does not know. They follow in order of first appearance
    # reading the options in display order, by name within one option.
    stored_vote(ann, second, "alpha")
    stored_vote(bob, first, "zeta")
    stored_vote(carl, first, "omega")
    stored_vote(carl, second, "zeta")

    data = results(api, poll)
    a, b = data["options"]
    assert [vote["type"] for vote in a["votes"]] == ["yes", "no", "omega", "zeta", "alpha"]
    assert counts(a) == {"yes": 1, "no": 0, "omega": 1, "zeta": 1, "alpha": 0}
    assert counts(b) == {"yes": 0, "no": 1, "omega": 0, "zeta": 1, "alpha": 1}
    assert (a["score"], b["score"]) == (1001, 0)  # unknown types do not rank an option
    assert data["participantCount"] == 3


def test_time_poll_results_carry_the_option_times_and_the_status(api, space):
    poll = make_poll(space, time_poll_body("2030-03-02T10:00:00", "2030-03-02T09:00:00", duration=30))
    respond(poll, "no", "yes")
    services.close_poll(poll=poll)
    data = results(api, poll)
    assert data["kind"] == "time" and data["status"] == "closed"
    assert [(o["startTime"], o["duration"]) for o in data["options"]] == [
        ("2030-03-02T08:00:00.000Z", 30),
        ("2030-03-02T09:00:00.000Z", 30),
    ]
    assert [o["isTopChoice"] for o in data["options"]] == [False, True]


def test_results_are_isolated_between_polls_and_spaces(api, space, make_space):
    poll = make_poll(space, date_poll_body("2030-01-01"))
    neighbour = make_poll(space, date_poll_body("2030-01-01"))
    respond(neighbour, "yes")
    respond(neighbour, "no", name="Bob")
    other_space, _ = make_space()
    foreign = make_poll(other_space, date_poll_body("2030-01-01"))
    respond(foreign, "yes")

    data = results(api, poll)
    assert data["participantCount"] == 0 and counts(data["options"][0]) == {"yes": 0, "ifNeedBe": 0, "no": 0}
    for poll_id in (foreign.pk, "NoSuchPoll12", "-"):
        response = api.get(f"/v1/polls/{poll_id}/results")
        assert response.status_code == 404 and response.body["error"]["code"] == "POLL_NOT_FOUND"
    services.delete_poll(poll=neighbour)
    response = api.get(f"/v1/polls/{neighbour.pk}/results")
    assert response.status_code == 404 and response.body["error"]["code"] == "POLL_NOT_FOUND"


@pytest.mark.parametrize("participants", [1, 25])
def test_results_cost_the_same_queries_however_many_votes(
    api, space, request_overhead, django_assert_num_queries, participants
):
    poll = make_poll(space, date_poll_body(*(f"2030-01-{day:02d}" for day in range(1, 11))))
    for n in range(participants):
        respond(poll, *(["yes", "ifNeedBe", "no"] * 4)[n % 3:][:10], name=f"P{n}")
    # The poll with its participant count, its options and its tallies.
    with django_assert_num_queries(request_overhead + 3):
        data = results(api, poll)
    assert data["participantCount"] == participants


def test_results_read_again_show_every_change_at_once(api, space):
    """Each kind of change is seen by the next read."""
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    first, second = option_ids(poll)
    ann = respond(poll, "yes", "ifNeedBe", name="Ann")
    assert [counts(o) for o in results(api, poll)["options"]] == [
        {"yes": 1, "ifNeedBe": 0, "no": 0}, {"yes": 0, "ifNeedBe": 1, "no": 0}]
    respond(poll, "yes", "no", name="Bob")  # a new response
    data = results(api, poll)
    assert data["participantCount"] == 2 and counts(data["options"][1]) == {"yes": 0, "ifNeedBe": 1, "no": 1}
    services.update_response(participant=ann, votes={second: "no"})  # a changed vote
    assert counts(results(api, poll)["options"][1]) == {"yes": 0, "ifNeedBe": 0, "no": 2}
    services.update_poll(poll=poll, options=[{"id": first, "date": date(2030, 1, 1)}, {"id": second, "date": date(2030, 1, 2)},
                                             {"date": date(2030, 1, 3)}])  # an option without votes: the tallies are the same
    assert [o["date"] for o in results(api, poll)["options"]] == ["2030-01-01", "2030-01-02", "2030-01-03"]
    services.update_poll(poll=poll, details={"allow_tentative_votes": False})  # fewer vote types shown
    assert counts(results(api, poll)["options"][0]) == {"yes": 2, "no": 0}
    services.close_poll(poll=poll)
    assert results(api, poll)["status"] == "closed"
    services.delete_response(participant=ann)
    data = results(api, poll)
    assert data["participantCount"] == 1 and counts(data["options"][0]) == {"yes": 1, "no": 0}


@pytest.mark.parametrize("table", ["option", "tally"])
def test_results_answer_while_the_options_change(api, space, table):
    """An option added (and voted for) between the reads of results: before its options are
    read, or between them and the tallies. The answer is the poll as read at one of those
    moments, never a 500."""
    poll = make_poll(space, date_poll_body("2030-01-01", "2030-01-02"))
    first, second = option_ids(poll)
    model = {"option": Option, "tally": Tally}[table]
    changed = []

    def add_an_option_first(execute, sql, params, many, context):
        if not changed and sql.lstrip().startswith("SELECT") and f'FROM "{model._meta.db_table}"' in sql:
            changed.append(sql)
            options = [{"id": first, "date": date(2030, 1, 1)}, {"id": second, "date": date(2030, 1, 2)}, {"date": date(2030, 1, 3)}]
            services.update_poll(poll=Poll.objects.get(pk=poll.pk), options=options)
            respond(Poll.objects.get(pk=poll.pk), "yes", "yes", "yes")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(add_an_option_first):
        shown = results(api, poll)
    assert changed
    # Read after the change: all three options with the new vote; between the reads: the two
    # options read, the votes on them counted, the third option's left for the next read.
    expected = ["2030-01-01", "2030-01-02", "2030-01-03"] if table == "option" else ["2030-01-01", "2030-01-02"]
    assert [option["date"] for option in shown["options"]] == expected
    assert [counts(option)["yes"] for option in shown["options"]] == [1] * len(expected)
