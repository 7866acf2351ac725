"""Request validation for the `/v1/webhooks` operations (the answers are
`webhooks.presenters`')."""

from rest_framework import serializers

from core.api.fields import StrictBooleanField, StrictCharField, StrictChoiceField, StrictListField, StrictSerializer
from webhooks.models import EVENT_TYPES
from webhooks.targets import MAX_URL_LENGTH

URL_HELP = (
    f"https URL of your receiver, at most {MAX_URL_LENGTH} characters, without user name or password; its host must be, and "
    "resolve only to, public addresses (checked now and again on every delivery)."
)
EVENTS_HELP = "Event types to receive, no repeats; left out: every type. Known types: " + ", ".join(
    f"`{name}`" for name in EVENT_TYPES
) + "."


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
