"""Functions that change polls. Keyword-only, transactional; views, the back office and
`manage.py` commands call these and nothing else.

- `creation`: a new poll from typed arguments (`create_poll`), or a copy of one (`duplicate_poll`).
- `lifecycle`: close, reopen, schedule, cancel, delete and restore, the auto-close sweep and
  the purge, and what they share (the locked row, one event per change).
- `editing`: details, settings and options of an existing poll.
- `responses`: participants and their votes.
- `tallies`: the votes per option and type, kept with the votes (`count_votes`), and their repair.
- `comments`: comments on the invite page.
- `notices`: what the organizer is e-mailed about (answers, changed answers, comments).
"""

from polls.services.comments import add_comment, delete_comment
from polls.services.creation import create_poll, duplicate_poll
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
from polls.services.notices import NOTIFY_EVERY, polls_to_notify, set_notifications, take_activity
from polls.services.responses import (
    VOTE_TYPES,
    check_accepts_responses,
    clean_response,
    create_response,
    delete_response,
    update_response,
)
from polls.services.tallies import recount_tallies

__all__ = [
    "AUTO_CLOSE_GRACE", "NOTIFY_EVERY", "polls_to_notify", "set_notifications", "take_activity", "DETAILS", "OPTION_FIELDS", "VOTE_TYPES", "add_comment", "cancel_poll", "check_accepts_responses",
    "clean_conferencing", "clean_details", "clean_options", "clean_response", "close_past_polls", "close_poll",
    "create_poll", "create_response", "delete_comment", "delete_poll", "duplicate_poll", "delete_response", "options_past_at",
    "purge_deleted_polls", "recount_tallies", "reopen_poll", "restore_poll", "schedule_poll", "update_poll",
    "update_response",
]
