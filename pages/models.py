from django.db import models
from django.utils import timezone

from polls.models import Participant, Poll
from spaces.models import User


class EditToken(models.Model):
    """The private edit link of a participant who answered on the invite page: only the
    SHA-256 of the token is kept; the token itself is in the link and the browser's cookie."""

    participant = models.OneToOneField(Participant, primary_key=True, on_delete=models.CASCADE, related_name="+")
    token_hash = models.CharField(max_length=64, unique=True)
    language = models.CharField(max_length=16, blank=True, help_text="The invite page's when they last answered: "
                                "the decision e-mails' language.")

    def __str__(self):
        return f"Edit link of {self.participant_id}"


class SignInLink(models.Model):
    """A one-time sign-in link e-mailed to a poll's organizer: only the SHA-256 of its token
    is kept; it works once, until `expires_at`."""

    token_hash = models.CharField(max_length=64, primary_key=True)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    poll = models.ForeignKey(Poll, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"Sign-in link of {self.user_id} for {self.poll_id}"


class Mail(models.Model):
    """An e-mail waiting to be sent, or sent: the pages' outbox (pages/outbox.py). Written in
    the transaction of what it tells, sent by the `pages.send-mail` job, retried until sent
    or given up (logged either way)."""

    to = models.EmailField(max_length=254)
    subject = models.CharField(max_length=255)
    text = models.TextField()
    html = models.TextField()
    headers = models.JSONField(default=dict, blank=True)
    calendar = models.TextField(blank=True, help_text="An iCalendar invitation sent with the e-mail.")
    poll_id = models.CharField(max_length=12, blank=True)  # for the logs; the mail outlives a purged poll
    created_at = models.DateTimeField(default=timezone.now)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    given_up_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["next_attempt_at"], name="mail_due",
                                condition=models.Q(sent_at__isnull=True, given_up_at__isnull=True))]

    def __str__(self):
        return f"{self.subject} to {self.to}"


class Invitation(models.Model):
    """The calendar invitation of a poll's decision, e-mailed to its participants: one event
    per poll (its UID), each sending (invitation, update, cancellation) with a higher
    `sequence`; `invited` are the addresses the last invitation went to."""

    poll = models.OneToOneField(Poll, primary_key=True, on_delete=models.CASCADE, related_name="+")
    sequence = models.PositiveIntegerField(default=0)
    invited = models.JSONField(default=list, blank=True)
    canceled = models.BooleanField(default=False)

    def __str__(self):
        return f"Invitation of {self.poll_id} (sequence {self.sequence})"


class OrganizerLanguage(models.Model):
    """The language of the organizer page a poll was last signed into or run on: the
    organizer's e-mails about answers and comments are written in it."""

    poll = models.OneToOneField(Poll, primary_key=True, on_delete=models.CASCADE, related_name="+")
    language = models.CharField(max_length=16)

    def __str__(self):
        return f"{self.language} for {self.poll_id}"
