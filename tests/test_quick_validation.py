"""core.api.quick: the quick pass over a request body gives, for every body it vouches for,
the very data DRF's validation gives, and gives up on every body DRF refuses. Compared over
generated bodies for every input serializer of the API: valid ones and ones with a mistake
anywhere (a missing or unknown key, a null, a wrong type, a bound crossed, a bad date...)."""

import copy
import random
import string
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest
from rest_framework import serializers

from core.api import fields as strict
from core.api.quick import QUICK_GIVES_UP, quick_validator
from polls import serializers as poll_inputs
from webhooks import serializers as webhook_inputs


class Bounded(strict.StrictSerializer):
    # Settings no input of the API has (yet): a lower bound, no trimming, blank allowed, an
    # integer without bounds.
    code = strict.StrictCharField(min_length=3, max_length=5, trim_whitespace=False)
    note = strict.StrictCharField(required=False, allow_blank=True)
    count = strict.StrictIntegerField(required=False)


INPUTS = [
    Bounded,
    poll_inputs.DatePollInput,
    poll_inputs.TimePollInput,
    poll_inputs.UnknownKindPollInput,
    poll_inputs.GeneratorInput,
    webhook_inputs.WebhookCreateInput,
    webhook_inputs.WebhookUpdateInput,
]

JUNK = [None, True, False, 0, -1, 1.5, 10**30, "", " ", "x", "\x00", "a\ud800", [], {}, ["x"], {"x": 1}]
LETTERS = string.ascii_letters + " é€😀"


def typed(value):
    """`value` with the type of every part: 1 and True, 1 and 1.0, differ."""
    if isinstance(value, dict):
        return ("dict", sorted((key, typed(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(item) for item in value])
    return (type(value).__name__, repr(value))


def good_and_edge(rng: random.Random, field) -> tuple[object, list]:
    """A value for `field` that is nearly always valid, and values at or past its edges."""
    day = date(2027, 3, 1) + timedelta(days=rng.randrange(20))
    if isinstance(field, strict.StrictSerializer):
        return body_of(rng, field), []
    if isinstance(field, serializers.ListField):
        low, high = field.min_length or 0, field.max_length or 3
        items = [value_of(rng, field.child) for _ in range(rng.randint(max(low, 1), min(high, 3)))]
        return items, [[], items * (high + 1), items[:1] * 2, "x", {"0": items[0]}]
    if isinstance(field, poll_inputs.TimeZoneField):
        return rng.choice(["Europe/Berlin", "UTC", "America/New_York"]), ["europe/berlin", "Etc/GMT+1", "No/Zone", ""]
    if isinstance(field, poll_inputs.EmailField):
        return "owner@example.com", [" Owner@Example.com ", "bad", "a@b", ""]
    if isinstance(field, strict.StrictCharField):
        text = "".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 8)))
        edge = [" " + text + " ", "  ", "", "x\x00", "x\udc80", "\t"]
        if field.min_length:
            edge += ["x" * (field.min_length - 1), " " * field.min_length, " x "]
        if field.max_length:
            edge += ["é" * field.max_length, "é" * (field.max_length + 1), " " + "x" * field.max_length + " "]
        return text if text.strip() else "x", edge
    if isinstance(field, strict.StrictBooleanField):
        return rng.random() < 0.5, [0, 1, "true"]
    if isinstance(field, strict.StrictIntegerField):
        low, high = field.min_value or 0, field.max_value or 100
        return rng.choice([low, high, rng.randint(low, high)]), [low - 1, high + 1, 10**30, -10**30, float(low), str(low)]
    if isinstance(field, strict.StrictChoiceField):
        return rng.choice(list(field.choices)), ["MON", "nope", ""]
    if isinstance(field, strict.StrictDateField):
        return day.isoformat(), ["2027-02-30", "0999-12-31", "2027-3-1", "9999-01-01", "2027-03-01T00:00:00"]
    if isinstance(field, strict.StrictClockField):
        return rng.choice(["09:00", "10:30", "12:00", "17:45"]), ["24:00", "9:00", "09:00:00", "23:59", "00:00"]
    if isinstance(field, poll_inputs.StartTimeField):
        moment = datetime.combine(day, time(rng.randrange(24), rng.choice([0, 15, 30, 45]), rng.randrange(60)))
        return f"{moment:%Y-%m-%dT%H:%M:%S}" + rng.choice(["", "Z", "+01:00", "-05:30"]), [
            "2027-03-01T09:00:00+24:00", "2027-03-01 09:00:00", "2027-03-01T09:00:00.5Z", "0999-12-31T23:00:00Z",
            "2027-03-01T09:00:00z", "2027-03-01T09:00"]
    return rng.choice(["x", 1, None, {"a": [1]}]), JUNK


def value_of(rng: random.Random, field):
    """Mostly a valid value; now and then one at the field's edges, or junk."""
    good, edge = good_and_edge(rng, field)
    roll = rng.random()
    if roll < MISTAKES and edge:
        return rng.choice(edge)
    if roll < MISTAKES * 1.5:
        return rng.choice(JUNK)
    return good


def body_of(rng: random.Random, serializer) -> dict:
    """An object of `serializer`'s fields, now and then one left out or an unknown key added."""
    body = {}
    for name, field in serializer.fields.items():
        if field.read_only or (not field.required and rng.random() < 0.3) or rng.random() < MISTAKES / 4:
            continue
        body[name] = value_of(rng, field)
    for first, last in ORDERED:
        if isinstance(body.get(first), str) and isinstance(body.get(last), str) and rng.random() > MISTAKES:
            body[first], body[last] = sorted([body[first], body[last]])
    if rng.random() < MISTAKES / 4:
        body[rng.choice(["extra", "Title"])] = rng.choice(JUNK)
    return body


MISTAKES = 0.04  # the chance of a mistake per value
ORDERED = [("startDate", "endDate"), ("from", "to")]  # a generator's range, in order most of the time


def compare(cls, body):
    quick = quick_validator(cls)
    assert quick is not None, f"{cls.__name__} has no quick pass"
    try:
        fast = quick(copy.deepcopy(body))
    except QUICK_GIVES_UP:
        fast = None
    try:
        slow = cls(data=body).run_validation(copy.deepcopy(body))  # DRF's own path
    except serializers.ValidationError:
        slow = None
    if fast is not None:
        assert slow is not None, f"quick vouched for a body DRF refuses: {body!r}"
        assert typed(fast) == typed(slow), body
    return fast, slow


@pytest.mark.parametrize("cls", INPUTS, ids=lambda cls: cls.__name__)
def test_the_quick_pass_gives_what_drf_gives_or_gives_up(cls):
    rng = random.Random(cls.__name__)  # the same bodies on every run
    outcomes = Counter()
    for _ in range(1500):
        fast, slow = compare(cls, body_of(rng, cls()))
        outcomes[fast is not None, slow is not None] += 1
    assert outcomes[False, True] < 15, outcomes  # DRF accepts what the quick pass gave up on: rare
    assert outcomes[True, True] > 100 and outcomes[False, False] > 100, outcomes  # both kinds, many of each


FIRST = datetime(2027, 3, 1, 9, tzinfo=UTC)
VALID = [
    (poll_inputs.TimePollInput, {
        "title": "Kick-off", "kind": "time", "timeZone": "Europe/Berlin", "duration": 30,
        "options": [{"startTime": f"{FIRST + timedelta(hours=n):%Y-%m-%dT%H:%M:%SZ}"} for n in range(10)],
    }),
    (poll_inputs.TimePollInput, {
        "title": "  Padded  ", "kind": "time", "duration": 60, "description": "", "location": "Room 1",
        "organizer": {"email": "Owner@Example.com"}, "hideScores": True, "requireEmail": False,
        "options": [{"startTime": "2027-03-01T09:00:00", "duration": 45},
                    {"startTime": datetime(2027, 3, 2, 9, tzinfo=timezone(timedelta(hours=2))).isoformat()}],
        "generators": [{"startDate": "2027-03-01", "endDate": "2027-03-05", "days": ["mon", "fri"],
                        "from": "09:00", "to": "12:00", "interval": 90}],
    }),
    (poll_inputs.DatePollInput, {"title": "Dinner", "kind": "date", "options": [{"date": "2027-12-04"}, {"date": "2027-12-05"}]}),
    (webhook_inputs.WebhookCreateInput, {"url": "https://hooks.example.com/in", "events": ["poll.created"]}),
    (webhook_inputs.WebhookUpdateInput, {"enabled": False}),
]


@pytest.mark.parametrize("cls, body", VALID, ids=lambda value: getattr(value, "__name__", ""))
def test_a_valid_body_takes_the_quick_pass_and_drf_agrees(cls, body):
    fast, slow = compare(cls, body)
    assert fast is not None and slow is not None
    assert typed(cls.validated(body)) == typed(slow)


def test_a_refused_body_gets_drfs_own_errors():
    body = dict(VALID[0][1], title=" ", duration=10, extra=1)
    with pytest.raises(serializers.ValidationError) as refused:
        poll_inputs.TimePollInput.validated(body)
    assert refused.value.detail == {"title": ["must not be empty"], "duration": ["must be at least 15"],
                                    "extra": ["unknown field"]}


def test_classes_the_quick_pass_cannot_vouch_for_have_none():
    class Query(strict.StrictQuerySerializer):
        limit = strict.StrictIntegerField(min_value=1, max_value=10)

    class WithFieldMethod(strict.StrictSerializer):
        name = strict.StrictCharField()

        def validate_name(self, value):
            return value.upper()

    assert quick_validator(Query) is None
    assert quick_validator(WithFieldMethod) is None
    assert WithFieldMethod.validated({"name": "x"}) == {"name": "X"}
