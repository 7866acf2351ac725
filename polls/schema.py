"""The response shapes of `/v1/polls`, for the OpenAPI document only.

They are never run: reads build plain dicts (see selectors) and these describe them in the
schema, where tests hold every response to them.
"""

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from polls.models import Poll
from polls.rules import CONFERENCING_PROVIDERS

# --- Polls ----------------------------------------------------------------------------------


class ConferencingSerializer(serializers.Serializer):
    """The video call: `{"provider": "none"}` when there is none."""

    provider = serializers.ChoiceField(choices=CONFERENCING_PROVIDERS)
    label = serializers.CharField(required=False, help_text="Only with provider `custom`.")
    uri = serializers.CharField(required=False, help_text="Only with provider `custom`, when set.")


class OrganizerSerializer(serializers.Serializer):
    """The member who organises the poll."""

    id = serializers.CharField()
    name = serializers.CharField()
    email = serializers.CharField()
    image = serializers.CharField(allow_null=True, help_text="Avatar URL on the CDN, or null.")


class DateOptionSerializer(serializers.Serializer):
    """An option of a date poll."""

    id = serializers.CharField()
    date = serializers.DateField(help_text="Floating calendar date; never convert it through a time zone.")


class TimeOptionSerializer(serializers.Serializer):
    """An option of a time poll."""

    id = serializers.CharField()
    startTime = serializers.DateTimeField(help_text="UTC instant, `YYYY-MM-DDTHH:MM:SS.sssZ`.")
    duration = serializers.IntegerField(help_text="Minutes.")


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="Option",
        serializers=[DateOptionSerializer, TimeOptionSerializer],
        resource_type_field_name=None,
    )
)
class OptionField(serializers.JSONField):
    pass


class PollSerializer(serializers.Serializer):
    """A scheduling poll. Every field is present on every poll response."""

    id = serializers.CharField(help_text="12 characters `[A-Za-z0-9]`.")
    title = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    location = serializers.CharField(allow_null=True)
    conferencing = ConferencingSerializer()
    timeZone = serializers.CharField(allow_null=True, help_text="IANA name; null for floating times and date polls.")
    status = serializers.ChoiceField(choices=Poll.Status.values)
    kind = serializers.ChoiceField(choices=Poll.Kind.values)
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField(help_text="Changes whenever anything readable about the poll changes, responses included.")
    organizer = OrganizerSerializer()
    requireEmail = serializers.BooleanField()
    hideParticipants = serializers.BooleanField()
    hideScores = serializers.BooleanField()
    disableComments = serializers.BooleanField()
    allowTentativeVotes = serializers.BooleanField()
    participantCount = serializers.IntegerField()
    options = serializers.ListField(child=OptionField(), help_text="Date options (date polls) or time options (time polls), sorted.")
    adminUrl = serializers.URLField()
    inviteUrl = serializers.URLField()


# --- Results and participants -------------------------------------------------------------


class VoteCountSerializer(serializers.Serializer):
    """How many participants gave one vote type for an option."""

    type = serializers.CharField(help_text="Open set: `yes`, `ifNeedBe`, `no`, and possibly others; tolerate unknown types.")
    count = serializers.IntegerField(min_value=0)


class ResultFieldsSerializer(serializers.Serializer):
    """The counted part of a result option."""

    votes = VoteCountSerializer(
        many=True,
        help_text="Dense: every vote type the poll offers, in display order (`yes`, `ifNeedBe`, `no`, then any "
        "other type in order of first appearance), with `count` 0 where nobody chose it. `ifNeedBe` is left out "
        "when the poll does not allow tentative votes and nobody holds one.",
    )
    score = serializers.FloatField(
        help_text="Opaque ranking number: sorting by it orders options from best to worst. Do not decode it, "
        "compare it across polls or threshold it."
    )
    isTopChoice = serializers.BooleanField(help_text="The option has the highest score and somebody can make it.")


class DateResultOptionSerializer(DateOptionSerializer, ResultFieldsSerializer):
    """A date option with its counts."""


class TimeResultOptionSerializer(TimeOptionSerializer, ResultFieldsSerializer):
    """A time option with its counts."""


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="ResultOption",
        serializers=[DateResultOptionSerializer, TimeResultOptionSerializer],
        resource_type_field_name=None,
    )
)
class ResultOptionField(serializers.JSONField):
    pass


class ResultsSerializer(serializers.Serializer):
    """Counts per option of one poll, without individual participant data."""

    pollId = serializers.CharField()
    kind = serializers.ChoiceField(choices=Poll.Kind.values)
    status = serializers.ChoiceField(choices=Poll.Status.values)
    participantCount = serializers.IntegerField(min_value=0)
    options = serializers.ListField(child=ResultOptionField(), help_text="In the poll's option order.")
    highScore = serializers.FloatField(help_text="The highest `score` among the options; 0 without options.")


class AvailabilitySpanSerializer(serializers.Serializer):
    """A time the participant can make: one per option answered `yes` or `ifNeedBe`."""

    start = serializers.DateTimeField(help_text="Inclusive. For an all-day span, 00:00:00.000Z of the date.")
    end = serializers.DateTimeField(help_text="Exclusive. For an all-day span, 00:00:00.000Z of the next date.")
    allDay = serializers.BooleanField(help_text="A whole calendar day: read the date from `start`.")
    modifiers = serializers.ListField(
        child=serializers.CharField(),
        help_text="Open set. `ifNeedBe`: can make it but would rather not. An unrecognised modifier still means available.",
    )


class ParticipantSerializer(serializers.Serializer):
    """A response to a poll."""

    id = serializers.CharField()
    name = serializers.CharField()
    email = serializers.CharField(allow_null=True)
    createdAt = serializers.DateTimeField()
    availability = AvailabilitySpanSerializer(
        many=True, help_text="Ordered by start; not merged. Options answered `no` or left unanswered are absent."
    )
