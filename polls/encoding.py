"""The participant list as JSON bytes, built in chunks: `GET /v1/polls/{id}/participants`
answers every participant in one response (20,000 participants x 100 options is about
140 MB of JSON), so it is encoded a chunk of participants at a time and streamed, never held
whole in memory, and never as one dict per participant and span.

Each span's JSON is made once per option and vote type and shared by every participant who
gave that vote; a participant's answers come grouped by the database as numbers
(`selectors.participant_rows`), put in display order by a sort of at most one number per
option. The JSON value is the one `presenters.participant` gives for each participant (the
shape `presenters.Participant`)
(tested on the benches' fixtures, tests/test_bench_contract.py)."""

from collections.abc import Iterator

import orjson

from core.formats import instant
from polls.models import Poll
from polls.selectors import AVAILABLE_TYPES
from polls.spans import option_span, span_data

CHUNK = 500  # participants per piece of the body


def participants_json(poll: Poll, rows: list[tuple]) -> Iterator[bytes]:
    """`{"data": [Participant, ...]}` in pieces, for a poll from `get_poll` (options loaded)
    and its `selectors.participant_rows`."""
    spans: list[bytes] = []  # 2 * option position (+ 1 for ifNeedBe) -> the span's JSON
    rank: dict[str, int] = {}  # an answer ("option id", "option id+" for ifNeedBe) -> its span's number
    for position, option in enumerate(poll.options.all()):
        span = span_data(option_span(option.date, option.start_time, option.duration))
        spans += [orjson.dumps({**span, "modifiers": modifiers}) for modifiers in AVAILABLE_TYPES.values()]
        rank[option.pk], rank[option.pk + "+"] = 2 * position, 2 * position + 1
    yield b'{"data":['
    for start in range(0, len(rows), CHUNK):
        pieces = []
        for participant_id, name, email, created_at, answers in rows[start:start + CHUNK]:
            # In display order: by option position (ascending numbers).
            availability = b",".join(map(spans.__getitem__, sorted(map(rank.__getitem__, answers.split(","))))) if answers else b""
            # "availability" is the last member: its null is replaced by the spans.
            head = orjson.dumps({"id": participant_id, "name": name, "email": email,
                                 "createdAt": instant(created_at), "availability": None})
            pieces.append(head[:-5] + b"[" + availability + b"]}")
        yield (b"," if start else b"") + b",".join(pieces)
    yield b"]}"
