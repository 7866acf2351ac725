"""What a participant does on the invite page (answer, change and remove their answer), and
an organizer's sign-in links.

The answers go through the polls services the back office and `manage.py` use, so each
sends the same `poll.participant.*` event; here only the private edit link is added."""

import hashlib
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone, translation

from pages.models import EditToken, OrganizerLanguage, SignInLink
from polls import services as poll_services
from polls.models import Participant, Poll
from spaces.models import Membership, User

TOKEN_BYTES = 24  # 32 URL-safe characters


def page_language() -> str:
    """The language the page speaks in this request (the pages' middleware activated it)."""
    return translation.get_language() or ""


def remember_organizer_language(poll: Poll) -> None:
    """The organizer's e-mails about `poll` in the language of its page, as used now."""
    OrganizerLanguage.objects.update_or_create(poll=poll, defaults={"language": page_language()})


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def answer(*, poll: Poll, name: str, email: str | None, votes: dict) -> tuple[Participant, str]:
    """A new participant with their votes (`poll.participant.created`) and the token of
    their edit link (returned once; only its hash is kept). The page's language is kept for
    the e-mails the participant gets later (the decision)."""
    participant = poll_services.create_response(poll=poll, name=name, email=email, votes=votes)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    EditToken.objects.create(participant=participant, token_hash=token_hash(token), language=page_language())
    return participant, token


LINKS_PER_REQUEST = 5  # "send me my link": the newest answers of one address, at most


def new_edit_links(*, poll: Poll, email: str) -> list[tuple[Participant, str]]:
    """A new edit link for each answer of `poll` given with `email` (the newest
    LINKS_PER_REQUEST): the old links stop working. Empty when the address gave no answer
    (the caller answers alike either way)."""
    found = list(Participant.objects.filter(poll=poll, email__iexact=(email or "").strip())
                 .order_by("-created_at")[:LINKS_PER_REQUEST])
    links = []
    for participant in found:
        token = secrets.token_urlsafe(TOKEN_BYTES)
        EditToken.objects.update_or_create(participant=participant,
                                           defaults={"token_hash": token_hash(token), "language": page_language()})
        links.append((participant, token))
    return links


def change_answer(*, participant: Participant, name: str, email: str | None, votes: dict) -> Participant:
    """`poll.participant.updated` when anything changed; only while the poll is open. An
    empty `email` keeps the address (participants never see it again). The page's language
    is kept, as `answer` keeps it."""
    with transaction.atomic():
        changed = poll_services.update_response(participant=participant, name=name, email=email or None, votes=votes,
                                                open_only=True)
        EditToken.objects.filter(participant=participant).exclude(language=page_language()).update(
            language=page_language())
    return changed


def remove_answer(*, participant: Participant) -> None:
    """`poll.participant.deleted`; only while the poll is open."""
    poll_services.delete_response(participant=participant, open_only=True)


# --- Organizers' sign-in links -------------------------------------------------------------

SIGN_IN_VALID = timedelta(minutes=15)


def may_manage(user: User | None, poll: Poll) -> bool:
    """Members of the space a poll belongs to manage it (its organizer always is one); a
    banned user manages nothing."""
    return (user is not None and not user.is_banned
            and Membership.objects.filter(space_id=poll.space_id, user=user).exists())


def request_sign_in(*, poll: Poll, email: str) -> tuple[User, str] | None:
    """(user, token) of a new sign-in link when `email` belongs to someone who manages the
    poll; None otherwise (the caller answers alike either way)."""
    user = User.objects.filter(email__iexact=(email or "").strip()).first()
    if not may_manage(user, poll):
        return None
    token = secrets.token_urlsafe(TOKEN_BYTES)
    now = timezone.now()
    SignInLink.objects.create(token_hash=token_hash(token), user=user, poll=poll, created_at=now,
                              expires_at=now + SIGN_IN_VALID)
    return user, token


def _live_link(poll: Poll, token: str):
    return SignInLink.objects.filter(token_hash=token_hash(token or ""), poll=poll, used_at__isnull=True,
                                     expires_at__gt=timezone.now())


def sign_in_link_valid(*, poll: Poll, token: str) -> bool:
    return _live_link(poll, token).exists()


@transaction.atomic
def use_sign_in(*, poll: Poll, token: str) -> User | None:
    """The user a live link signs in, the link used up at once (a second use finds
    nothing); None for a used, expired or unknown link, or a user who no longer manages
    the poll."""
    link = _live_link(poll, token).select_for_update().select_related("user").first()
    if link is None:
        return None
    SignInLink.objects.filter(pk=link.pk).update(used_at=timezone.now())
    return link.user if may_manage(link.user, poll) else None


def purge_sign_in_links() -> int:
    """Forget links that expired more than a day ago (used or not)."""
    deleted, _ = SignInLink.objects.filter(expires_at__lt=timezone.now() - timedelta(days=1)).delete()
    return deleted
