"""The OpenAPI document's top-level `webhooks` section (OAS 3.1): one entry per event type,
built from `webhooks.catalog` and the envelope and headers the sender uses, so that the
document describes what receivers get without being edited by hand."""

from webhooks.catalog import CATALOG
from webhooks.models import PAYLOAD_VERSION
from webhooks.services import USER_AGENT

ENVELOPE_FIELDS = {
    "version": ({"type": "string", "const": PAYLOAD_VERSION},
                "Payload contract version (also `X-Service-Webhook-Version`)."),
    "id": ({"type": "string"}, "The event id: the same for every endpoint and every retry. Deduplicate on it."),
    "createdAt": ({"type": "string", "format": "date-time", "examples": ["2026-11-22T10:15:30.250Z"]},
                  "When the change happened (UTC, milliseconds), not when the request was sent."),
}

SIGNATURE = (
    "`t=<unix seconds>,v1=<hex>`: `<hex>` is the HMAC-SHA256, keyed with the endpoint's whole secret "
    "(`whsec_...`, as UTF-8), of `<t>.<raw body>` (the timestamp, a dot, and the body bytes exactly as received). "
    "Every attempt is signed afresh (`t` = send time): reject old timestamps (5 minutes) against replays. For 24 "
    "hours after a secret rotation the header carries two signatures, `t=<t>,v1=<new>,v1=<old>`: accept the request "
    "when any `v1` matches. The scheme is Stripe's: its libraries verify it."
)

STANDARD_SIGNATURE = (
    "Standard Webhooks: `v1,<base64>`, the HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>` keyed with "
    "the 32 bytes the secret encodes (the base64url text after `whsec_`); during a rotation one `v1,...` per secret, "
    "space-separated. The `standardwebhooks` libraries verify it given the key bytes, or the secret re-encoded in "
    "standard base64 (`whsec_` + base64 of the same bytes): they read the text after `whsec_` as standard base64."
)

HEADERS = [
    ("X-Service-Event", "The event type, equal to `type`.", {"type": "string"}),
    ("X-Service-Delivery", "Unique per attempt (a retry has a new one): quote it when asking about one request.",
     {"type": "string"}),
    ("X-Service-Webhook-Version", "The payload version, equal to `version`.", {"type": "string", "const": PAYLOAD_VERSION}),
    ("X-Service-Signature", SIGNATURE, {"type": "string", "pattern": r"^t=[0-9]+(,v1=[0-9a-f]{64})+$"}),
    ("webhook-id", "Standard Webhooks: the event id, equal to `id` (the same for every retry).", {"type": "string"}),
    ("webhook-timestamp", "Standard Webhooks: the send time in Unix seconds, equal to `t` of `X-Service-Signature`.",
     {"type": "string", "pattern": "^[0-9]+$"}),
    ("webhook-signature", STANDARD_SIGNATURE, {"type": "string", "pattern": r"^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$"}),
    ("User-Agent", f"`{USER_AGENT}`.", {"type": "string", "const": USER_AGENT}),
]

DELIVERY = (
    "Answer with any 2xx within 10 seconds; anything else (another status, a redirect, a timeout, a refused "
    "connection) fails the attempt, which is retried after 1 min, 5 min, 30 min, 2 h and 12 h. `410 Gone` disables "
    "the endpoint at once (`disabledReason` says so; enable it again to receive events). Delivery is at "
    "least once and unordered: deduplicate on `id` and fetch the current state through the API."
)

_ID_OBJECT = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}


def _component(event_type: str) -> str:
    return "".join(part.capitalize() for part in event_type.split(".")) + "Event"


def _data_schema(spec) -> dict:
    properties, required = {}, []
    if spec.poll:
        properties["poll"] = {"$ref": "#/components/schemas/WebhookPollRef"}
        required.append("poll")
    if spec.participant:
        properties["participant"] = {"$ref": "#/components/schemas/WebhookParticipantRef"}
        required.append("participant")
    for name, schema in spec.extra.items():
        properties[name] = schema
        required.append(name)
    schema = {"type": "object", "properties": properties, "description": "Ids, not resources."}
    if required:
        schema["required"] = required
    return schema


def _envelope_schema(event_type: str, spec) -> dict:
    properties = {
        "version": {**ENVELOPE_FIELDS["version"][0], "description": ENVELOPE_FIELDS["version"][1]},
        "id": {**ENVELOPE_FIELDS["id"][0], "description": ENVELOPE_FIELDS["id"][1]},
        "type": {"type": "string", "const": event_type, "description": "The event type (also `X-Service-Event`)."},
        "createdAt": {**ENVELOPE_FIELDS["createdAt"][0], "description": ENVELOPE_FIELDS["createdAt"][1]},
        "data": _data_schema(spec),
    }
    return {
        "type": "object",
        "description": f"`{event_type}`: {spec.when}",
        "required": list(properties),
        "properties": properties,
    }


def add_webhooks(result, generator, request, public):
    """drf-spectacular postprocessing hook: the `webhooks` section and its components."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["WebhookPollRef"] = {**_ID_OBJECT, "description": "The poll, by id: fetch it with `GET /v1/polls/{pollId}`."}
    schemas["WebhookParticipantRef"] = {
        **_ID_OBJECT, "description": "The participant, by id: `GET /v1/polls/{pollId}/participants/{participantId}`.",
    }
    parameters = [
        {"in": "header", "name": name, "required": True, "description": text, "schema": schema}
        for name, text, schema in HEADERS
    ]
    webhooks = {}
    for event_type, spec in CATALOG.items():
        component = _component(event_type)
        schemas[component] = _envelope_schema(event_type, spec)
        webhooks[event_type] = {
            "post": {
                "operationId": f"{component[0].lower()}{component[1:]}",
                "summary": spec.summary,
                "description": f"{spec.when}\n\nA signed `POST` to each enabled endpoint of the space subscribed to "
                f"`{event_type}`. {DELIVERY}",
                "tags": ["webhooks"],
                "parameters": parameters,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}},
                },
                "responses": {
                    "2XX": {"description": "Received. The body of your answer is ignored (at most 64 KiB are read)."},
                    "default": {"description": "Any other answer fails the attempt; it is retried."},
                },
            }
        }
    result["webhooks"] = webhooks
    return result
