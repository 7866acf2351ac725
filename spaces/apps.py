from django.apps import AppConfig


class SpacesConfig(AppConfig):
    name = "spaces"
    verbose_name = "Spaces, members and API keys"
