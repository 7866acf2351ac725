from django.db import connection
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework.response import Response

from core.api import shapes
from core.api.fields import StrictChoiceField
from core.api.paging import PAGE_PARAMETERS, PageQuery, page_query
from core.api.renderers import json_response
from core.api.views import ApiView
from idempotency.views import IDEMPOTENCY_KEY, IdempotentCreate
from polls import encoding, examples, presenters, selectors, services
from polls.models import Poll
from polls.rules import ParticipantNotFound, PollNotFound
from polls.serializers import DatePollInput, TimePollInput, create_poll_arguments, validated_poll_input
from webhooks import selectors as webhook_selectors

POLL_ID = OpenApiParameter("pollId", OpenApiTypes.STR, OpenApiParameter.PATH, description="Poll id.")

CREATE_EXAMPLES = [
    OpenApiExample(
        "Date poll",
        request_only=True,
        value={"title": "Team dinner", "kind": "date", "options": [{"date": "2026-12-04"}, {"date": "2026-12-05"}]},
    ),
    OpenApiExample(
        "Time poll with a generator",
        request_only=True,
        value={
            "title": "Kick-off call",
            "kind": "time",
            "timeZone": "Europe/Berlin",
            "duration": 30,
            "generators": [
                {"startDate": "2026-12-07", "endDate": "2026-12-11", "days": ["mon", "wed"], "from": "09:00", "to": "11:00", "interval": 60}
            ],
        },
    ),
]


class PollListQuery(PageQuery):
    status = StrictChoiceField(choices=Poll.Status.values, required=False)


class PollCollectionView(IdempotentCreate, ApiView):
    query_methods = ("get",)

    @extend_schema(
        operation_id="listPolls",
        summary="List polls",
        description="Polls of the key's space, newest first (`createdAt`, then `id`, descending). "
        "Keyset pagination: pass `nextCursor` as `cursor`; paging is stable while polls are created "
        "or deleted. Unknown query parameters, bad values and cursors not issued for this space "
        "give `VALIDATION_ERROR`.",
        parameters=[
            OpenApiParameter("status", str, enum=Poll.Status.values, description="Only polls with this status."),
            *PAGE_PARAMETERS,
        ],
        responses={200: presenters.POLL_LIST},
        examples=examples.PAGE,
    )
    def get(self, request):
        params = page_query(request, PollListQuery)
        polls, next_cursor = selectors.list_polls(
            request.auth.space, status=params.get("status"), limit=params["limit"], cursor=params.get("cursor"),
        )
        organizers = selectors.organizers(polls)
        return json_response({"data": [presenters.poll(poll, organizers[poll.organizer]) for poll in polls],
                              "nextCursor": next_cursor})

    @extend_schema(
        operation_id="createPoll",
        summary="Create a poll",
        description="Creates a date poll (`kind: date`, calendar days) or a time poll (`kind: time`, slots with a "
        "start and a duration) in the key's space, open for responses, and answers it with its option ids, "
        "`adminUrl` (for the organizer) and `inviteUrl` (to share with participants). Time options come from "
        "`options`, from `generators` (slots repeated over a date range) or both; the rules are in the "
        "introduction under *Creating polls*. Emits `poll.created`. Send an `Idempotency-Key` to retry safely.",
        request=PolymorphicProxySerializer(
            component_name="PollCreate",
            serializers={"date": DatePollInput, "time": TimePollInput},
            resource_type_field_name="kind",
        ),
        parameters=[IDEMPOTENCY_KEY],
        responses={201: presenters.POLL},
        examples=CREATE_EXAMPLES + examples.CREATED,
    )
    def post(self, request):
        def validate(body: dict):
            arguments = create_poll_arguments(validated_poll_input(body))

            def create() -> dict:
                space = request.auth.space
                poll, _options = services.create_poll(
                    space=space, **arguments, endpoints_enabled=webhook_selectors.has_enabled_endpoint(space.pk),
                )
                return {"data": presenters.poll(poll, poll.organizer)}

            return create

        return self.create_idempotently(request, "createPoll", validate)


class PollDetailView(ApiView):
    @extend_schema(
        operation_id="getPoll",
        summary="Get a poll",
        description="The poll with its settings, organizer, options (sorted: dates, or start times then "
        "durations) and `participantCount`. `POLL_NOT_FOUND` when it does not exist, was deleted or belongs to "
        "another space. Meant to be called after a `poll.*` event, whose `data` carries the poll id.",
        parameters=[POLL_ID],
        responses={200: presenters.POLL},
        examples=examples.ONE,
    )
    def get(self, request, pollId):
        poll = _get_poll(request, pollId)
        return json_response({"data": presenters.poll(poll, poll.organizer)})

    @extend_schema(
        operation_id="deletePoll",
        summary="Delete a poll",
        description="Deletes the poll with its responses; later reads give `POLL_NOT_FOUND` and its invite "
        "link stops working. Emits `poll.deleted`. Deleting it again is `POLL_NOT_FOUND`.",
        parameters=[POLL_ID],
        responses={200: presenters.DELETED},
        examples=examples.DELETED,
    )
    def delete(self, request, pollId):
        poll = _get_poll(request, pollId)
        services.delete_poll(poll=poll)
        return Response({"data": shapes.deleted(poll.id)})


def _get_poll(request, poll_id: str) -> Poll:
    poll = selectors.get_poll(request.auth.space, poll_id)
    if poll is None:
        raise PollNotFound()
    return poll


# --- Results and participants --------------------------------------------------------------

PARTICIPANT_ID = OpenApiParameter("participantId", OpenApiTypes.STR, OpenApiParameter.PATH, description="Participant id.")


class PollResultsView(ApiView):
    @extend_schema(
        operation_id="getPollResults",
        summary="Get a poll's results",
        description="Counts per option, without individual participant data. `votes` is dense and `score` is "
        "an opaque ranking number; `isTopChoice` and `highScore` identify the leading options.",
        parameters=[POLL_ID],
        responses={200: presenters.RESULTS},
        examples=examples.RESULTS_EXAMPLES,
    )
    def get(self, request, pollId):
        return json_response({"data": presenters.results(selectors.poll_results(_get_poll(request, pollId)))})


class ParticipantCollectionView(ApiView):
    @extend_schema(
        operation_id="listParticipants",
        summary="List a poll's participants",
        description="Every participant in one response (no pagination), oldest response first, each with the "
        "times they can make (`yes`: no modifiers; `ifNeedBe`: the `ifNeedBe` modifier).",
        parameters=[POLL_ID],
        responses={200: presenters.PARTICIPANT_LIST},
        examples=examples.PARTICIPANTS,
    )
    def get(self, request, pollId):
        poll = _get_poll(request, pollId)
        spans = encoding.answer_spans(poll.options.all())
        rows = selectors.participant_rows(poll.id)
        body = encoding.participants_json(spans, rows)
        if len(rows) <= encoding.CHUNK:
            return HttpResponse(b"".join(body), content_type="application/json")
        # Streamed, a chunk of participants at a time. The rows are read: the connection goes
        # back (to its pool) now, not after the last byte reached a slow client.
        if not connection.in_atomic_block:
            connection.close()
        return StreamingHttpResponse(body, content_type="application/json")


class ParticipantDetailView(ApiView):
    @extend_schema(
        operation_id="getParticipant",
        summary="Get a participant",
        description="`POLL_NOT_FOUND` when the poll does not exist; `PARTICIPANT_NOT_FOUND` when the participant "
        "does not exist, was deleted or belongs to another poll. Meant to be called after a `poll.participant.*` event.",
        parameters=[POLL_ID, PARTICIPANT_ID],
        responses={200: presenters.PARTICIPANT},
        examples=examples.ONE_PARTICIPANT,
    )
    def get(self, request, pollId, participantId):
        participant = selectors.poll_participant(_get_poll(request, pollId), participantId)
        if participant is None:
            raise ParticipantNotFound()
        return Response({"data": presenters.participant(participant)})
