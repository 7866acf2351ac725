"""The served OpenAPI document is the committed snapshot, apart from its prose.

`tests/openapi_snapshot.json` was generated from the code, never written by hand; every
response shape, parameter, status and header of the document must stay what it says, so a
refactoring that changes the wire contract by accident fails here. The `description` and
`summary` texts are left out of the comparison: rewording them is not a contract change.

A change of the document that is meant (a new field, operation or error code) regenerates
the snapshot with the same command and commits it with the change, so that the diff shows
the new contract:

    DJANGO_SETTINGS_MODULE=config.settings_test .venv/bin/python manage.py spectacular \\
        --format openapi-json --file tests/openapi_snapshot.json
"""

import json
from pathlib import Path

from conftest import openapi_document

SNAPSHOT = Path(__file__).with_name("openapi_snapshot.json")
PROSE = ("description", "summary")


def without_prose(node):
    """The document without its `description` and `summary` texts (a schema property that
    happens to be called `description` is an object, not a text, and stays)."""
    if isinstance(node, dict):
        return {key: without_prose(value) for key, value in node.items() if not (key in PROSE and isinstance(value, str))}
    if isinstance(node, list):
        return [without_prose(item) for item in node]
    return node


def test_the_served_document_is_the_snapshot_apart_from_descriptions(db):
    served, snapshot = without_prose(openapi_document()), without_prose(json.loads(SNAPSHOT.read_text()))
    # Compared as text: the order of keys (properties, operations, components) is kept too.
    assert json.dumps(served, indent=1) == json.dumps(snapshot, indent=1)


def test_descriptions_are_what_the_comparison_leaves_out():
    document = {"info": {"description": "x", "title": "t"}, "properties": {"description": {"type": "string", "description": "y"}}}
    assert without_prose(document) == {"info": {"title": "t"}, "properties": {"description": {"type": "string"}}}
