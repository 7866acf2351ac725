"""Django REST framework and the OpenAPI document (part of config.settings)."""

from config.environment import BASE_DIR, env

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["spaces.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["spaces.authentication.HasProSpace"],
    "DEFAULT_THROTTLE_CLASSES": ["ratelimit.throttling.SpaceRateThrottle"],
    "DEFAULT_PARSER_CLASSES": ["core.api.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["core.api.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "core.api.negotiation.AlwaysJSON",
    "DEFAULT_SCHEMA_CLASS": "core.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "core.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_VERSIONING_CLASS": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Scheduling Poll API",
    "VERSION": "v1",
    "OAS_VERSION": "3.1.0",
    "DESCRIPTION": (BASE_DIR / "core" / "api" / "description.md").read_text(),
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "COMPONENT_NO_READ_ONLY_REQUIRED": False,
    "ENUM_NAME_OVERRIDES": {
        "PollKindEnum": ["date", "time"],
        "PollStatusEnum": ["open", "closed", "scheduled", "canceled"],
        "WeekdayEnum": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
        "WebhookEventTypeEnum": "webhooks.models.EVENT_TYPES",
        "WebhookDeliveryStatusEnum": ["pending", "succeeded", "failed", "canceled"],
    },
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    # The reference at /docs lists the sections in this order.
    "TAGS": [
        {"name": "polls", "description": "Create, read and delete polls; read their results and participants."},
        {"name": "webhooks", "description": "Endpoints that receive the space's events, their secrets and delivery log."},
        {"name": "meta", "description": "This API's own description."},
    ],
    "SERVERS": [{"url": env.str("API_BASE_URL", default="/"), "description": "This service"}],
    # /v1's document leaves out the private API's routes (it has its own document).
    "PREPROCESSING_HOOKS": ["privateapi.openapi.leave_out_private_api"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.api.schema.postprocess",
        "webhooks.openapi.add_webhooks",
    ],
    "DISABLE_ERRORS_AND_WARNINGS": True,
}
