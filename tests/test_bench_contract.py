"""The fast paths answer the same JSON values as the plain ORM and DRF's own renderer, on the
data the benches time (bench/fixtures.py, scaled down): the hand-written poll lookup, the
tallies behind results, and the orjson renderer. Every response is also checked against the
OpenAPI document by the `api` client."""

import json

import orjson
import pytest
from django.db.models import Count
from rest_framework.renderers import JSONRenderer as DRFRenderer

from bench import fixtures
from core.api.renderers import JSONRenderer
from polls import presenters, selectors
from polls.models import Poll, Vote
from polls.tests.factories import respond


@pytest.fixture
def bench_data(space):
    fixtures.other_polls(5, chunk=2)  # another space's polls, in chunks of two
    polls = fixtures.small_polls(space, 4)
    big = fixtures.big_poll(space, 12, 40)
    return polls, big


def drf_json(data):
    """What DRF's own renderer gives for `data`, as a JSON value."""
    return json.loads(DRFRenderer().render(data))


def test_get_poll_and_list(api, space, bench_data):
    polls, _ = bench_data
    r = api.get(f"/v1/polls/{polls[-1].pk}")
    orm = selectors.live_polls(space).filter(pk=polls[-1].pk).first()  # the ORM's lookup
    assert r.body == {"data": drf_json(presenters.poll(orm, orm.organizer))}
    r = api.get("/v1/polls?limit=50")
    newest = selectors.live_polls(space).order_by("-created_at", "-id")[:50]
    assert r.body == {
        "data": [drf_json(presenters.poll(poll, poll.organizer)) for poll in newest], "nextCursor": None,
    }
    assert [poll["id"] for poll in r.body["data"]][-4:] == [poll.pk for poll in reversed(polls)][-4:]


def test_other_polls_are_another_spaces_whole_polls(space, bench_data):
    others = Poll.objects.exclude(space=space)
    assert others.count() == 5 and others.values("space").distinct().count() == 1
    assert all(poll.options.count() == 10 for poll in others)
    assert Poll.objects.filter(space=space).count() == 5  # the bench's own: four small, one big


def test_post_poll(api, space):
    r = api.post("/v1/polls", fixtures.poll_body(10))
    assert r.status_code == 201
    orm = selectors.live_polls(space).filter(pk=r.body["data"]["id"]).first()  # the ORM's lookup
    assert r.body == {"data": drf_json(presenters.poll(orm, orm.organizer))}
    assert r.body == api.get(f"/v1/polls/{r.body['data']['id']}").body


def test_results_are_the_counts_of_the_votes(api, bench_data):
    _, big = bench_data
    r = api.get(f"/v1/polls/{big.pk}/results")
    orm = selectors.live_polls(big.space).filter(pk=big.pk).first()
    assert r.body == {"data": drf_json(presenters.results(selectors.poll_results(orm)))}
    counted = dict(((o, t), n) for o, t, n in Vote.objects.filter(option__poll=big).values_list("option_id", "type")
                   .annotate(n=Count("*")))
    for option in r.body["data"]["options"]:
        for vote in option["votes"]:
            assert vote["count"] == counted.get((option["id"], vote["type"]), 0)
    assert r.body["data"]["participantCount"] == 40


def test_the_renderer_gives_drfs_json_value_for_any_data():
    from django.utils.translation import gettext_lazy

    data = {"text": "Zoë \u2028 \u2029 \"quoted\" </script>", "lazy": gettext_lazy("lazy"), "n": [1, 2.5, None, True],
            "nested": {"a": [{"b": "c"}]}}
    assert json.loads(JSONRenderer().render(data)) == json.loads(DRFRenderer().render(data))
    odd = {"huge": 2**70, 1: "integer key"}  # orjson refuses these: DRF's renderer answers
    assert json.loads(JSONRenderer().render(odd)) == json.loads(DRFRenderer().render(odd))
    assert JSONRenderer().render(None) == b""


@pytest.mark.parametrize("chunk", [7, 40, 1000])  # streamed in pieces, streamed as one, answered whole
def test_the_participant_list_is_each_participants_own_answer(api, bench_data, monkeypatch, chunk):
    from polls import encoding

    monkeypatch.setattr(encoding, "CHUNK", chunk)
    _, big = bench_data
    respond(big, *[None] * 12, name="Nobody yet")  # no available answer: no spans
    r = api.get(f"/v1/polls/{big.pk}/participants")
    assert r.streaming is (chunk < 41)
    assert len(r.body["data"]) == 41
    # The single-participant endpoint builds its answer the plain way (one dict per span).
    assert r.body["data"] == [api.get(f"/v1/polls/{big.pk}/participants/{p['id']}").body["data"] for p in r.body["data"]]
    assert r.body["data"][-1]["availability"] == []
    assert any(span["modifiers"] == ["ifNeedBe"] for p in r.body["data"] for span in p["availability"])
