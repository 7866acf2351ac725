from django.db import models
from django.utils import timezone

from polls.models import Participant, Poll
from spaces.models import User


class EditToken(models.Model):
    """The private edit link of a participant who answered on the invite page: only the
    SHA-256 of the token is kept; the token itself is in the link and the browser's cookie."""

    participant = models.OneToOneField(Participant, primary_key=True, on_delete=models.CASCADE, related_name="+")
    token_hash = models.CharField(max_length=64, unique=True)

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
