"""The poll back office: read, search and filter polls of every space; close, reopen,
schedule, cancel, delete and restore them; edit details, options and settings; add, edit and
remove responses with their votes.

Every change goes through `polls.services`, the functions `manage.py polls` calls, so each
records the same event. Forms check their input with the services' own `clean_*` rules
while they validate and never write; the save is the service call (core.backoffice), so
that a refusal shows as a form error and nothing is saved.
"""

from polls.admin import participant_admin, poll_admin  # noqa: F401  (they register the models)
