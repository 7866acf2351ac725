"""`Idempotency-Key` on the creates: what a view adds to be safely retried."""

from collections.abc import Callable

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter
from rest_framework.response import Response

from core.api import errors
from core.api.renderers import json_response
from idempotency import services as idempotency

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


class IdempotentCreate:
    """A mixin of `core.api.views.ApiView` subclasses whose POST creates a resource."""

    body_methods = ("post",)
    counted_late = ("post",)  # read after validating the body (`create_idempotently`)

    def create_idempotently(
        self, request, operation: str, validate: Callable[[dict], Callable[[], dict]]
    ) -> HttpResponse:
        """201 with what the create answers, at most once per `Idempotency-Key` (when the
        request has one) in 24 hours; a replay carries `Idempotent-Replayed: true`.

        `validate(body)` checks the body (raising the validation error) and returns the
        create: a call of one service that answers the response body. Only that call runs in
        the idempotency transaction; a bad body is refused before any record is read or
        written (on SQLite, without holding the write lock)."""
        key = request.headers.get("Idempotency-Key")
        if key is not None and not idempotency.valid_key(key):
            raise errors.ValidationFailed(
                f"Idempotency-Key: must be 1-{idempotency.MAX_KEY_LENGTH} printable ASCII characters without spaces"
            )
        body = self.json_body(request)
        create = validate(body)
        self.counted(request)  # the limiter's answer, counted while the body was validated
        if key is None:
            return json_response(create(), status=201)
        try:
            status, data, replayed = idempotency.run(
                space=request.auth.space, key=key, operation=operation, body=body, create=lambda: (201, create())
            )
        except idempotency.KeyReused as exc:
            raise errors.ValidationFailed(str(exc))
        return Response(data, status=status, headers={"Idempotent-Replayed": "true"} if replayed else None)
