"""The private API's OpenAPI document: its own, generated from its views, frozen.

`privateapi/tests/openapi_snapshot.json` was generated from the code, never written by hand:

    DJANGO_SETTINGS_MODULE=config.settings_test .venv/bin/python -c "import django, json; django.setup(); \\
        from privateapi.openapi import document; print(json.dumps(document(), indent=1))" \\
        > privateapi/tests/openapi_snapshot.json

The API is frozen: a change of this document is a change of a contract that must not
change, so unlike `/v1`'s snapshot the comparison includes the prose."""

import json
import re
from pathlib import Path

import pytest

from conftest import openapi_document
from privateapi.serializers import CreatePollInput, PatchPollInput, validated
from privateapi.tests.conftest import private_document

SNAPSHOT = Path(__file__).with_name("openapi_snapshot.json")

# Every route and method, and every field of every answer: adding one fails here.
OPERATIONS = {
    "/api/private/openapi": {"get"},
    "/api/private/polls": {"get", "post"},
    "/api/private/polls/{pollId}": {"get", "patch", "delete"},
    "/api/private/polls/{pollId}/results": {"get"},
    "/api/private/polls/{pollId}/participants": {"get"},
}
POLL = ["id", "title", "description", "location", "timezone", "status", "createdAt", "user", "options", "adminUrl", "inviteUrl"]
FIELDS = {
    "Poll": POLL,
    "ListPollItem": [*POLL, "participantCount"],
    "PollUser": ["name", "image"],
    "PollOption": ["id", "startTime", "duration"],
    "Results": ["pollId", "status", "participantCount", "options", "highScore"],
    "OptionResult": ["id", "startTime", "duration", "votes", "score", "isTopChoice"],
    "VoteCount": ["type", "count"],
    "Participants": ["pollId", "participants"],
    "Participant": ["id", "name", "email", "createdAt"],
    "Deleted": ["id", "deleted"],
    "ListPollsResponse": ["data", "nextCursor"],
    "CreatePollInput": ["title", "description", "location", "requireEmail", "hideParticipants", "hideScores",
                        "disableComments", "spaceId", "organizer", "dates", "slots"],
    "SlotsInput": ["duration", "timezone", "times"],
    "SlotGenerator": ["startDate", "endDate", "days", "startTime", "endTime", "interval"],
    "OrganizerInput": ["email"],
    "PatchPollInput": ["status"],
    "ErrorResponse": ["error"],
    "InvalidInputResponse": ["data", "error", "success"],
    "Issue": ["code", "path", "message"],
}


def test_the_served_document_is_the_snapshot(db):
    assert json.dumps(private_document(), indent=1) == json.dumps(json.loads(SNAPSHOT.read_text()), indent=1)


def test_no_route_method_or_field_is_added(db):
    document = private_document()
    assert {path: set(operations) for path, operations in document["paths"].items()} == OPERATIONS
    schemas = document["components"]["schemas"]
    envelopes = {name for name, schema in schemas.items() if list(schema.get("properties", {})) == ["data"]}
    assert envelopes == {"GetPollResponse", "CreatePollResponse", "PatchPollResponse", "GetPollResultsResponse",
                         "GetPollParticipantsResponse", "DeletePollResponse"}
    assert {name for name, schema in schemas.items() if "properties" in schema} - envelopes == set(FIELDS)
    for name, fields in FIELDS.items():
        assert list(schemas[name]["properties"]) == fields, name


def test_v1_document_does_not_mention_the_private_api(db):
    text = json.dumps(openapi_document())
    assert "/api/private" not in text
    assert all(path.startswith("/v1/") for path in openapi_document()["paths"])


def test_the_document_is_public_and_describes_the_private_api(private_anon, db):
    response = private_anon.get("/api/private/openapi")
    assert response.status_code == 200 and "RateLimit-Remaining" not in response
    assert (response.body["info"]["title"], response.body["openapi"]) == ("Private API (frozen)", "3.1.0")


def test_the_create_examples_are_valid_requests(db):
    media = private_document()["paths"]["/api/private/polls"]["post"]["requestBody"]["content"]["application/json"]
    assert len(media["examples"]) == 3
    for example in media["examples"].values():
        assert validated(CreatePollInput, example["value"])


def test_the_close_operation_is_documented(db):
    operation = private_document()["paths"]["/api/private/polls/{pollId}"]["patch"]
    assert "closed" in operation["description"]
    assert {"200", "400", "401", "403", "404", "422", "429"} <= set(operation["responses"])
    [example] = operation["requestBody"]["content"]["application/json"]["examples"].values()
    assert validated(PatchPollInput, example["value"]) == {"status": "closed"}


def test_the_docs_page_renders_the_document_from_our_own_static_files(client, db):
    response = client.get("/api/private/docs")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "/api/private/openapi" in page
    assert not re.search(r'(src|href)="(https?:)?//', page)


@pytest.mark.parametrize("path", ["/api/private/openapi", "/api/private/docs"])
def test_other_methods_of_the_documents_are_the_plain_text_404(private_anon, path, db):
    response = private_anon.post(path, {})
    assert (response.status_code, response.body) == (404, "404 Not Found")
