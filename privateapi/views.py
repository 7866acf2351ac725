"""The private API's endpoints: thin views over the services and selectors `/v1` uses, with
the same keys, Pro check, maintenance switch and per-space rate limit (one window for both
APIs: `core.api.views.ApiView` and REST_FRAMEWORK's throttle), and its own request rules
(privateapi.serializers), answers (privateapi.presenters) and errors (privateapi.errors)."""

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.response import Response

from core.api.views import ApiView
from core.errors import ServiceError
from core.paging import BadCursor
from polls import selectors, services
from polls.models import Poll
from polls.rules import PollNotFound
from privateapi import errors, presenters
from privateapi.errors import InvalidInput, LegacyError, issue
from privateapi.serializers import CreatePollInput, PatchPollInput, create_arguments, json_body, list_query, validated

POLL_ID = OpenApiParameter("pollId", OpenApiTypes.STR, OpenApiParameter.PATH)

CREATE_EXAMPLES = [
    OpenApiExample("Date poll (all-day options)", request_only=True, value={
        "title": "Team offsite", "description": "Which days work for a two day offsite?",
        "dates": ["2026-08-03", "2026-08-04", "2026-08-05"],
    }),
    OpenApiExample("Time poll (explicit times)", request_only=True, value={
        "title": "Project kickoff", "location": "Zoom",
        "slots": {"duration": 60, "timezone": "Europe/London",
                  "times": ["2026-08-03T09:00:00", "2026-08-03T14:00:00", "2026-08-04T09:00:00"]},
    }),
    OpenApiExample("Time poll (slot generator)", request_only=True, value={
        "title": "Interview availability",
        "slots": {"duration": 30, "timezone": "America/New_York", "times": [{
            "startDate": "2026-08-03", "endDate": "2026-08-07", "days": ["mon", "tue", "wed", "thu", "fri"],
            "startTime": "09:00", "endTime": "12:00", "interval": 60,
        }]},
    }),
]
CLOSE_EXAMPLES = [OpenApiExample("Close a poll", request_only=True, value={"status": "closed"})]


class PrivateApiView(ApiView):
    """`ApiView`'s order of checks (route, maintenance, key, Pro, rate limit), with the
    private API's leniency (query parameters and bodies it does not read are ignored) and
    its error answers."""

    query_methods = body_methods = ("get", "post", "patch", "delete")

    def get_exception_handler(self):
        return errors.exception_handler


def _poll(request, poll_id: str) -> Poll:
    poll = selectors.get_poll(request.auth.space, poll_id)
    if poll is None:
        raise PollNotFound()
    return poll


class PollCollectionView(PrivateApiView):
    @extend_schema(
        operation_id="listPolls",
        summary="List polls",
        description="The polls of the key's space, newest first. `status` keeps the polls in that state; pass "
        "`nextCursor` as `cursor` for the next page.",
        parameters=[
            OpenApiParameter("status", str, enum=Poll.Status.values, description="Only polls with this status."),
            OpenApiParameter("cursor", str, description="The `nextCursor` of the previous page."),
            OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                             description="Polls per page, 1-100."),
        ],
        responses={200: presenters.LIST_POLLS},
    )
    def get(self, request):
        query = list_query(request)
        try:
            rows, next_cursor = selectors.list_polls(
                request.auth.space, status=query.get("status"), limit=query["limit"], cursor=query.get("cursor")
            )
        except BadCursor:
            raise InvalidInput([issue(["cursor"], "not a cursor of this list")], dict(request.GET.items()))
        organizers = selectors.organizers(rows)
        return Response({"data": [presenters.list_item(row, organizers[row.organizer]) for row in rows],
                         "nextCursor": next_cursor})

    @extend_schema(
        operation_id="createPoll",
        summary="Create a poll",
        description="Creates a poll in the key's space. `dates` gives all-day options (a date poll); `slots` gives "
        "time options of one `duration`, from ISO datetimes and slot generators (a generator makes a slot every "
        "`interval` minutes, default `duration`, that fits between `startTime` and `endTime`). `dates` and `slots` "
        "are mutually exclusive; a poll has at most 100 options. Emits `poll.created`.",
        request=CreatePollInput,
        responses={200: presenters.CREATE_POLL},
        examples=CREATE_EXAMPLES,
    )
    def post(self, request):
        data = validated(CreatePollInput, json_body(request))
        dates = data.get("dates")
        if dates is not None:
            limit = settings.MAX_POLL_OPTIONS
            if len(dates) > limit:
                raise LegacyError(400, "TOO_MANY_OPTIONS", f"Too many options ({len(dates)}). Maximum allowed is {limit}.")
            duplicates = len(dates) - len(set(dates))
            if duplicates:
                raise LegacyError(400, "DUPLICATE_DATES", f"Duplicate dates found. Please remove {duplicates} "
                                                          f"duplicate date{'s' if duplicates > 1 else ''}.")
        arguments = create_arguments(data)
        if dates is None and not arguments["slots"] and not arguments["generators"]:
            raise LegacyError(400, "NO_OPTIONS_GENERATED", "No valid options were generated. Check that your slot "
                                                           "generators produce valid time slots.")
        poll, _options = services.create_poll(space=request.auth.space, **arguments)
        return Response({"data": presenters.poll(poll, poll.organizer)})


class PollDetailView(PrivateApiView):
    @extend_schema(
        operation_id="getPoll",
        summary="Get a poll",
        description="The poll, with its options. It must belong to the key's space.",
        parameters=[POLL_ID],
        responses={200: presenters.GET_POLL},
    )
    def get(self, request, pollId):
        poll = _poll(request, pollId)
        return Response({"data": presenters.poll(poll, poll.organizer)})

    @extend_schema(
        operation_id="updatePoll",
        summary="Update a poll",
        description='Closes the poll: `{"status": "closed"}`, the only transition available. Participants can no '
        "longer respond; the poll and its responses stay. Idempotent: closing a closed poll answers it unchanged. "
        "Any other status, or a poll that is scheduled or canceled, gives 422 `TRANSITION_NOT_AVAILABLE`. Emits "
        "`poll.closed` with reason `manual`.",
        parameters=[POLL_ID],
        request=PatchPollInput,
        responses={200: presenters.PATCH_POLL},
        examples=CLOSE_EXAMPLES,
    )
    def patch(self, request, pollId):
        status = validated(PatchPollInput, json_body(request))["status"]
        if status != Poll.Status.CLOSED:
            raise LegacyError(422, "TRANSITION_NOT_AVAILABLE", f'Transitioning a poll to "{status}" is not available '
                                                               'via the API. Only "closed" is supported.')
        poll = _poll(request, pollId)
        try:
            closed = services.close_poll(poll=poll)
        except ServiceError as exc:
            raise LegacyError(422, "TRANSITION_NOT_AVAILABLE", str(exc))
        return Response({"data": presenters.poll(poll, poll.organizer, status=closed.status)})

    @extend_schema(
        operation_id="deletePoll",
        summary="Delete a poll",
        description="Deletes the poll; later reads give `POLL_NOT_FOUND`. Emits `poll.deleted`.",
        parameters=[POLL_ID],
        responses={200: presenters.DELETED},
    )
    def delete(self, request, pollId):
        poll = _poll(request, pollId)
        services.delete_poll(poll=poll)
        return Response({"data": {"id": poll.id, "deleted": True}})


class PollResultsView(PrivateApiView):
    @extend_schema(
        operation_id="getPollResults",
        summary="Get poll results",
        description="Vote counts per option, without individual participant data.",
        parameters=[POLL_ID],
        responses={200: presenters.RESULTS},
    )
    def get(self, request, pollId):
        return Response({"data": presenters.results(selectors.poll_results(_poll(request, pollId)))})


class PollParticipantsView(PrivateApiView):
    @extend_schema(
        operation_id="getPollParticipants",
        summary="Get poll participants",
        description="Every participant of the poll, oldest first.",
        parameters=[POLL_ID],
        responses={200: presenters.PARTICIPANTS},
    )
    def get(self, request, pollId):
        poll = _poll(request, pollId)
        answers = selectors.participants_with_votes(poll, offset=0, limit=None, emails=True)
        return Response({"data": presenters.participants(poll.id, answers)})
