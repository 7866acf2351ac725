"""Functions that change polls. Keyword-only, transactional; views, the back office and
`manage.py` commands call these and nothing else.

- `creation`: a new poll from typed arguments (`create_poll`).
- `lifecycle`: close, reopen, schedule, cancel, delete and restore, the auto-close sweep and
  the purge, and what they share (the locked row, one event per change).
- `editing`: details, settings and options of an existing poll.
- `responses`: participants and their votes.
"""

from polls.services.creation import create_poll
from polls.services.editing import DETAILS, OPTION_FIELDS, clean_conferencing, clean_details, clean_options, update_poll
from polls.services.lifecycle import (
    AUTO_CLOSE_GRACE,
    cancel_poll,
    close_past_polls,
    close_poll,
    delete_poll,
    options_past_at,
    purge_deleted_polls,
    reopen_poll,
    restore_poll,
    schedule_poll,
)
from polls.services.responses import (
    VOTE_TYPES,
    check_accepts_responses,
    clean_response,
    create_response,
    delete_response,
    update_response,
)

__all__ = [
    "AUTO_CLOSE_GRACE", "DETAILS", "OPTION_FIELDS", "VOTE_TYPES", "cancel_poll", "check_accepts_responses",
    "clean_conferencing", "clean_details", "clean_options", "clean_response", "close_past_polls", "close_poll",
    "create_poll", "create_response", "delete_poll", "delete_response", "options_past_at", "purge_deleted_polls",
    "reopen_poll", "restore_poll", "schedule_poll", "update_poll", "update_response",
]
