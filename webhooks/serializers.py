"""Request validation for the `/v1/webhooks` operations, and response shapes for the
OpenAPI document (reads build plain dicts in `webhooks.selectors`; these describe them)."""

from rest_framework import serializers

from core.api.fields import StrictBooleanField, StrictCharField, StrictChoiceField, StrictListField, StrictSerializer
from webhooks.models import EVENT_TYPES, PING, Delivery
from webhooks.targets import MAX_URL_LENGTH

URL_HELP = (
    f"https URL of your receiver, at most {MAX_URL_LENGTH} characters, without user name or password; its host must be, and "
    "resolve only to, public addresses (checked now and again on every delivery)."
)
EVENTS_HELP = "Event types to receive, no repeats; left out: every type. Known types: " + ", ".join(
    f"`{name}`" for name in EVENT_TYPES
) + "."


# --- Input ---------------------------------------------------------------------------------


class EventTypesField(StrictListField):
    def __init__(self, **kwargs):
        super().__init__(child=StrictChoiceField(choices=list(EVENT_TYPES)), min_length=1, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        repeated = {index: "repeated" for index, name in enumerate(value) if name in value[:index]}
        if repeated:
            raise serializers.ValidationError(repeated)
        return value


class WebhookCreateInput(StrictSerializer):
    """A new webhook endpoint of the key's space."""

    url = StrictCharField(max_length=MAX_URL_LENGTH, help_text=URL_HELP)
    events = EventTypesField(required=False, help_text=EVENTS_HELP)


class WebhookUpdateInput(StrictSerializer):
    """The fields to change; those left out keep their value."""

    url = StrictCharField(max_length=MAX_URL_LENGTH, required=False, help_text=URL_HELP)
    events = EventTypesField(required=False, help_text="Event types to receive (replaces the list), no repeats.")
    enabled = StrictBooleanField(
        required=False,
        help_text="false: nothing more is sent and pending retries are canceled. true (re-enable): events from now "
        "on are sent; those of the disabled period are not replayed, and the failure count starts at 0.",
    )


# --- Response shapes (documentation only) -----------------------------------------------------


class WebhookSerializer(serializers.Serializer):
    """A webhook endpoint of the space. Its secret is never shown again after creation or rotation."""

    id = serializers.CharField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField(), help_text="The subscribed event types.")
    enabled = serializers.BooleanField()
    payloadVersion = serializers.CharField(help_text="Envelope version sent to this endpoint, `2026-09-20`.")
    createdAt = serializers.DateTimeField()
    disabledAt = serializers.DateTimeField(allow_null=True)
    disabledReason = serializers.CharField(
        allow_null=True, help_text="Why it was disabled (by you, an operator, or after 20 failed deliveries in a row)."
    )
    failedInARow = serializers.IntegerField(
        min_value=0, help_text="Failed deliveries in a row; 20 disable the endpoint, a success resets it."
    )
    previousSecretExpiresAt = serializers.DateTimeField(
        allow_null=True,
        help_text="After a rotation: until when the replaced secret still signs (a second `v1=`); null otherwise.",
    )


class WebhookWithSecretSerializer(WebhookSerializer):
    """A webhook endpoint with its signing secret: shown in this answer only."""

    secret = serializers.CharField(help_text="`whsec_` and 43 base64url characters. Store it now: it is not shown again.")


class WebhookAttemptSerializer(serializers.Serializer):
    """One try of a delivery."""

    id = serializers.CharField(help_text="The request's `X-Service-Delivery` header.")
    startedAt = serializers.DateTimeField()
    finishedAt = serializers.DateTimeField(allow_null=True, help_text="null while the attempt is in flight.")
    durationMs = serializers.IntegerField(allow_null=True, min_value=0)
    statusCode = serializers.IntegerField(allow_null=True, help_text="Your receiver's HTTP status; null if none came.")
    succeeded = serializers.BooleanField()
    error = serializers.CharField(allow_null=True, help_text="Why the attempt failed (timeout, status, refused address, ...).")


class WebhookDeliveryEventSerializer(serializers.Serializer):
    """The event delivered."""

    id = serializers.CharField(help_text="The envelope's `id`.")
    type = serializers.CharField(help_text=f"An event type, or `{PING}` for a test ping.")
    createdAt = serializers.DateTimeField()


class WebhookDeliverySerializer(serializers.Serializer):
    """One event sent to one endpoint, with every attempt."""

    id = serializers.CharField()
    event = WebhookDeliveryEventSerializer()
    status = serializers.ChoiceField(
        choices=[s.value for s in Delivery.Status],
        help_text="`pending` (attempts left), `succeeded`, `failed` (every attempt failed) or `canceled` (not sent: "
        "the endpoint was disabled or the space lost Pro).",
    )
    createdAt = serializers.DateTimeField()
    nextAttemptAt = serializers.DateTimeField(allow_null=True, help_text="When a pending delivery is tried next.")
    finishedAt = serializers.DateTimeField(allow_null=True)
    attempts = WebhookAttemptSerializer(many=True, help_text="Oldest first.")
