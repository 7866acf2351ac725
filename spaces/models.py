from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from core.formats import EMAIL_MAX_LENGTH
from core.ids import random_id


class User(models.Model):
    """A person of the app: space owner, member, poll organizer."""

    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    name = models.CharField(max_length=255)
    email = models.EmailField(max_length=EMAIL_MAX_LENGTH)
    image = models.CharField(
        max_length=500, blank=True, null=True, help_text="Path of the avatar on CDN_URL, or empty."
    )
    is_banned = models.BooleanField(default=False, help_text="Banned users' API keys stop working.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(Lower("email"), name="user_email_ci_unique")]
        ordering = ["email"]
        # "App users" in the back office, apart from the staff logins ("Users" of Django's
        # own authentication app).
        verbose_name = "app user"

    def __str__(self):
        return f"{self.name} <{self.email}>"


class Space(models.Model):
    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    name = models.CharField(max_length=255)
    owner = models.ForeignKey(User, on_delete=models.PROTECT, related_name="owned_spaces")
    members = models.ManyToManyField(User, through="Membership", related_name="spaces")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return f"{self.name} ({self.id})"

    @property
    def is_pro(self) -> bool:
        subscription = getattr(self, "subscription", None)
        return bool(subscription and subscription.is_active)


class Membership(models.Model):
    # No index of its own: membership_unique leads with it.
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="memberships", db_index=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint("space", "user", name="membership_unique")]

    def __str__(self):
        return f"{self.user} in {self.space}"


class Subscription(models.Model):
    """The space's Pro subscription; no row, or an inactive one, means no API access."""

    space = models.OneToOneField(Space, on_delete=models.CASCADE, related_name="subscription")
    is_active = models.BooleanField(default=True, help_text="Pro is active; the API answers.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"Pro for {self.space} ({'active' if self.is_active else 'inactive'})"


class ApiKey(models.Model):
    """An API key `sk_<prefix>_<secret>`; only the prefix and a salted hash are stored."""

    MAX_ACTIVE_PER_SPACE = 10

    id = models.CharField(primary_key=True, max_length=30, default=random_id, editable=False)
    # No index of its own: apikey_space_revoked leads with it.
    space = models.ForeignKey(Space, on_delete=models.CASCADE, related_name="api_keys", db_index=False)
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=8, unique=True, editable=False)
    salt = models.CharField(max_length=32, editable=False)
    hash = models.CharField(max_length=64, editable=False)
    created_by = models.ForeignKey(User, on_delete=models.PROTECT, related_name="api_keys")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        indexes = [models.Index(fields=["space", "revoked_at"], name="apikey_space_revoked")]
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self):
        return f"sk_{self.prefix}_… ({self.name or 'unnamed'})"

    def is_active_at(self, now) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)
