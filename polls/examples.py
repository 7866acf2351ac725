"""Example responses of `/v1/polls`, shown in the OpenAPI document and the `/docs` reference.

Tests validate each against its response schema, so an example cannot drift from the shape."""

from core.api.schema import response_example as example

POLL_ID = "2DQR5TX9xMv5"
OPTION_IDS = ("1ruvy3z8jkzex3jzhlxijgc7", "edufxliahk73qdruiaeobu25")

POLL = {
    "id": POLL_ID,
    "title": "Kick-off call",
    "description": "Agenda: scope, milestones, owners.",
    "location": None,
    "conferencing": {"provider": "none"},
    "timeZone": "Europe/Berlin",
    "status": "open",
    "kind": "time",
    "createdAt": "2030-05-20T08:15:02.469Z",
    "updatedAt": "2030-05-21T10:02:44.120Z",
    "organizer": {"id": "1c0mw2i9mx8tkb9s98sh4afy", "name": "Grace Hopper", "email": "grace@example.com", "image": None},
    "requireEmail": False,
    "hideParticipants": False,
    "hideScores": False,
    "disableComments": True,
    "allowTentativeVotes": True,
    "participantCount": 1,
    "options": [
        {"id": OPTION_IDS[0], "startTime": "2030-06-03T07:00:00.000Z", "duration": 30},
        {"id": OPTION_IDS[1], "startTime": "2030-06-03T08:00:00.000Z", "duration": 30},
    ],
    "adminUrl": f"https://app.example.com/poll/{POLL_ID}",
    "inviteUrl": f"https://app.example.com/invite/{POLL_ID}",
}

DATE_POLL = {
    **POLL,
    "id": "7kQm2ZpW4rTx",
    "title": "Team dinner",
    "description": None,
    "location": "Trattoria Roma",
    "timeZone": None,
    "kind": "date",
    "participantCount": 0,
    "options": [{"id": "0f3kq1m7zt2w9x8c4v6b5n1a", "date": "2030-12-04"}, {"id": "9h2j4k6l8z0x1c3v5b7n9m2q", "date": "2030-12-05"}],
    "adminUrl": "https://app.example.com/poll/7kQm2ZpW4rTx",
    "inviteUrl": "https://app.example.com/invite/7kQm2ZpW4rTx",
}


def _votes(yes: int, if_need_be: int, no: int) -> list[dict]:
    return [{"type": "yes", "count": yes}, {"type": "ifNeedBe", "count": if_need_be}, {"type": "no", "count": no}]


RESULTS = {
    "pollId": POLL_ID,
    "kind": "time",
    "status": "open",
    "participantCount": 1,
    "options": [
        {**POLL["options"][0], "votes": _votes(1, 0, 0), "score": 1001, "isTopChoice": True},
        {**POLL["options"][1], "votes": _votes(0, 1, 0), "score": 1000, "isTopChoice": False},
    ],
    "highScore": 1001,
}

PARTICIPANT = {
    "id": "5hjsrcrqpw46ckbmmon96qpr",
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "createdAt": "2030-05-21T10:02:44.120Z",
    "availability": [
        {"start": "2030-06-03T07:00:00.000Z", "end": "2030-06-03T07:30:00.000Z", "allDay": False, "modifiers": []},
        {"start": "2030-06-03T08:00:00.000Z", "end": "2030-06-03T08:30:00.000Z", "allDay": False, "modifiers": ["ifNeedBe"]},
    ],
}


CREATED = [example("A time poll", {"data": POLL}, 201), example("A date poll", {"data": DATE_POLL}, 201)]
ONE = [example("A time poll", {"data": POLL})]
PAGE = [example("One page", {"data": [POLL, DATE_POLL], "nextCursor": "eyJjIjoiMjAzMC0wNS0yMFQwODoxNTowMi40NjlaIn0"})]
DELETED = [example("Deleted", {"data": {"id": POLL_ID, "deleted": True}})]
RESULTS_EXAMPLES = [example("One participant", {"data": RESULTS})]
PARTICIPANTS = [example("One participant", {"data": [PARTICIPANT]})]
ONE_PARTICIPANT = [example("A participant", {"data": PARTICIPANT})]
