"""Response shapes (core/api/shapes.py): the OpenAPI schema generated from a `TypedDict`, and
the presenters that build the answers agree with their shapes key for key, in order."""

from typing import Annotated, NotRequired, TypedDict

from core.api.shapes import Choices, Components, Count, Instant, envelope, one_of
from polls import presenters as polls
from polls.tests.factories import date_poll_body, respond
from webhooks import presenters as webhooks
from webhooks.tests.fixtures import run_worker


class Inner(TypedDict):
    """An inner shape."""

    id: str


class Other(TypedDict):
    name: str


class Outer(TypedDict):
    """An outer shape."""

    at: Annotated[Instant | None, "When."]
    count: Count
    kind: Annotated[str, Choices(["a", "b"]), "Which."]
    inner: Annotated[Inner, "The inner one."]
    either: list[one_of("Either", Inner, Other)]
    note: NotRequired[str]


def test_a_typed_dict_becomes_a_component_and_its_references():
    components = Components()
    assert components.schema(Outer) == {"$ref": "#/components/schemas/Outer"}
    assert components.found == {
        "Outer": {
            "type": "object",
            "description": "An outer shape.",
            "properties": {
                "at": {"type": ["string", "null"], "format": "date-time", "description": "When."},
                "count": {"type": "integer", "minimum": 0},
                "kind": {"enum": ["a", "b"], "type": "string", "description": "Which."},
                "inner": {"allOf": [{"$ref": "#/components/schemas/Inner"}], "description": "The inner one."},
                "either": {"type": "array", "items": {"$ref": "#/components/schemas/Either"}},
                "note": {"type": "string"},
            },
            "required": ["at", "count", "either", "inner", "kind"],
        },
        "Inner": {"type": "object", "description": "An inner shape.", "properties": {"id": {"type": "string"}},
                  "required": ["id"]},
        "Either": {"oneOf": [{"$ref": "#/components/schemas/Inner"}, {"$ref": "#/components/schemas/Other"}]},
        "Other": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    }


def test_an_envelope_with_a_cursor():
    components = Components()
    assert envelope("OuterList", Inner, many=True, paginated=True).schema(components) == {
        "type": "object",
        "properties": {
            "data": {"type": "array", "items": {"$ref": "#/components/schemas/Inner"}},
            "nextCursor": {"type": ["string", "null"],
                           "description": "Pass as `cursor` for the next page; null on the last page."},
        },
        "required": ["data", "nextCursor"],
    }


def keys(shape) -> list[str]:
    return list(shape.__annotations__)


def test_the_presenters_write_the_keys_of_their_shapes_in_order(api, space, hook):
    """The conforming client checks types; this checks that no builder writes a key its
    shape does not declare (the document would not show it) and that the order is the shape's."""
    created = api.post("/v1/polls", date_poll_body("2030-01-02", "2030-01-03")).body["data"]
    from polls.models import Poll

    respond(Poll.objects.get(pk=created["id"]), "yes", "ifNeedBe")
    assert list(created) == keys(polls.Poll)
    assert list(created["organizer"]) == keys(polls.Organizer)
    assert list(created["options"][0]) == keys(polls.DateOption)
    results = api.get(f"/v1/polls/{created['id']}/results").body["data"]
    assert list(results) == keys(polls.Results)
    assert list(results["options"][0]) == keys(polls.DateResultOption)
    assert list(results["options"][0]["votes"][0]) == keys(polls.VoteCount)
    [participant] = api.get(f"/v1/polls/{created['id']}/participants").body["data"]
    assert list(participant) == keys(polls.Participant)
    assert list(participant["availability"][0]) == keys(polls.AvailabilitySpan)
    endpoint, _ = hook
    assert list(api.get(f"/v1/webhooks/{endpoint.id}").body["data"]) == keys(webhooks.Webhook)
    assert list(api.post(f"/v1/webhooks/{endpoint.id}/rotate-secret").body["data"]) == keys(webhooks.WebhookWithSecret)
    delivery = api.post(f"/v1/webhooks/{endpoint.id}/ping").body["data"]
    assert list(delivery) == keys(webhooks.WebhookDelivery)
    assert list(delivery["event"]) == keys(webhooks.WebhookDeliveryEvent)
    run_worker()
    delivery = api.get(f"/v1/webhooks/{endpoint.id}/deliveries").body["data"][0]
    assert list(delivery["attempts"][0]) == keys(webhooks.WebhookAttempt)
