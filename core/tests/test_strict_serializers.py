"""core.api.fields.StrictSerializer's own shortcuts over DRF: each class lists its writable
fields once, and serializer-level validators run only where a class declares some."""

from rest_framework import serializers

from core.api.fields import StrictCharField, StrictIntegerField, StrictSerializer


def errors_of(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid()
    return {key: [str(message) for message in messages] for key, messages in serializer.errors.items()}


class Parent(StrictSerializer):
    name = StrictCharField()


class Child(Parent):
    size = StrictIntegerField()


def test_a_subclass_validates_its_own_fields_after_its_parent_listed_theirs():
    assert errors_of(Parent, {"name": "x"}) == {}  # the parent's list is made first
    assert errors_of(Child, {"name": "x"}) == {"size": ["required"]}
    assert errors_of(Child, {"name": "x", "size": "7"}) == {"size": ["must be an integer"]}
    assert errors_of(Parent, {"name": "x", "size": 7}) == {"size": ["unknown field"]}


class WithReadOnly(StrictSerializer):
    name = StrictCharField()
    made = serializers.CharField(read_only=True, default="kept")


def test_a_read_only_field_takes_no_input():
    serializer = WithReadOnly(data={"name": "x"})
    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data == {"name": "x"}


def no_equal_numbers(attrs):
    if attrs["low"] == attrs["high"]:
        raise serializers.ValidationError("low and high must differ")


class WithValidator(StrictSerializer):
    low = StrictIntegerField()
    high = StrictIntegerField()

    class Meta:
        validators = [no_equal_numbers]


def test_a_declared_validator_still_runs():
    assert errors_of(WithValidator, {"low": 1, "high": 2}) == {}
    assert errors_of(WithValidator, {"low": 2, "high": 2}) == {"non_field_errors": ["low and high must differ"]}
