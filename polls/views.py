from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework.response import Response

from core.api import errors
from core.api.fields import StrictChoiceField
from core.api.paging import PAGE_PARAMETERS, PageQuery, page_query
from core.api.schema import DeletedSerializer, envelope
from core.api.views import ApiView
from idempotency.views import IDEMPOTENCY_KEY, IdempotentCreate
from polls import selectors, services
from polls.models import Poll
from polls.schema import ParticipantSerializer, PollSerializer, ResultsSerializer
from polls.serializers import DatePollInput, TimePollInput, create_poll_arguments, poll_input_serializer

PollResponse = envelope("PollResponse", PollSerializer)
PollListResponse = envelope("PollListResponse", PollSerializer, many=True, paginated=True)
DeletedResponse = envelope("DeletedResponse", DeletedSerializer)

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
        responses={200: PollListResponse},
    )
    def get(self, request):
        params = page_query(request, PollListQuery)
        polls, next_cursor = selectors.list_polls(
            request.auth.space, status=params.get("status"), limit=params["limit"], cursor=params.get("cursor")
        )
        return Response({"data": polls, "nextCursor": next_cursor})

    @extend_schema(
        operation_id="createPoll",
        summary="Create a poll",
        request=PolymorphicProxySerializer(
            component_name="PollCreate",
            serializers={"date": DatePollInput, "time": TimePollInput},
            resource_type_field_name="kind",
        ),
        parameters=[IDEMPOTENCY_KEY],
        responses={201: PollResponse},
        examples=CREATE_EXAMPLES,
    )
    def post(self, request):
        def create(body: dict) -> dict:
            serializer = poll_input_serializer(body)
            serializer.is_valid(raise_exception=True)
            poll, options = services.create_poll(space=request.auth.space, **create_poll_arguments(serializer.validated_data))
            return {"data": selectors.poll_dict(poll, options)}

        return self.create_idempotently(request, "createPoll", create)


class PollDetailView(ApiView):
    @extend_schema(operation_id="getPoll", summary="Get a poll", parameters=[POLL_ID], responses={200: PollResponse})
    def get(self, request, pollId):
        return Response({"data": selectors.poll_dict(_get_poll(request, pollId))})

    @extend_schema(
        operation_id="deletePoll",
        summary="Delete a poll",
        description="Deletes the poll; later reads give `POLL_NOT_FOUND`. Emits `poll.deleted`.",
        parameters=[POLL_ID],
        responses={200: DeletedResponse},
    )
    def delete(self, request, pollId):
        poll = _get_poll(request, pollId)
        services.delete_poll(poll=poll)
        return Response({"data": {"id": poll.id, "deleted": True}})


def _get_poll(request, poll_id: str) -> Poll:
    poll = selectors.get_poll(request.auth.space, poll_id)
    if poll is None:
        raise errors.PollNotFound()
    return poll


# --- Results and participants --------------------------------------------------------------

ResultsResponse = envelope("ResultsResponse", ResultsSerializer)
ParticipantListResponse = envelope("ParticipantListResponse", ParticipantSerializer, many=True)
ParticipantResponse = envelope("ParticipantResponse", ParticipantSerializer)

PARTICIPANT_ID = OpenApiParameter("participantId", OpenApiTypes.STR, OpenApiParameter.PATH, description="Participant id.")


class PollResultsView(ApiView):
    @extend_schema(
        operation_id="getPollResults",
        summary="Get a poll's results",
        description="Counts per option, without individual participant data. `votes` is dense and `score` is "
        "an opaque ranking number; `isTopChoice` and `highScore` identify the leading options.",
        parameters=[POLL_ID],
        responses={200: ResultsResponse},
    )
    def get(self, request, pollId):
        return Response({"data": selectors.poll_results(_get_poll(request, pollId))})


class ParticipantCollectionView(ApiView):
    @extend_schema(
        operation_id="listParticipants",
        summary="List a poll's participants",
        description="Every participant in one response (no pagination), oldest response first, each with the "
        "times they can make (`yes`: no modifiers; `ifNeedBe`: the `ifNeedBe` modifier).",
        parameters=[POLL_ID],
        responses={200: ParticipantListResponse},
    )
    def get(self, request, pollId):
        return Response({"data": selectors.poll_participants(_get_poll(request, pollId))})


class ParticipantDetailView(ApiView):
    @extend_schema(
        operation_id="getParticipant",
        summary="Get a participant",
        description="`POLL_NOT_FOUND` when the poll does not exist; `PARTICIPANT_NOT_FOUND` when the participant "
        "does not exist, was deleted or belongs to another poll. Meant to be called after a `poll.participant.*` event.",
        parameters=[POLL_ID, PARTICIPANT_ID],
        responses={200: ParticipantResponse},
    )
    def get(self, request, pollId, participantId):
        participant = selectors.poll_participant(_get_poll(request, pollId), participantId)
        if participant is None:
            raise errors.ParticipantNotFound()
        return Response({"data": participant})
