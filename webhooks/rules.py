"""The refusals of the webhooks app (`ServiceError` subclasses with their API code and
status): one place each."""

from core.errors import ServiceError


class EndpointLimitReached(ServiceError):
    """The space has 5 webhook endpoints already (`Endpoint.MAX_PER_SPACE`)."""

    code = "TOO_MANY_WEBHOOKS"


class WebhookNotFound(ServiceError):
    """The webhook endpoint does not exist or belongs to another space."""

    code, status = "WEBHOOK_NOT_FOUND", 404

    def __init__(self, message: str = "Webhook endpoint not found."):
        super().__init__(message)
