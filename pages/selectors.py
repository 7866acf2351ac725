"""Reads of the pages' own data: whose answer an edit token opens."""

import re

from pages.models import EditToken
from pages.services import token_hash
from polls.models import Participant, Poll

_TOKEN = re.compile(r"[A-Za-z0-9_-]{32}")


def token_participant(poll: Poll, token: str | None) -> Participant | None:
    """The participant of `poll` whose edit link holds `token` (with their votes), or None.
    The token is looked up by its hash: nothing is compared character by character."""
    if not token or not _TOKEN.fullmatch(token):
        return None
    found = (
        EditToken.objects.filter(token_hash=token_hash(token), participant__poll=poll)
        .select_related("participant")
        .prefetch_related("participant__votes")
        .first()
    )
    return found.participant if found else None
