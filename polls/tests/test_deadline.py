"""The organizer's deadline (`closes_at`, not part of the API): set through `update_poll`,
the auto-close sweep closes the poll at it (reason `auto`), reopening clears it."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from core.errors import ServiceError
from polls import services
from polls.models import Poll
from polls.tests.factories import make_poll
from webhooks.models import Event

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def kinds(poll) -> list[tuple[str, str | None]]:
    return [(e.type, e.data.get("reason")) for e in Event.objects.filter(poll_id=poll.pk).order_by("created_at", "id")]


def test_the_sweep_closes_the_poll_at_its_deadline_and_reopening_clears_it(space):
    with time_machine.travel(NOW, tick=False):
        poll = make_poll(space)  # options in 2030: far from past
        services.update_poll(poll=poll, details={"closes_at": NOW + timedelta(minutes=30, microseconds=5)})
        assert Poll.objects.get(pk=poll.pk).closes_at == NOW + timedelta(minutes=30)
    with time_machine.travel(NOW + timedelta(minutes=29, seconds=59), tick=False):
        assert services.close_past_polls() == []
    with time_machine.travel(NOW + timedelta(minutes=30), tick=False):
        assert services.close_past_polls() == [poll.pk]
        assert services.close_past_polls() == []  # once
    assert Poll.objects.get(pk=poll.pk).status == Poll.Status.CLOSED
    assert sorted(kinds(poll)) == [("poll.closed", "auto"), ("poll.created", None), ("poll.updated", None)]
    with time_machine.travel(NOW + timedelta(hours=1), tick=False):
        services.reopen_poll(poll=poll)
        assert Poll.objects.get(pk=poll.pk).closes_at is None
        assert services.close_past_polls() == []  # stays open


def test_a_deadline_must_be_a_future_instant(space):
    poll = make_poll(space)
    for value, message in ((datetime(2000, 1, 1, tzinfo=UTC), "must be in the future"),
                           (datetime(2031, 1, 1), "with a time zone"), ("2031-01-01", "with a time zone")):
        with pytest.raises(ServiceError, match=message):
            services.update_poll(poll=poll, details={"closes_at": value})
    assert Poll.objects.get(pk=poll.pk).closes_at is None and kinds(poll) == [("poll.created", None)]
    services.update_poll(poll=poll, details={"closes_at": datetime(2031, 1, 1, tzinfo=UTC)})
    services.update_poll(poll=poll, details={"closes_at": None})
    assert Poll.objects.get(pk=poll.pk).closes_at is None
    assert [kind for kind, _ in kinds(poll)] == ["poll.created", "poll.updated", "poll.updated"]


def test_the_api_poll_shape_does_not_show_it(api):
    created = api.post("/v1/polls", {"title": "Lunch", "kind": "date", "options": [{"date": "2031-05-02"}]}).body["data"]
    before = api.get(f"/v1/polls/{created['id']}").body["data"]
    services.update_poll(poll=Poll.objects.get(pk=created["id"]), details={"closes_at": datetime(2031, 1, 1, tzinfo=UTC)})
    after = api.get(f"/v1/polls/{created['id']}").body["data"]
    assert set(after) == set(before) and not any("close" in key.lower() for key in after)
