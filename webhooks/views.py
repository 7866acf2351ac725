"""`/v1/webhooks`: the space's webhook endpoints, their secrets and their delivery log.

Thin views over the same services the back office and `manage.py webhooks` use: the URL
rules, the 5-endpoint limit, rotation and pings behave the same everywhere."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.response import Response

from core.api import errors
from core.api.paging import PAGE_PARAMETERS, page_query
from core.api.schema import DeletedSerializer, envelope
from core.api.views import ApiView
from idempotency.views import IDEMPOTENCY_KEY, IdempotentCreate
from webhooks import selectors, services
from webhooks.models import Endpoint
from webhooks.serializers import (
    WebhookCreateInput,
    WebhookDeliverySerializer,
    WebhookSerializer,
    WebhookUpdateInput,
    WebhookWithSecretSerializer,
)

WebhookResponse = envelope("WebhookResponse", WebhookSerializer)
WebhookSecretResponse = envelope("WebhookSecretResponse", WebhookWithSecretSerializer)
WebhookListResponse = envelope("WebhookListResponse", WebhookSerializer, many=True, paginated=True)
WebhookDeletedResponse = envelope("WebhookDeletedResponse", DeletedSerializer)
DeliveryResponse = envelope("WebhookDeliveryResponse", WebhookDeliverySerializer)
DeliveryListResponse = envelope("WebhookDeliveryListResponse", WebhookDeliverySerializer, many=True, paginated=True)

WEBHOOK_ID = OpenApiParameter("webhookId", OpenApiTypes.STR, OpenApiParameter.PATH, description="Webhook endpoint id.")
TAGS = ["webhooks"]


def _get_endpoint(request, webhook_id: str) -> Endpoint:
    endpoint = selectors.space_endpoint(request.auth.space, webhook_id)
    if endpoint is None:
        raise errors.WebhookNotFound()
    return endpoint


class WebhookCollectionView(IdempotentCreate, ApiView):
    query_methods = ("get",)

    @extend_schema(
        operation_id="listWebhooks",
        summary="List webhook endpoints",
        description="The webhook endpoints of the key's space (at most 5), newest first, without their secrets. "
        "Keyset pagination as in `GET /v1/polls`.",
        parameters=PAGE_PARAMETERS,
        responses={200: WebhookListResponse},
        tags=TAGS,
    )
    def get(self, request):
        params = page_query(request)
        rows, next_cursor = selectors.list_endpoints(request.auth.space, limit=params["limit"], cursor=params.get("cursor"))
        return Response({"data": rows, "nextCursor": next_cursor})

    @extend_schema(
        operation_id="createWebhook",
        summary="Create a webhook endpoint",
        description="Registers a receiver of the space's events, enabled, receiving the events that happen from now "
        "on. The answer carries the signing `secret`, shown this once (and in replays of this request with its "
        "`Idempotency-Key`). A space may have 5 endpoints: a sixth is `TOO_MANY_WEBHOOKS`. A URL that breaks the "
        "rules is `VALIDATION_ERROR` `url: <reason>`.",
        request=WebhookCreateInput,
        parameters=[IDEMPOTENCY_KEY],
        responses={201: WebhookSecretResponse},
        examples=[OpenApiExample("Two event types", request_only=True,
                                 value={"url": "https://example.com/hooks/polls", "events": ["poll.created", "poll.closed"]})],
        tags=TAGS,
    )
    def post(self, request):
        def create(body: dict) -> dict:
            serializer = WebhookCreateInput(data=body)
            serializer.is_valid(raise_exception=True)
            data = serializer.validated_data
            # A refusal (ServiceError) is answered with its code by the exception handler.
            endpoint, secret = services.create_endpoint(
                space=request.auth.space, url=data["url"], event_types=data.get("events")
            )
            return {"data": {**selectors.endpoint_dict(endpoint), "secret": secret}}

        return self.create_idempotently(request, "createWebhook", create)


class WebhookDetailView(ApiView):
    @extend_schema(operation_id="getWebhook", summary="Get a webhook endpoint", parameters=[WEBHOOK_ID],
                   description="`WEBHOOK_NOT_FOUND` when it does not exist or belongs to another space.",
                   responses={200: WebhookResponse}, tags=TAGS)
    def get(self, request, webhookId):
        return Response({"data": selectors.endpoint_dict(_get_endpoint(request, webhookId))})

    @extend_schema(
        operation_id="updateWebhook",
        summary="Change a webhook endpoint",
        description="Changes the URL, the event types and/or `enabled`; fields left out keep their value. "
        "Nothing changes when any field is refused.",
        parameters=[WEBHOOK_ID],
        request=WebhookUpdateInput,
        responses={200: WebhookResponse},
        tags=TAGS,
    )
    def patch(self, request, webhookId):
        endpoint = _get_endpoint(request, webhookId)
        serializer = WebhookUpdateInput(data=self.json_body(request))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        endpoint = services.update_endpoint(
            endpoint=endpoint, url=data.get("url"), event_types=data.get("events"), enabled=data.get("enabled"),
            disabled_reason="disabled through the API",
        )
        return Response({"data": selectors.endpoint_dict(endpoint)})

    @extend_schema(
        operation_id="deleteWebhook",
        summary="Delete a webhook endpoint",
        description="Removes the endpoint with its delivery log; nothing more is sent to it.",
        parameters=[WEBHOOK_ID],
        responses={200: WebhookDeletedResponse},
        tags=TAGS,
    )
    def delete(self, request, webhookId):
        endpoint = _get_endpoint(request, webhookId)
        endpoint_id = endpoint.pk
        services.delete_endpoint(endpoint=endpoint)
        return Response({"data": {"id": endpoint_id, "deleted": True}})


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
        responses={200: WebhookSecretResponse},
        tags=TAGS,
    )
    def post(self, request, webhookId):
        endpoint, secret = services.rotate_secret(endpoint=_get_endpoint(request, webhookId))
        return Response({"data": {**selectors.endpoint_dict(endpoint), "secret": secret}})


class WebhookPingView(ApiView):
    @extend_schema(
        operation_id="pingWebhook",
        summary="Send a test ping",
        description="Sends `{\"type\": \"ping\", \"data\": {}}` (header `X-Service-Event: ping`), signed like every "
        "event, to the endpoint now, even a disabled one, and answers when it is done (at most 10 seconds): the "
        "delivery with its one attempt. A ping is never retried and does not count toward disabling the endpoint; "
        "a ping your receiver refused is still a 200 here, with `status` `failed` and the attempt's `error`. "
        "Takes no body.",
        parameters=[WEBHOOK_ID],
        request=None,
        responses={200: DeliveryResponse},
        tags=TAGS,
    )
    def post(self, request, webhookId):
        delivery = services.send_ping(endpoint=_get_endpoint(request, webhookId))
        return Response({"data": selectors.delivery_with_attempts(delivery.pk)})


class WebhookDeliveriesView(ApiView):
    query_methods = ("get",)

    @extend_schema(
        operation_id="listWebhookDeliveries",
        summary="List a webhook endpoint's deliveries",
        description="What was sent to the endpoint, newest first (`createdAt`, then `id`, descending), each "
        "delivery with every attempt: when, how long, your receiver's status or the error. Kept for 30 days. "
        "Keyset pagination as in `GET /v1/polls`.",
        parameters=[WEBHOOK_ID, *PAGE_PARAMETERS],
        responses={200: DeliveryListResponse},
        tags=TAGS,
    )
    def get(self, request, webhookId):
        params = page_query(request)
        endpoint = _get_endpoint(request, webhookId)
        rows, next_cursor = selectors.endpoint_delivery_page(endpoint, limit=params["limit"], cursor=params.get("cursor"))
        return Response({"data": rows, "nextCursor": next_cursor})
