"""Example responses of `/v1/webhooks`, shown in the OpenAPI document and the `/docs`
reference. Tests validate each against its response schema."""

from core.api.schema import response_example as example

WEBHOOK_ID = "sh58bniryxmd9hm41eukbc1y"

WEBHOOK = {
    "id": WEBHOOK_ID,
    "url": "https://example.com/hooks/polls",
    "events": ["poll.created", "poll.closed"],
    "enabled": True,
    "payloadVersion": "2026-09-20",
    "createdAt": "2030-05-20T08:15:02.658Z",
    "disabledAt": None,
    "disabledReason": None,
    "failedInARow": 0,
    "previousSecretExpiresAt": None,
}
SECRET = "whsec_xAuyPxnCHdxK4Gb1VA4WyNNz5VKBB6SUzV8EU_MEGRE"

DELIVERY = {
    "id": "baohc6g8e3k10moqtczk4uze",
    "event": {"id": "oqequ9jne1edcxj2zdrb8yr8", "type": "poll.created", "createdAt": "2030-05-20T08:20:11.003Z"},
    "status": "succeeded",
    "createdAt": "2030-05-20T08:20:11.003Z",
    "nextAttemptAt": None,
    "finishedAt": "2030-05-20T08:20:41.377Z",
    "attempts": [
        {"id": "xk610qvcriyt08vp4fbx9qjo", "startedAt": "2030-05-20T08:20:11.010Z", "finishedAt": "2030-05-20T08:20:21.012Z",
         "durationMs": 10002, "statusCode": None, "succeeded": False, "error": "timed out after 10 seconds"},
        {"id": "m3c9d0f1e2a4b6c8d0e2f4a6", "startedAt": "2030-05-20T08:20:41.211Z", "finishedAt": "2030-05-20T08:20:41.377Z",
         "durationMs": 166, "statusCode": 200, "succeeded": True, "error": None},
    ],
}

PING = {
    **DELIVERY,
    "event": {"id": "p1n9q2r3s4t5u6v7w8x9y0z1", "type": "ping", "createdAt": "2030-05-20T08:16:00.100Z"},
    "status": "pending",
    "createdAt": "2030-05-20T08:16:00.100Z",
    "nextAttemptAt": "2030-05-20T08:16:00.100Z",
    "finishedAt": None,
    "attempts": [],
}

CREATED = [example("With its secret", {"data": {**WEBHOOK, "secret": SECRET}}, 201)]
ONE = [example("An endpoint", {"data": WEBHOOK})]
PAGE = [example("One page", {"data": [WEBHOOK], "nextCursor": None})]
DELETED = [example("Deleted", {"data": {"id": WEBHOOK_ID, "deleted": True}})]
ROTATED = [example("The new secret", {"data": {**WEBHOOK, "previousSecretExpiresAt": "2030-05-21T08:15:02.823Z",
                                               "secret": "whsec_J_AlFF_ruLNBBGkco3P8Ejsnnu-JJihG_pdmaFOJOTA"}})]
PINGED = [example("Queued for your receiver", {"data": PING}, 202)]
DELIVERIES = [example("A delivery retried once", {"data": [DELIVERY], "nextCursor": None})]
