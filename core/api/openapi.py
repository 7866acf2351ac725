from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from core.api.renderers import JSONRenderer
from core.api.views import ApiView


class _JsonOnly(BaseContentNegotiation):
    def select_parser(self, request, parsers):
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class OpenApiView(ApiView, SpectacularAPIView):
    """`GET /v1/openapi`: public, not rate limited, served even in maintenance."""

    public = True
    authentication_classes = []
    permission_classes = []
    throttle_classes = []
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _JsonOnly
    _cached = None

    def handle_exception(self, exc):
        # An error (POST /v1/openapi: 404) is the plain JSON envelope, not an OpenAPI document.
        self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return super().handle_exception(exc)

    @extend_schema(
        operation_id="getOpenApi",
        summary="This OpenAPI document",
        description="The machine-readable OpenAPI 3.1 description of the API. Public: needs no key, "
        "is not rate limited and is served during maintenance.",
        auth=[],
        tags=["meta"],
        responses={200: {"type": "object", "description": "An OpenAPI 3.1 document."}},
    )
    def get(self, request, *args, **kwargs):
        # The document depends only on the code: build it once per process.
        if OpenApiView._cached is None:
            OpenApiView._cached = super().get(request, *args, **kwargs).data
        return Response(OpenApiView._cached)
