"""`/v1/webhooks`: the space's webhook endpoints, their secrets and their delivery log.

Thin views over the same services the back office and `manage.py webhooks` use: the URL
rules, the 5-endpoint limit, rotation and pings behave the same everywhere."""

import json

from django.core.exceptions import RequestDataTooBig
from django.http.request import RawPostDataException
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.response import Response

from core.api.paging import PAGE_PARAMETERS, page_query
from core.api.shapes import deleted
from core.api.views import ApiView
from core.bulkhead import slot_released
from idempotency.views import IDEMPOTENCY_KEY, IdempotentCreate
from webhooks import examples, presenters, selectors, services
from webhooks.models import EVENT_TYPES, Endpoint
from webhooks.rules import WebhookNotFound
from webhooks.serializers import WebhookCreateInput, WebhookUpdateInput

WEBHOOK_ID = OpenApiParameter("webhookId", OpenApiTypes.STR, OpenApiParameter.PATH, description="Webhook endpoint id.")
TAGS = ["webhooks"]


def _url_in(request):
    """The body's `url` when the body is a JSON object with one, peeked at so that its host
    can be resolved before any transaction (`services.url_checked_ahead`); the strict
    parsing, and its refusals, come later as for every body."""
    try:
        body = json.loads(request._request.body)
    except (ValueError, RecursionError, RequestDataTooBig, RawPostDataException):
        return None
    return body.get("url") if isinstance(body, dict) else None


def _get_endpoint(request, webhook_id: str) -> Endpoint:
    endpoint = selectors.space_endpoint(request.auth.space, webhook_id)
    if endpoint is None:
        raise WebhookNotFound()
    return endpoint


class WebhookCollectionView(IdempotentCreate, ApiView):
    query_methods = ("get",)

    @extend_schema(
        operation_id="listWebhooks",
        summary="List webhook endpoints",
        description="The webhook endpoints of the key's space (at most 5), newest first, without their secrets. "
        "Keyset pagination as in `GET /v1/polls`.",
        parameters=PAGE_PARAMETERS,
        responses={200: presenters.WEBHOOK_LIST},
        examples=examples.PAGE,
        tags=TAGS,
    )
    def get(self, request):
        params = page_query(request)
        rows, next_cursor = selectors.list_endpoints(request.auth.space, limit=params["limit"], cursor=params.get("cursor"))
        return Response({"data": [presenters.webhook(row) for row in rows], "nextCursor": next_cursor})

    @extend_schema(
        operation_id="createWebhook",
        summary="Create a webhook endpoint",
        description="Registers a receiver of the space's events, enabled, receiving the events that happen from now "
        "on. The answer carries the signing `secret`, shown this once (and in replays of this request with its "
        "`Idempotency-Key`). A space may have 5 endpoints: a sixth is `TOO_MANY_WEBHOOKS`. A URL that breaks the "
        "rules is `VALIDATION_ERROR` `url: <reason>`.",
        request=WebhookCreateInput,
        parameters=[IDEMPOTENCY_KEY],
        responses={201: presenters.WEBHOOK_WITH_SECRET},
        examples=[OpenApiExample("Two event types", request_only=True,
                                 value={"url": "https://example.com/hooks/polls", "events": ["poll.created", "poll.closed"]}),
                  *examples.CREATED],
        tags=TAGS,
    )
    def post(self, request):
        def validate(body: dict):
            data = WebhookCreateInput.validated(body)

            def create() -> dict:
                # A refusal (ServiceError) is answered with its code by the exception handler.
                endpoint, secret = services.create_endpoint(
                    space=request.auth.space, url=data["url"], event_types=data.get("events")
                )
                return {"data": presenters.webhook_with_secret(endpoint, secret)}

            return create

        with services.url_checked_ahead(_url_in(request), released=slot_released):
            return self.create_idempotently(request, "createWebhook", validate)


class WebhookDetailView(ApiView):
    body_methods = ("patch",)

    @extend_schema(
        operation_id="getWebhook",
        summary="Get a webhook endpoint",
        description="The endpoint's URL, event types and state, without its secret: whether it is enabled, "
        "and if not since when and why, and its count of failed deliveries in a row. `WEBHOOK_NOT_FOUND` when "
        "it does not exist or belongs to another space.",
        parameters=[WEBHOOK_ID],
        responses={200: presenters.WEBHOOK},
        examples=examples.ONE,
        tags=TAGS,
    )
    def get(self, request, webhookId):
        return Response({"data": presenters.webhook(_get_endpoint(request, webhookId))})

    @extend_schema(
        operation_id="updateWebhook",
        summary="Change a webhook endpoint",
        description="Changes the URL, the event types and/or `enabled`; fields left out keep their value. "
        "Nothing changes when any field is refused.",
        parameters=[WEBHOOK_ID],
        request=WebhookUpdateInput,
        responses={200: presenters.WEBHOOK},
        examples=[OpenApiExample("Disable", request_only=True, value={"enabled": False}),
                  OpenApiExample("Move and subscribe to every type", request_only=True,
                                 value={"url": "https://example.com/hooks/v2", "events": list(EVENT_TYPES)}),
                  *examples.ONE],
        tags=TAGS,
    )
    def patch(self, request, webhookId):
        endpoint = _get_endpoint(request, webhookId)
        data = WebhookUpdateInput.validated(self.json_body(request))
        with services.url_checked_ahead(data.get("url"), released=slot_released):
            endpoint = services.update_endpoint(
                endpoint=endpoint, url=data.get("url"), event_types=data.get("events"), enabled=data.get("enabled"),
                disabled_reason="disabled through the API",
            )
        return Response({"data": presenters.webhook(endpoint)})

    @extend_schema(
        operation_id="deleteWebhook",
        summary="Delete a webhook endpoint",
        description="Removes the endpoint with its delivery log; nothing more is sent to it.",
        parameters=[WEBHOOK_ID],
        responses={200: presenters.WEBHOOK_DELETED},
        examples=examples.DELETED,
        tags=TAGS,
    )
    def delete(self, request, webhookId):
        endpoint = _get_endpoint(request, webhookId)
        endpoint_id = endpoint.pk
        services.delete_endpoint(endpoint=endpoint)
        return Response({"data": deleted(endpoint_id)})


class WebhookRotateSecretView(ApiView):
    @extend_schema(
        operation_id="rotateWebhookSecret",
        summary="Rotate a webhook endpoint's secret",
        description="Gives the endpoint a new secret, answered this once. For 24 hours the replaced secret keeps "
        "signing too: every request then carries two signatures, `X-Service-Signature: t=<t>,v1=<new>,v1=<old>`, "
        "so a receiver holding either secret accepts it while you deploy the new one (`previousSecretExpiresAt` "
        "says until when). Rotating again within those 24 hours drops the oldest secret at once. Takes no body.",
        parameters=[WEBHOOK_ID],
        request=None,
        responses={200: presenters.WEBHOOK_WITH_SECRET},
        examples=examples.ROTATED,
        tags=TAGS,
    )
    def post(self, request, webhookId):
        endpoint, secret = services.rotate_secret(endpoint=_get_endpoint(request, webhookId))
        return Response({"data": presenters.webhook_with_secret(endpoint, secret)})


class WebhookPingView(ApiView):
    @extend_schema(
        operation_id="pingWebhook",
        summary="Send a test ping",
        description="Queues `{\"type\": \"ping\", \"data\": {}}` (header `X-Service-Event: ping`), signed like "
        "every event, for the endpoint, even a disabled one, and answers `202` at once with the delivery: `status` "
        "`pending`, no attempt yet. The dispatcher sends it within about a second, like any other delivery; its "
        "outcome (`succeeded`, or `failed` with the attempt's `statusCode` or `error`) appears in "
        "`GET /v1/webhooks/{webhookId}/deliveries`, where the ping is the newest delivery with the same `id`. "
        "The request never waits for your receiver, which may take up to the delivery timeout (10 seconds) or "
        "never answer. A ping is never retried and does not count toward disabling the endpoint. Takes no body.",
        parameters=[WEBHOOK_ID],
        request=None,
        responses={202: presenters.DELIVERY},
        examples=examples.PINGED,
        tags=TAGS,
    )
    def post(self, request, webhookId):
        delivery = services.queue_ping(endpoint=_get_endpoint(request, webhookId))
        # As queued: a dispatcher may already be sending it, but the answer is the same every time.
        return Response({"data": presenters.delivery(delivery, [])}, status=202)


class WebhookDeliveriesView(ApiView):
    query_methods = ("get",)

    @extend_schema(
        operation_id="listWebhookDeliveries",
        summary="List a webhook endpoint's deliveries",
        description="What was sent to the endpoint, newest first (`createdAt`, then `id`, descending), each "
        "delivery with every attempt: when, how long, your receiver's status or the error. Kept for 30 days. "
        "Keyset pagination as in `GET /v1/polls`.",
        parameters=[WEBHOOK_ID, *PAGE_PARAMETERS],
        responses={200: presenters.DELIVERY_LIST},
        examples=examples.DELIVERIES,
        tags=TAGS,
    )
    def get(self, request, webhookId):
        params = page_query(request)
        endpoint = _get_endpoint(request, webhookId)
        rows, next_cursor = selectors.endpoint_delivery_page(endpoint, limit=params["limit"], cursor=params.get("cursor"))
        return Response({"data": [presenters.delivery(row) for row in rows], "nextCursor": next_cursor})
