"""The participant list as JSON bytes built in chunks.

`GET /v1/polls/{id}/participants` answers every participant in one response (20,000
participants x 100 options is about 140 MB of JSON), so it is encoded a chunk of
participants at a time and streamed, never held whole in memory, and never as one dict per
participant and span.

Each span's JSON is made once per option and vote type and shared by every participant who
gave that vote (`answer_spans`). A participant's answers come as one string
(`Participant.answers`, read by `selectors.participant_rows`): a token per `yes` or
`ifNeedBe` vote naming its option by id (`polls.answers`), so that editing or reordering
options rewrites no participant. The JSON value is the one `presenters.participant` gives
for each participant (the shape `presenters.Participant`) (tested on the benches' fixtures,
tests/test_bench_contract.py)."""

from collections.abc import Iterator
from operator import itemgetter

import orjson

from core.formats import instant
from polls.answers import answer_token
from polls.selectors import AVAILABLE_TYPES
from polls.spans import option_span, span_data

CHUNK = 500  # participants per piece of the body


def answer_spans(options) -> tuple[dict[str, int], list[bytes]]:
    """What `participants_json` shows for each answer of a poll whose `options` (in display
    order) are given: each answer token's place in display order, and by that place the JSON
    of its option's span with its modifiers."""
    places: dict[str, int] = {}
    spans: list[bytes] = []
    for option in options:
        span = span_data(option_span(option.date, option.start_time, option.duration))
        for kind, modifiers in AVAILABLE_TYPES.items():
            places[answer_token(option.id, kind)] = len(spans)
            spans.append(orjson.dumps({**span, "modifiers": modifiers}))
    return places, spans


def participants_json(spans: tuple[dict[str, int], list[bytes]], rows: list[tuple]) -> Iterator[bytes]:
    """`{"data": [Participant, ...]}` in pieces, for a poll's `answer_spans` and its
    `selectors.participant_rows`."""
    places, shown = spans
    place = places.get
    yield b'{"data":['
    for start in range(0, len(rows), CHUNK):
        pieces = []  # joined once per chunk: each participant's bytes are copied once more, not three times
        for participant_id, name, email, created, answers in rows[start:start + CHUNK]:
            codes = _places(answers, place)
            # In display order, by indexing in C: no parsing.
            availability = b",".join(itemgetter(*codes)(shown)) if len(codes) > 1 else shown[codes[0]] if codes else b""
            # "availability" is the last member: its null is replaced by the spans.
            head = orjson.dumps({"id": participant_id, "name": name, "email": email,
                                 "createdAt": instant(created), "availability": None})
            pieces += (b",", head[:-5], b"[", availability, b"]}")
        if not start:
            pieces[0] = b""  # no comma before the first participant
        yield b"".join(pieces)
    yield b"]}"


def _places(answers: str, place) -> list[int]:
    """The places of a participant's answers in display order, ascending; tokens naming no
    option of the poll (an option removed since) left out."""
    if not answers:
        return []
    found = list(map(place, answers.split(",")))
    if None in found:  # an option no longer there
        found = [code for code in found if code is not None]
    found.sort()  # written in display order: already sorted unless options moved since
    return found
