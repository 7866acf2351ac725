"""The base view every `/v1` endpoint derives from.

It fixes the order of checks the contract prescribes: route and method (404), maintenance
(503), Authorization header (400), key (401), Pro subscription (403), rate limit (429/503),
then the endpoint itself (a query parameter the operation does not have: 400). Rate-limit
headers are added to every response the limiter saw.
"""

from collections.abc import Callable

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import errors
from config.maintenance import maintenance_enabled
from idempotency import services as idempotency
from ratelimit.limiter import consume

_HANDLER_METHODS = ("get", "post", "put", "patch", "delete")

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": idempotency.MAX_KEY_LENGTH, "pattern": idempotency.KEY_PATTERN},
    OpenApiParameter.HEADER,
    description="Makes the create safe to retry: a request with the key and the same body within 24 hours "
    "of a success gets the first answer again (status 201, same body, header `Idempotent-Replayed: true`) "
    "and creates nothing; the same key with another body, or on another operation, is `VALIDATION_ERROR`. "
    "Keys are scoped to the space; 1-255 printable ASCII characters without spaces (e.g. a UUID). "
    "A request that failed stores nothing and may be retried with the same key.",
)


class ApiView(APIView):
    #: Public views (the OpenAPI document) skip maintenance, authentication and limits.
    public = False
    #: Handler methods that read query parameters (and validate them themselves); any query
    #: parameter sent to another is an unknown field.
    query_methods: tuple[str, ...] = ()

    def initial(self, request, *args, **kwargs):
        method = request.method.lower()
        if method not in _HANDLER_METHODS or not hasattr(self, method):
            raise errors.NotFound()
        if not self.public and maintenance_enabled():
            raise errors.ServiceUnavailable(
                "The service is down for maintenance.",
                headers={"Retry-After": str(settings.MAINTENANCE_RETRY_AFTER)},
            )
        super().initial(request, *args, **kwargs)
        if not self.public:
            # Raises 429 or 503 itself; on success returns the RateLimit-* headers.
            request.ratelimit_headers = consume(request.auth.space)
        if method not in self.query_methods and request.query_params:
            raise errors.ValidationFailed("; ".join(f"{name}: unknown field" for name in request.query_params))

    @property
    def default_response_headers(self):
        # No `Allow` header: HEAD and OPTIONS are not served (404), so it would mislead.
        return {}

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in getattr(request, "ratelimit_headers", {}).items():
            response[name] = value
        return response

    def json_body(self, request) -> dict:
        """The parsed JSON object of a request that must have one."""
        if request.stream is None:
            raise errors.ValidationFailed("body: a JSON object is required")
        media_type = request.content_type.split(";")[0].strip().lower()
        if media_type != "application/json":
            raise errors.ValidationFailed("body: Content-Type must be application/json")
        return request.data

    def create_idempotently(self, request, operation: str, create: Callable[[dict], dict]) -> Response:
        """201 with `create(body)`, at most once per `Idempotency-Key` (when the request has
        one) in 24 hours; a replay carries `Idempotent-Replayed: true`."""
        key = request.headers.get("Idempotency-Key")
        if key is not None and not idempotency.valid_key(key):
            raise errors.ValidationFailed(
                f"Idempotency-Key: must be 1-{idempotency.MAX_KEY_LENGTH} printable ASCII characters without spaces"
            )
        body = self.json_body(request)
        if key is None:
            return Response(create(body), status=201)
        try:
            status, data, replayed = idempotency.run(
                space=request.auth.space, key=key, operation=operation, body=body, create=lambda: (201, create(body))
            )
        except idempotency.KeyReused as exc:
            raise errors.ValidationFailed(str(exc))
        return Response(data, status=status, headers={"Idempotent-Replayed": "true"} if replayed else None)
