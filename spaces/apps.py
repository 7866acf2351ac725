from django.apps import AppConfig


class SpacesConfig(AppConfig):
    name = "spaces"
    verbose_name = "Spaces, members and API keys"

    def ready(self):
        from core import versions
        from spaces.models import ApiKey, Space, Subscription, User

        # What an API key's lookup reads (spaces.keycache); a user's sign-in alone changes none of it.
        def keys(instance) -> tuple[str]:
            return (versions.KEYS,)

        for model in (ApiKey, Space, Subscription):
            versions.bump_on_save(model, keys)
        versions.bump_on_save(User, keys, unless_only=frozenset({"last_login"}))
