"""The base view every `/v1` endpoint derives from.

It fixes the order of checks the contract prescribes: route and method (404), maintenance
(503), Authorization header (400), key (401), Pro subscription (403), rate limit (429/503),
then the endpoint itself (a query parameter the operation does not have, or a body where
the operation documents none: 400). Rate-limit headers are added to every response the
limiter saw. A create validates its body while the limiter counts the request and reads
its answer before anything else (`counted_late`): the same order of answers.
"""

from django.conf import settings
from rest_framework.exceptions import APIException
from rest_framework.views import APIView

from core.api import errors
from core.maintenance import maintenance_enabled

_HANDLER_METHODS = ("get", "post", "put", "patch", "delete")


def _has_body(request) -> bool:
    """Whether the request came with a body (config/wsgi.py gives a chunked body its length)."""
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) > 0
    except ValueError:
        return True


def _without_renderer_context(response) -> None:
    response.renderer_context = None  # holding the response itself once rendered (ApiView.dispatch)


class ApiView(APIView):
    #: Public views (the OpenAPI document) skip maintenance, authentication and limits.
    public = False
    #: Handler methods that read query parameters (and validate them themselves); any query
    #: parameter sent to another is an unknown field.
    query_methods: tuple[str, ...] = ()
    #: Handler methods whose operation documents a request body; any other refuses one (even
    #: an ignored body would let a client believe it was used: `{"secret": ...}` on a rotation).
    body_methods: tuple[str, ...] = ()
    #: Handler methods that read the rate limiter's answer themselves (`counted`), after
    #: validating their body and before anything else, so that Redis counts the request while
    #: they validate; any other handler runs once the answer is read.
    counted_late: tuple[str, ...] = ()

    def dispatch(self, request, *args, **kwargs):
        response = super().dispatch(request, *args, **kwargs)
        # Once answered, the view lets go of what it holds. A view, its DRF request and its
        # response refer to one another (the view holds the request, the response and, from
        # Django's `setup`, `head` as a method of itself; the request's parser context holds
        # the view and the request; a DRF `Response` puts itself into its renderer context
        # when rendered), so a request's objects (dozens, with its body and the response's
        # bytes) waited for the garbage collector, which then ran often, the memory held
        # until then. Without the cycles they are freed as soon as the server is done with
        # the response.
        answered = self.__dict__.get("request")
        if answered is not None:
            answered.parser_context = None
        self.__dict__.clear()
        if getattr(response, "renderer_context", None) is not None:  # rendered by the handler, after this
            response.add_post_render_callback(_without_renderer_context)
        return response

    def initial(self, request, *args, **kwargs):
        method = request.method.lower()
        if method not in _HANDLER_METHODS or not hasattr(self, method):
            raise errors.NotFound()
        if not self.public and maintenance_enabled():
            raise errors.ServiceUnavailable(
                "The service is down for maintenance.",
                headers={"Retry-After": str(settings.MAINTENANCE_RETRY_AFTER)},
            )
        # Authentication, permissions, then throttles (the rate limit: settings.REST_FRAMEWORK),
        # whose count is read now or by the handler (`counted_late`).
        super().initial(request, *args, **kwargs)
        if method not in self.counted_late:
            self.counted(request)
        # Django parses a query string into a QueryDict on first use: not for an empty one.
        if method not in self.query_methods and request.META.get("QUERY_STRING") and request.query_params:
            raise errors.ValidationFailed("; ".join(f"{name}: unknown field" for name in request.query_params))
        if method not in self.body_methods and _has_body(request):
            raise errors.ValidationFailed("body: this operation takes no body")

    def counted(self, request) -> None:
        """Reads the rate limiter's answer to the request, which the throttle counted during
        `initial`: its RateLimit-* headers for the response, or the 429 or 503 raised. Read
        once; nothing to read for a public view or a request refused before the throttle."""
        answer = getattr(request, "count_answer", None)
        if answer is None:
            return
        request.count_answer = None
        request.ratelimit_headers = answer()

    def handle_exception(self, exc):
        # Refused before the handler read the limiter's answer (`counted_late`: a body that
        # is not valid): the answer first, as if the handler had waited for it, so that a
        # 429 or 503 is the response.
        if getattr(self.request, "count_answer", None) is not None:
            # What reading it raises is the response instead: a 429 or 503. Anything else (a
            # database error while reading it) leaves from here, as DRF's own handling would
            # re-raise it.
            try:
                self.counted(self.request)
            except APIException as refused:
                exc = refused
        return super().handle_exception(exc)

    @property
    def default_response_headers(self):
        # No `Allow` header: HEAD and OPTIONS are not served (404), so it would mislead.
        return {}

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if getattr(request, "count_answer", None) is not None:
            raise RuntimeError(f"{type(self).__name__}: the handler never read the limiter's answer (counted)")
        # Set by `counted` on the requests the throttle counted.
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
