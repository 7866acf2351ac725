"""Poll answers, results and the participant list as JSON, encoded once.

Polls (`GET /v1/polls/{id}`, the poll list): each process keeps the encoded answer of the
polls it served lately (`encoded_polls`), keyed by poll id, and uses it again only when the
poll's row read for this request (every column the answer shows, `updated_at`, the
organizer and the participant count) equals the row it was encoded from, under the same
APP_URL and CDN_URL (the links and the organizer's image follow them). The options are
the one part of an answer not in that row: every change of options goes through
`services.update_poll`, which sets `updated_at` in the same transaction, so a changed poll
never matches. A cached poll costs no options query, no presenting and no encoding.

Results (`GET /v1/polls/{id}/results`) likewise (`encoded_results`): used again while the
poll's row and its tallies (read for every request: a row per option and vote type) are
those they were encoded from. A cached poll's results cost no options query and no
counting, presenting or encoding of its options.

The participant list is JSON bytes built in chunks: `GET /v1/polls/{id}/participants`
answers every participant in one response (20,000 participants x 100 options is about
140 MB of JSON), so it is encoded a chunk of participants at a time and streamed, never held
whole in memory, and never as one dict per participant and span.

Each span's JSON is made once per option and vote type and shared by every participant who
gave that vote, and kept by each process while the poll's `updated_at` is unchanged
(`answer_spans`; the poll's row comes with the key, `selectors.poll_rider`): a list read
again costs the participants' query alone. A participant's answers come as one string of
a character per answer (`Participant.answers`, read by `selectors.participant_rows`),
whose code points, sorted, are the spans' indexes in display order
(queries.ANSWER_OFFSETS). The JSON value is the one `presenters.participant` gives for each
participant (the shape `presenters.Participant`) (tested on the benches' fixtures,
tests/test_bench_contract.py)."""

from collections.abc import Callable, Iterator
from operator import itemgetter

import orjson
from django.conf import settings

from core.rows import Kept
from polls import presenters, selectors
from polls.queries import ANSWER_BASE
from polls.selectors import AVAILABLE_TYPES
from polls.spans import option_span, span_data

CHUNK = 500  # participants per piece of the body

#: Encoded poll answers each process keeps (about 1-3 KB each; core.rows.Kept), by poll id,
#: with the row and the URLs they were made from.
_POLLS_KEPT = Kept(4096)
#: Encoded results each process keeps (about 0.2 KB an option; core.rows.Kept).
_RESULTS_KEPT = Kept(1024)
#: The participant list's spans each process keeps (about 0.2 KB an option; core.rows.Kept).
_SPANS_KEPT = Kept(256)


def encoded_polls(rows: list, options_of: Callable[[list[str]], dict[str, tuple]]) -> list[orjson.Fragment]:
    """The answer (`presenters.poll`) of each poll row, encoded, in order: from this
    process's cache when the row is unchanged, else presented with the options
    `options_of(ids)` gives for those polls (one call, none when every poll is cached)."""
    urls = (settings.APP_URL, settings.CDN_URL)

    def make_all(missing: list) -> list:
        options = options_of([row.id for row, *_ in missing])
        return [orjson.Fragment(orjson.dumps(presenters.poll(row, options[row.id]))) for row, *_ in missing]

    return _POLLS_KEPT.made([(row.id, (row, *urls)) for row in rows], make_all=make_all)


def encoded_results(row, tallies: list, options_of: Callable[[list[str]], dict[str, tuple]]) -> orjson.Fragment:
    """The results (`presenters.results`) of a poll row with its `selectors.poll_tallies`,
    encoded: from this process's cache when the row and the tallies are those it was
    encoded from, else counted with the options `options_of([row.id])` gives. The row holds
    what results show of the poll (status, kind, participant count, whether tentative
    votes count) and `updated_at`, which every change of options moves (as for
    `encoded_polls`); the tallies are the counts."""

    def make(_) -> orjson.Fragment:
        options = options_of([row.id])[row.id]
        return orjson.Fragment(orjson.dumps(presenters.results(selectors.poll_results(row, options, tallies))))

    return _RESULTS_KEPT.made([(row.id, (row, frozenset(tallies)))], make)[0]


def answer_spans(row, options_of: Callable[[list[str]], dict[str, tuple]]) -> tuple[bytes, ...]:
    """What `participants_json` shows for each answer of a poll row (`selectors.poll_rider`):
    by an answer's code point (queries.ANSWER_OFFSETS), the JSON of its option's span with
    its modifiers; indexes below ANSWER_BASE are never used (`_codes`). From this process's
    cache while the row's `updated_at` is the one they were made with (every change of
    options moves it, as for `encoded_polls`), else made from the options
    `options_of([row.id])` gives (one query)."""

    def make(_) -> tuple[bytes, ...]:
        spans: list[bytes] = [b""] * ANSWER_BASE
        for option in options_of([row.id])[row.id]:
            span = span_data(option_span(option.date, option.start_time, option.duration))
            spans += [orjson.dumps({**span, "modifiers": modifiers}) for modifiers in AVAILABLE_TYPES.values()]
        return tuple(spans)

    return _SPANS_KEPT.made([(row.id, row.updated_at)], make)[0]


def participants_json(spans: tuple[bytes, ...], rows: list[tuple]) -> Iterator[bytes]:
    """`{"data": [Participant, ...]}` in pieces, for a poll's `answer_spans` and its
    `selectors.participant_rows` (read after the spans, as the participants' answers name
    the options by their place)."""
    last = len(spans) - 1
    yield b'{"data":['
    for start in range(0, len(rows), CHUNK):
        pieces = []  # joined once per chunk: each participant's bytes are copied once more, not three times
        for participant_id, name, email, created, answers in rows[start:start + CHUNK]:
            codes = _codes(answers, last)
            # In display order (ascending code points), by indexing in C: no parsing.
            availability = b",".join(itemgetter(*codes)(spans)) if len(codes) > 1 else spans[codes[0]] if codes else b""
            # "availability" is the last member: its null is replaced by the spans.
            head = orjson.dumps({"id": participant_id, "name": name, "email": email,
                                 "createdAt": created, "availability": None})
            pieces += (b",", head[:-5], b"[", availability, b"]}")
        if not start:
            pieces[0] = b""  # no comma before the first participant
        yield b"".join(pieces)
    yield b"]}"


def _codes(answers: str, last: int) -> list[int]:
    """The code points of a participant's answers, ascending, each naming a span: those
    outside ANSWER_BASE..`last` (answers written behind the services' back and naming an
    option no longer there, until `manage.py polls recount`) left out."""
    try:
        codes = sorted(answers.encode("latin-1"))  # a poll of up to 103 options
    except UnicodeEncodeError:
        codes = sorted(map(ord, answers))
    if codes and (codes[0] < ANSWER_BASE or codes[-1] > last):
        codes = [code for code in codes if ANSWER_BASE <= code <= last]
    return codes
