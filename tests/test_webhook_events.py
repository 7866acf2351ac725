"""End to end: every event type reaches a subscribed endpoint after the action that causes
it (the API, the back office's service functions, the auto-close job), with the envelope,
headers and data of the contract, signed so that an independent implementation (Stripe's)
verifies it."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from polls import services as polls
from polls.models import Participant, Poll
from webhooks import signals
from webhooks.models import CONTRACT_EVENT_TYPES, PAYLOAD_VERSION, Delivery, Endpoint, Event
from webhooks.services import create_endpoint, disable_endpoint, enable_endpoint
from webhooks.tests.fixtures import received, run_worker, verify

INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def hook(receiver, local_urls, space):
    receiver.expect_request("/hook", method="POST").respond_with_data("ok")
    return create_endpoint(space=space, url=receiver.url_for("/hook"))


class Inbox:
    """What the receiver got so far; `expect` checks the one request the last action
    caused and returns its body."""

    def __init__(self, receiver, endpoint, secret):
        self.receiver, self.endpoint, self.secret = receiver, endpoint, secret
        self.seen = 0
        self.types: list[str] = []

    def expect(self, type: str, data: dict) -> dict:
        assert run_worker() == 1, f"{type}: exactly one delivery after the action"
        got = received(self.receiver)[self.seen:]
        assert len(got) == 1, f"{type}: exactly one request"
        self.seen += 1
        [request] = got
        body, headers = request["body"], request["headers"]
        assert body == {"version": PAYLOAD_VERSION, "id": body["id"], "type": type, "createdAt": body["createdAt"],
                        "data": data}
        assert re.fullmatch(r"[a-z0-9]{20,30}", body["id"]) and INSTANT.match(body["createdAt"])
        assert headers["Content-Type"] == "application/json"
        assert headers["User-Agent"] == "Service-Webhooks/1.0"
        assert headers["X-Service-Event"] == type
        assert headers["X-Service-Webhook-Version"] == PAYLOAD_VERSION
        assert headers["X-Service-Delivery"]
        assert verify(request["raw"], headers, self.secret)
        self.types.append(type)
        return body


def test_every_event_type_arrives_after_the_action_that_causes_it(api, space, hook, receiver, time_machine):
    time_machine.move_to(datetime(2029, 12, 1, 12, tzinfo=UTC), tick=True)
    inbox = Inbox(receiver, *hook)
    assert run_worker() == 0

    created = api.post("/v1/polls", {
        "title": "Planning", "kind": "time", "duration": 60, "timeZone": "Europe/London",
        "options": [{"startTime": "2030-01-01T10:00:00"}, {"startTime": "2030-01-02T10:00:00"}],
    })
    assert created.status_code == 201, created.body
    poll_id = created.body["data"]["id"]
    poll = Poll.objects.get(pk=poll_id)
    first_option = created.body["data"]["options"][0]["id"]
    ref = {"poll": {"id": poll_id}}
    body = inbox.expect("poll.created", ref)
    assert body["createdAt"] == created.body["data"]["createdAt"]

    polls.update_poll(poll=poll, details={"title": "Quarterly planning"})
    inbox.expect("poll.updated", ref)

    participant = polls.create_response(poll=poll, name="Ann", votes={first_option: "yes"})
    inbox.expect("poll.participant.created", {**ref, "participant": {"id": participant.pk}})

    polls.update_response(participant=participant, name="Anna")
    inbox.expect("poll.participant.updated", {**ref, "participant": {"id": participant.pk}})

    polls.delete_response(participant=Participant.objects.get(pk=participant.pk))
    inbox.expect("poll.participant.deleted", {**ref, "participant": {"id": participant.pk}})

    polls.close_poll(poll=poll)
    inbox.expect("poll.closed", {**ref, "reason": "manual"})

    polls.reopen_poll(poll=poll)
    inbox.expect("poll.reopened", ref)

    polls.schedule_poll(poll=poll, option_id=first_option)
    inbox.expect("poll.scheduled", {**ref, "event": {
        "start": "2030-01-01T10:00:00.000Z", "end": "2030-01-01T11:00:00.000Z", "allDay": False,
    }})

    polls.cancel_poll(poll=poll)  # an added type: subscribed by default
    inbox.expect("poll.canceled", ref)

    polls.reopen_poll(poll=poll)
    inbox.expect("poll.reopened", ref)
    time_machine.shift(timedelta(days=33))  # every option has passed
    assert polls.close_past_polls() == [poll_id]
    inbox.expect("poll.closed", {**ref, "reason": "auto"})

    assert api.delete(f"/v1/polls/{poll_id}").status_code == 200
    inbox.expect("poll.deleted", ref)
    assert api.get(f"/v1/polls/{poll_id}").status_code == 404

    polls.restore_poll(poll=poll)  # an added type too
    inbox.expect("poll.restored", ref)

    assert set(CONTRACT_EVENT_TYPES) <= set(inbox.types)
    assert run_worker() == 0  # nothing else was sent


def test_an_all_day_poll_scheduled_sends_midnight_to_midnight(api, space, hook, receiver):
    inbox = Inbox(receiver, *hook)
    created = api.post("/v1/polls", {"title": "Party", "kind": "date", "options": [{"date": "2030-05-17"}]})
    poll_id = created.body["data"]["id"]
    inbox.expect("poll.created", {"poll": {"id": poll_id}})
    polls.schedule_poll(poll=Poll.objects.get(pk=poll_id), option_id=created.body["data"]["options"][0]["id"])
    inbox.expect("poll.scheduled", {"poll": {"id": poll_id}, "event": {
        "start": "2030-05-17T00:00:00.000Z", "end": "2030-05-18T00:00:00.000Z", "allDay": True,
    }})


def test_a_poll_created_where_no_endpoint_is_enabled_is_recorded_fanned_out_and_wakes_nothing(
    api, space, receiver, local_urls, django_capture_on_commit_callbacks
):
    """POST /v1/polls reads with the key whether the space has an enabled endpoint: where
    none is, `poll.created` is recorded as fanned out already (to nobody) and no dispatcher
    is woken; once one is enabled, the next poll's event waits for the fan-out and arrives."""
    woken = []

    def wake(sender, *, event_id=None, **_):
        woken.append(event_id)

    def create(title: str) -> Event:
        with django_capture_on_commit_callbacks(execute=True):
            created = api.post("/v1/polls", {"title": title, "kind": "date", "options": [{"date": "2030-01-01"}]})
        assert created.status_code == 201, created.body
        return Event.objects.get(poll_id=created.body["data"]["id"], type="poll.created")

    signals.work_waiting.connect(wake)
    try:
        quiet = create("No endpoint yet")
        assert quiet.dispatched_at == quiet.created_at
        assert woken == []

        endpoint, secret = create_endpoint(space=space, url=receiver.url_for("/hook"))
        disable_endpoint(endpoint=endpoint)
        quiet = create("A disabled endpoint")
        assert quiet.dispatched_at == quiet.created_at
        assert woken == []
        assert run_worker() == 0 and not Delivery.objects.exists()

        receiver.expect_request("/hook", method="POST").respond_with_data("ok")
        enable_endpoint(endpoint=Endpoint.objects.get(pk=endpoint.pk))
        heard = create("An enabled endpoint")
        assert heard.dispatched_at is None
        assert woken == [heard.id]
        assert run_worker() == 1
        [request] = received(receiver)
        assert request["body"]["id"] == heard.id and verify(request["raw"], request["headers"], secret)
    finally:
        signals.work_waiting.disconnect(wake)
