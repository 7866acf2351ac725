from django.apps import AppConfig


class SpacesConfig(AppConfig):
    name = "spaces"
    verbose_name = "Spaces, members and API keys"

    def ready(self):
        from core import versions
        from spaces.models import ApiKey, Space, Subscription, User

        # What an API key's lookup reads (spaces.keycache); a user's sign-in alone changes none of it.
        versions.bump_on_save(Space, lambda space: (versions.space(space.pk),))
        for model in (ApiKey, Subscription):
            versions.bump_on_save(model, lambda row: (versions.space(row.space_id),))
        versions.bump_on_save(User, lambda user: (versions.user(user.pk),), unless_only=frozenset({"last_login"}))
