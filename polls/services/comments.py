"""Comments on a poll: left on the invite page while the poll is open and its
`disableComments` is false, checked by the same content moderation as a poll's texts."""

from django.db import transaction
from django.utils import timezone

from core.errors import ServiceError
from core.formats import text_problem
from polls.models import Activity, Comment, Poll
from polls.moderation import flagged_fields
from polls.rules import COMMENT_MAX_LENGTH, InappropriateContent, max_length
from polls.services.lifecycle import locked_poll
from polls.services.notices import note_activity

COMMENT_NAME_MAX_LENGTH = max_length(Comment, "name")


@transaction.atomic
def add_comment(*, poll: Poll, name: str, text: str) -> Comment:
    """A new comment (no webhook event: comments are not part of the API). Refused when
    comments are off, the poll is not open, or moderation flags the name or the text."""
    poll = locked_poll(poll)
    if poll.disable_comments:
        raise ServiceError(f"poll {poll.pk} does not accept comments")
    if poll.status != Poll.Status.OPEN:
        raise ServiceError(f"poll {poll.pk} is {poll.status}: only an open poll accepts comments")
    name, text = (name or "").strip(), (text or "").strip()
    problems = []
    if not name or len(name) > COMMENT_NAME_MAX_LENGTH:
        problems.append(f"name: 1-{COMMENT_NAME_MAX_LENGTH} characters required")
    elif text_problem(name):
        problems.append(f"name: {text_problem(name)}")
    if not text or len(text) > COMMENT_MAX_LENGTH:
        problems.append(f"text: 1-{COMMENT_MAX_LENGTH} characters required")
    elif text_problem(text, multiline=True):
        problems.append(f"text: {text_problem(text, multiline=True)}")
    if problems:
        raise ServiceError("; ".join(problems))
    flagged = flagged_fields({"name": name, "text": text})
    if flagged:
        raise InappropriateContent("; ".join(f"{field}: flagged by content moderation" for field in flagged))
    comment = Comment.objects.create(poll=poll, name=name, text=text, created_at=timezone.now())
    note_activity(poll, Activity.Kind.COMMENTED, name, comment.created_at)
    return comment


@transaction.atomic
def delete_comment(*, comment: Comment) -> None:
    """Remove a comment (the organizer's moderation)."""
    Comment.objects.filter(pk=comment.pk).delete()
